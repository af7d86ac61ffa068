/**
 * Weights are what flows into a GEMM's weight operand: initializers reached through Cast, QDQ,
 * Transpose and view chains. Expected parameters are the source initializers' dims; bytes follow
 * the file's dtype (weightBytes) and the training dtype (collectives).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../../src/cost/ideal.js';
import type { HardwareProfile } from '../../src/cost/types.js';
import { ownParameters, uniqueParameterCount } from '../../src/layers/params.js';
import { analyseModel, describeUnlowered, workloadOf } from '../../src/pipeline.js';
import { buildModel, FLOAT, INT64, type GraphSpec, type TensorSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const INT8 = 3;
const FLOAT16 = 10;
const dir = mkdtempSync(join(tmpdir(), 'modtrans-weights-'));
let counter = 0;
function analyse(g: GraphSpec, opset = 13) {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, opset));
  return analyseModel(path);
}
const w = (name: string, dims: number[], dtype = FLOAT): TensorSpec => ({ name, dtype, dims, external: { location: 'missing.bin' } });
const ints = (name: string, values: number[]): TensorSpec => ({ name, dtype: INT64, dims: [values.length], values });
const x = (dims: number[]) => ({ name: 'x', dtype: FLOAT, dims });
const out = { name: 'y', dtype: FLOAT, dims: [] };
const numel = (dims: number[]): number => dims.reduce((a, b) => a * b, 1);

const profile: HardwareProfile = {
  name: 'unit', source: 'test', arrayRows: 8, arrayCols: 8, arrays: 1, dataflow: 'ws', ifmapSramBytes: 1 << 20,
  filterSramBytes: 1 << 20, ofmapSramBytes: 1 << 20, bandwidthMode: 'calc', dramBandwidthWordsPerCycle: 16, clockMHz: 1000, elementBytes: 1,
};
const dataParallel = (dtype: 'fp32' | 'bf16' | 'int8') => ({ parallelism: 'DATA', npus: 2, mpGroup: 1, dtype, params: 'all' }) as const;

describe('weight operands traced to initializers', () => {
  it('MatMul(x, Cast(W_fp16)): the fp16 initializer is the weight; collectives follow --dtype', () => {
    const dims = [64, 32];
    const analysed = analyse({
      inputs: [x([4, 64])], outputs: [out], initializers: [w('fc.weight', dims, FLOAT16)],
      nodes: [
        { op: 'Cast', inputs: ['fc.weight'], outputs: ['wf'], attrs: { to: FLOAT } },
        { op: 'MatMul', inputs: ['x', 'wf'], outputs: ['y'] },
      ],
    });
    const [l] = analysed.layers;
    expect([l?.kind, l?.weightTensors, l?.weightParams, l?.weightBytes]).toEqual(['gemm', ['fc.weight'], numel(dims), 2 * numel(dims)]);
    expect(l?.gemm.fwd).toEqual({ m: 4, n: 32, k: 64 });
    expect(l?.name).toBe('fc');
    for (const [dtype, bytes] of [['fp32', 4], ['bf16', 2], ['int8', 1]] as const) {
      const wl = workloadOf(analysed, idealCostModel(profile), dataParallel(dtype));
      expect(wl.layers[0]?.wgComm).toMatchObject({ type: 'ALLREDUCE', bytes: numel(dims) * bytes });
    }
  });

  it('QDQ: MatMul(x, DequantizeLinear(W_int8, per-channel scale, zero point)) counts the quantized weight only', () => {
    const dims = [64, 32];
    const { layers, warnings } = analyse({
      inputs: [x([2, 8, 64])], outputs: [out],
      initializers: [w('q.weight', dims, INT8), w('q.scale', [32]), w('q.zero', [32], INT8)],
      nodes: [
        { op: 'DequantizeLinear', inputs: ['q.weight', 'q.scale', 'q.zero'], outputs: ['wd'], attrs: { axis: 1 } },
        { op: 'MatMul', inputs: ['x', 'wd'], outputs: ['y'] },
      ],
    });
    expect(layers).toHaveLength(1);
    expect([layers[0]?.kind, layers[0]?.weightTensors, layers[0]?.weightParams, layers[0]?.weightBytes]).toEqual(['gemm', ['q.weight'], numel(dims), numel(dims)]);
    expect(layers[0]?.gemm.fwd).toEqual({ m: 16, n: 32, k: 64 });
    expect(warnings).toEqual([]);
  });

  it('MatMul(x, Transpose(W)) and Gemm(x, Transpose(W)) are weight GEMMs', () => {
    const dims = [32, 64]; // [out, in], as PyTorch stores Linear weights
    const { layers } = analyse({
      inputs: [x([4, 64])], outputs: [out, { name: 'z', dtype: FLOAT, dims: [] }],
      initializers: [w('a.weight', dims), w('b.weight', dims)],
      nodes: [
        { op: 'Transpose', inputs: ['a.weight'], outputs: ['at'], attrs: { perm: [1, 0] } },
        { op: 'MatMul', inputs: ['x', 'at'], outputs: ['y'] },
        { op: 'Transpose', inputs: ['b.weight'], outputs: ['bt'], attrs: { perm: [1, 0] } },
        { op: 'Gemm', inputs: ['x', 'bt'], outputs: ['z'] },
      ],
    });
    expect(layers.map((l) => [l.kind, l.weightTensors, l.weightParams])).toEqual([['gemm', ['a.weight'], 2048], ['gemm', ['b.weight'], 2048]]);
    expect(layers[0]?.gemm.fwd).toEqual({ m: 4, n: 32, k: 64 });
  });

  it('Reshape / Identity / Concat / Unsqueeze / Squeeze chains: every source initializer, shape inputs left out', () => {
    const { layers } = analyse({
      inputs: [x([4, 64])], outputs: [out, { name: 'z', dtype: FLOAT, dims: [] }],
      initializers: [w('flat', [2048]), ints('shape', [64, 32]), w('wa', [64, 16]), w('wb', [64, 16]), ints('axes', [0])],
      nodes: [
        { op: 'Reshape', inputs: ['flat', 'shape'], outputs: ['r'] },
        { op: 'Identity', inputs: ['r'], outputs: ['ri'] },
        { op: 'MatMul', inputs: ['x', 'ri'], outputs: ['y'] },
        { op: 'Concat', inputs: ['wa', 'wb'], outputs: ['cat'], attrs: { axis: 1 } },
        { op: 'Unsqueeze', inputs: ['cat', 'axes'], outputs: ['u'] },
        { op: 'Squeeze', inputs: ['u', 'axes'], outputs: ['s'] },
        { op: 'MatMul', inputs: ['x', 's'], outputs: ['z'] },
      ],
    });
    expect(layers.map((l) => [l.kind, l.weightTensors, l.weightParams])).toEqual([
      ['gemm', ['flat'], 2048],
      ['gemm', ['wa', 'wb'], 2 * 64 * 16],
    ]);
    expect([...(layers[1]?.tensorParams ?? [])]).toEqual([['wa', 1024], ['wb', 1024]]);
  });

  it('a shared weight counts once per model and is all-reduced once, by its first holder', () => {
    const dims = [100, 32];
    const analysed = analyse({
      inputs: [{ name: 'ids', dtype: INT64, dims: [4] }, x([4, 32])], outputs: [out, { name: 'z', dtype: FLOAT, dims: [] }, { name: 'v', dtype: FLOAT, dims: [] }],
      initializers: [w('wte.weight', dims), w('proj', [32, 32])],
      nodes: [
        { op: 'Gather', inputs: ['wte.weight', 'ids'], outputs: ['emb'] },
        { op: 'Transpose', inputs: ['wte.weight'], outputs: ['wt'], attrs: { perm: [1, 0] } },
        { op: 'MatMul', inputs: ['emb', 'wt'], outputs: ['y'] }, // tied output projection
        { op: 'MatMul', inputs: ['x', 'proj'], outputs: ['z'] },
        { op: 'MatMul', inputs: ['emb', 'proj'], outputs: ['v'] }, // the same weight in a second GEMM
      ],
    });
    const { layers } = analysed;
    expect(layers.map((l) => [l.kind, l.weightTensors, l.weightParams])).toEqual([
      ['embedding', ['wte.weight'], 3200], ['gemm', ['wte.weight'], 3200], ['gemm', ['proj'], 1024], ['gemm', ['proj'], 1024],
    ]);
    expect(uniqueParameterCount(layers)).toBe(numel(dims) + 32 * 32);
    expect(ownParameters(layers).map((p) => p.weightParams)).toEqual([3200, 0, 1024, 0]);
    const wl = workloadOf(analysed, idealCostModel(profile), dataParallel('fp32'));
    expect(wl.layers.map((l) => l.wgComm.bytes)).toEqual([3200 * 4, 0, 1024 * 4, 0]);
    expect(wl.layers.map((l) => l.wgComm.type)).toEqual(['ALLREDUCE', 'NONE', 'ALLREDUCE', 'NONE']);
    expect(wl.layers[1]?.updateCycles).toBe(0);
  });

  it('a weight computed through a non-preserving op is a warning, not a silent 0-parameter layer', () => {
    const analysed = analyse({
      inputs: [x([4, 64]), { name: 'x2', dtype: FLOAT, dims: [64, 32] }], outputs: [out, { name: 'z', dtype: FLOAT, dims: [] }],
      initializers: [w('fc.weight', [64, 32]), { name: 'two', dtype: FLOAT, dims: [], values: [2] }],
      nodes: [
        { op: 'Mul', inputs: ['fc.weight', 'two'], outputs: ['scaled'], name: 'scale_w' },
        { op: 'MatMul', inputs: ['x', 'scaled'], outputs: ['y'], name: 'fc_mm' },
        { op: 'MatMul', inputs: ['x', 'x2'], outputs: ['z'], name: 'act_mm' }, // two activations: no warning
      ],
    });
    expect(analysed.warnings).toHaveLength(1);
    expect(analysed.warnings?.[0]).toMatch(/node 'fc_mm' \(MatMul\): operand 'scaled'/);
    expect(describeUnlowered(analysed)).toContain(present(analysed.warnings?.[0], 'warning 0'));
    expect(analysed.layers[0]?.weightParams).toBe(0);
  });
});
