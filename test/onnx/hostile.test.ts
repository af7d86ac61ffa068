/**
 * Hostile inputs built on purpose: each gives a one-line InputError naming the file and, where it
 * applies, the node or tensor; the wire layer reads 64-bit lengths and never over-allocates.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs/minimal.js';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { readModel } from '../../src/onnx/reader.js';
import { readTensorValues } from '../../src/onnx/tensor-data.js';
import { BufferWire } from '../../src/onnx/wire.js';
import { analyseModel } from '../../src/pipeline.js';
import { buildModel, FLOAT, INT64, type GraphSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-hostile-'));
const out = [{ name: 'y', dtype: FLOAT, dims: [] as number[] }];
const x48 = [{ name: 'x', dtype: FLOAT, dims: [4, 8] }];
const W = { name: 'w', dtype: FLOAT, dims: [8, 8], external: { location: 'w.bin' } };
const matmul = { op: 'MatMul', name: 'mm', inputs: ['x', 'w'], outputs: ['y'] };

function write(name: string, bytes: Uint8Array): string {
  const path = join(dir, `${name}.onnx`);
  writeFileSync(path, bytes);
  return path;
}

function errorOf(path: string): string {
  try {
    analyseModel(path);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    const message = (e as Error).message;
    expect(message).not.toMatch(/\n/);
    expect(message.startsWith(`${path}: `)).toBe(true);
    return message;
  }
  throw new Error(`${path} was accepted`);
}

const graphs: [string, GraphSpec, RegExp][] = [
  ['cycle', { inputs: x48, outputs: out, initializers: [W], nodes: [{ op: 'Add', name: 'add', inputs: ['x', 'z'], outputs: ['a'] }, { op: 'MatMul', name: 'mm', inputs: ['a', 'w'], outputs: ['z'] }, { op: 'Relu', inputs: ['z'], outputs: ['y'] }] }, /cycle through node 'add'/],
  ['two producers', { inputs: x48, outputs: out, initializers: [W], nodes: [matmul, { op: 'Relu', name: 'relu', inputs: ['x'], outputs: ['y'] }] }, /value 'y' has two producers: node 'mm'.*node 'relu'/],
  ['no producer', { inputs: x48, outputs: out, initializers: [W], nodes: [{ ...matmul, inputs: ['q', 'w'] }] }, /node 'mm' \(MatMul\) reads 'q', which no node/],
  ['unknown domain', { inputs: x48, outputs: out, initializers: [W], nodes: [{ ...matmul, domain: 'com.example' }] }, /node 'mm' \(MatMul\): op domain 'com.example'/],
  ['attribute of the wrong type', { inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 3, 8, 8] }], outputs: out, initializers: [{ ...W, dims: [4, 3, 3, 3] }], nodes: [{ op: 'Conv', name: 'conv', inputs: ['x', 'w'], outputs: ['y'], attrs: { kernel_shape: { float: 3 } } }] }, /node 'conv' \(Conv\): attribute 'kernel_shape' must be a list of ints/],
  ['negative initializer dim', { inputs: x48, outputs: out, initializers: [{ ...W, dims: [8, -8] }], nodes: [matmul] }, /tensor 'w': dim -8 is negative/],
  ['initializer beyond 2^53 elements', { inputs: x48, outputs: out, initializers: [{ ...W, dims: [2 ** 30, 2 ** 30] }], nodes: [matmul] }, /tensor 'w': dims \[1073741824, 1073741824\] hold more than 2\^53 elements/],
  ['negative input dim', { inputs: [{ name: 'x', dtype: FLOAT, dims: [-4, 8] }], outputs: out, initializers: [W], nodes: [matmul] }, /value 'x': dim -4 is negative/],
  ['input beyond 2^53 elements', { inputs: [{ name: 'x', dtype: FLOAT, dims: [2 ** 27, 2 ** 27, 8] }], outputs: out, initializers: [W], nodes: [matmul] }, /value 'x': dims .* more than 2\^53/],
  ['negative Reshape target', { inputs: x48, outputs: out, initializers: [W, { name: 's', dtype: INT64, dims: [2], values: [-5, 8] }], nodes: [{ op: 'Reshape', name: 'rs', inputs: ['x', 's'], outputs: ['r'] }, { ...matmul, inputs: ['r', 'w'] }] }, /node 'rs' \(Reshape\)/],
];

describe('hostile graphs: one-line InputError naming file and node or tensor', () => {
  for (const [name, graph, expected] of graphs) {
    it(name, () => expect(errorOf(write(name.replace(/\W/g, '-'), buildModel(graph)))).toMatch(expected));
  }

  it('a file that is not ONNX', () => {
    expect(errorOf(write('png', Buffer.from('\x89PNG\r\n\x1a\n0000000000000000', 'latin1')))).toMatch(/not a valid ONNX file|not an ONNX model/);
  });

  it('wrong wire types are skipped or refused, never misread', () => {
    // ModelProto.graph (field 7) as a varint, then nothing: no graph.
    expect(errorOf(write('wiretype', Uint8Array.from([0x08, 0x07, 0x38, 0x05])))).toMatch(/no graph found/);
  });

  it('absurd lengths are refused before anything is allocated', () => {
    // graph field with a length of 2^50 bytes in a 12-byte file.
    const w = protobuf.Writer.create().uint32(8).int64(7).uint32(58);
    const bytes = Buffer.concat([w.finish(), Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02])]);
    for (const streaming of [false, true]) {
      const path = write(`absurd-${streaming}`, bytes);
      expect(() => readModel(path, { streaming })).toThrow(/runs past the end of its message/);
    }
  });
});

describe('wire', () => {
  it('reads field lengths of 4 GiB and more exactly (64-bit varints)', () => {
    const length = 2 ** 32 + 5;
    const prefix = protobuf.Writer.create().uint64(length).finish();
    // Truncated to 32 bits it would read as 5 and "fit"; exactly read, it runs past the end.
    const wire = new BufferWire(Buffer.concat([prefix, Buffer.alloc(8)]), 0);
    expect(() => wire.lengthEnd()).toThrow(new RegExp(`field length ${length} runs past`));
  });

  it('refuses lengths of 2^53 and more', () => {
    const w = new BufferWire(Uint8Array.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]), 0);
    expect(() => w.lengthEnd()).toThrow(/beyond 2\^53/);
  });

  it('reads only the bytes the dims need from an oversized raw_data', () => {
    const graph: GraphSpec = { inputs: x48, outputs: out, initializers: [{ name: 's', dtype: INT64, dims: [1], values: [3, 4, 5, 6] }], nodes: [] };
    const path = write('oversized-raw', buildModel(graph));
    const { model, spans } = readModel(path, { streaming: true });
    expect(readTensorValues(present(model.graph.initializers[0], 'the initializer'), spans)).toEqual([3]);
  });
});
