/** The ONNX reader: both access paths agree, weights are never read, external data is checked. */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { readModel } from '../../src/onnx/reader.js';
import { readTensorValues } from '../../src/onnx/tensor-data.js';
import { inferModel } from '../../src/pipeline.js';
import { buildModel, FLOAT, INT64 } from '../helpers/onnx-builder.js';
import { fixturePath, modelPath, truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-reader-'));

describe('squeezenet1_0 with inline weights (5 MB)', () => {
  const path = fixturePath('models/squeezenet1_0.inline.onnx');

  it('gives the same graph in memory and with positional reads, reading under a fifth of the file', () => {
    const memory = readModel(path);
    const streamed = readModel(path, { streaming: true });
    expect(streamed.model.graph.nodes).toEqual(memory.model.graph.nodes);
    expect(streamed.model.graph.initializers).toEqual(memory.model.graph.initializers);
    expect(streamed.stats.bytesRead).toBeLessThan(streamed.stats.fileBytes / 5);
  });

  it('records every initializer with the dims and byte span of ground truth', () => {
    const { model } = readModel(path);
    const t = truth('squeezenet1_0');
    expect(model.graph.initializers).toHaveLength(Object.keys(t.initializers).length);
    for (const init of model.graph.initializers) {
      expect(init.dims).toEqual(t.initializers[init.name]?.dims);
      expect(init.data.kind).toBe('inline');
      if (init.data.kind === 'inline') expect(init.data.byteLength).toBe(t.initializers[init.name]?.bytes);
    }
  });

  it('infers the same shapes as the graph-only copy', () => {
    const inline = inferModel(path).inferred.values;
    const graphOnly = inferModel(modelPath('squeezenet1_0')).inferred.values;
    for (const [name, info] of graphOnly) expect(inline.get(name)?.shape).toEqual(info.shape);
  });
});

describe('external data', () => {
  const graph = (location: string) => ({
    inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 6] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
    initializers: [{ name: 'shape', dtype: INT64, dims: [2], external: { location, offset: 8, length: 16 } }],
    nodes: [{ op: 'Reshape', inputs: ['x', 'shape'], outputs: ['y'] }],
  });

  it('reads a small tensor from the external file, relative to the model', () => {
    const data = Buffer.alloc(24);
    data.writeBigInt64LE(3n, 8);
    data.writeBigInt64LE(4n, 16);
    writeFileSync(join(dir, 'ext.bin'), data);
    writeFileSync(join(dir, 'ext.onnx'), buildModel(graph('ext.bin')));
    expect(inferModel(join(dir, 'ext.onnx')).inferred.values.get('y')?.shape).toEqual([3, 4]);
  });

  it('refuses locations that are absolute or escape the model folder', () => {
    for (const location of ['/etc/passwd', '../outside.bin']) {
      writeFileSync(join(dir, 'bad.onnx'), buildModel(graph(location)));
      const { model, spans } = readModel(join(dir, 'bad.onnx'));
      expect(() => readTensorValues(present(model.graph.initializers[0], 'the initializer'), spans)).toThrow(/absolute|escapes the model's folder/);
    }
  });

  it('checks offset and length against the file', () => {
    writeFileSync(join(dir, 'short.bin'), Buffer.alloc(10));
    writeFileSync(join(dir, 'short.onnx'), buildModel(graph('short.bin')));
    const { model, spans } = readModel(join(dir, 'short.onnx'));
    expect(() => readTensorValues(present(model.graph.initializers[0], 'the initializer'), spans)).toThrow(/beyond the end/);
  });

  it('decodes bfloat16 as the high half of a float32 (ONNX BFLOAT16 = 16)', () => {
    // 0x3f80 = 1.0, 0xc020 = -2.5, 0x7f80 = +Infinity: float32 bit patterns cut to their high 16 bits.
    const data = Buffer.alloc(8 + 6);
    for (const [k, bits] of [0x3f80, 0xc020, 0x7f80].entries()) data.writeUInt16LE(bits, 8 + 2 * k);
    writeFileSync(join(dir, 'bf16.bin'), data);
    const spec = graph('bf16.bin');
    spec.initializers = [{ name: 'shape', dtype: 16, dims: [3], external: { location: 'bf16.bin', offset: 8, length: 6 } }];
    writeFileSync(join(dir, 'bf16.onnx'), buildModel(spec));
    const { model, spans } = readModel(join(dir, 'bf16.onnx'));
    const init = model.graph.initializers[0];
    expect(init).toBeDefined();
    if (init !== undefined) expect(readTensorValues(init, spans)).toEqual([1, -2.5, Infinity]);
  });

  it('a location naming a folder is an InputError, not a read error', () => {
    mkdirSync(join(dir, 'folder.bin'), { recursive: true });
    writeFileSync(join(dir, 'folder.onnx'), buildModel(graph('folder.bin')));
    const { model, spans } = readModel(join(dir, 'folder.onnx'));
    expect(() => readTensorValues(present(model.graph.initializers[0], 'the initializer'), spans)).toThrow(InputError);
    expect(() => readTensorValues(present(model.graph.initializers[0], 'the initializer'), spans)).toThrow(/folder\.bin' is not a regular file/);
  });
});

describe('bad files', () => {
  it('a truncated model is a one-line InputError naming the file', () => {
    const bytes = readFileSync(modelPath('resnet50'));
    const path = join(dir, 'truncated.onnx');
    writeFileSync(path, bytes.subarray(0, 20000));
    expect(() => readModel(path)).toThrow(InputError);
    expect(() => readModel(path)).toThrow(new RegExp(`^${path}: the file looks truncated`));
  });

  it('a text file is not an ONNX model', () => {
    const path = join(dir, 'notes.onnx');
    writeFileSync(path, 'hello, this is not protobuf\n');
    expect(() => readModel(path)).toThrow(InputError);
  });

  it('a missing file names itself', () => {
    expect(() => readModel(join(dir, 'nope.onnx'))).toThrow(/nope\.onnx: cannot read the model file \(no such file\)/);
  });
});
