/** Lowerings the shipped models do not exercise, on small generated models with known answers. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyseModel, describeUnlowered } from '../../src/pipeline.js';
import { buildModel, FLOAT, type GraphSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-synth-'));
let counter = 0;
function analyse(g: GraphSpec, opset = 13, otherDomains: Record<string, number> = {}) {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, opset, otherDomains));
  return analyseModel(path);
}
const w = (name: string, dims: number[]) => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });

describe('convolutions', () => {
  it('depthwise conv: group GEMMs of K/g x N/g with exact MACs', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 32, 56, 56] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('dw.weight', [32, 1, 3, 3])],
      nodes: [{ op: 'Conv', inputs: ['x', 'dw.weight'], outputs: ['y'], attrs: { group: 32, pads: [1, 1, 1, 1], kernel_shape: [3, 3] } }],
    });
    const l = present(layers[0], 'layer 0');
    expect(l.outputShape).toEqual([2, 32, 56, 56]);
    expect(l.gemm.fwd).toEqual({ m: 2 * 56 * 56, n: 1, k: 9 });
    expect(l.gemmCount).toBe(32);
    expect(l.macs).toBe(2 * 32 * 56 * 56 * 9);
    expect(l.name).toBe('dw');
  });

  it('grouped, strided, dilated conv with SAME_UPPER padding', () => {
    const { layers, inferred } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 8, 15, 15] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('c.weight', [16, 4, 3, 3]), w('c.bias', [16])],
      nodes: [{ op: 'Conv', inputs: ['x', 'c.weight', 'c.bias'], outputs: ['y'], attrs: { group: 2, strides: [2, 2], dilations: [2, 2], auto_pad: 'SAME_UPPER' } }],
    });
    expect(inferred.values.get('y')?.shape).toEqual([1, 16, 8, 8]);
    expect(layers[0]?.gemm.fwd).toEqual({ m: 64, n: 8, k: 36 });
    expect(layers[0]?.macs).toBe(64 * 16 * 36);
    expect([layers[0]?.weightParams, layers[0]?.biasParams]).toEqual([576, 16]);
  });

  it('ConvTranspose: output size and scatter GEMM', () => {
    const { layers, inferred } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 16, 7, 7] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('up.weight', [16, 8, 4, 4])],
      nodes: [{ op: 'ConvTranspose', inputs: ['x', 'up.weight'], outputs: ['y'], attrs: { strides: [2, 2], pads: [1, 1, 1, 1] } }],
    });
    expect(inferred.values.get('y')?.shape).toEqual([1, 8, 14, 14]); // 2*(7-1) + 4 - 2
    expect(layers[0]?.gemm.fwd).toEqual({ m: 49, n: 128, k: 16 });
    expect(layers[0]?.macs).toBe(49 * 16 * 8 * 16);
  });
});

describe('matrix products', () => {
  it('Gemm with transA and transB', () => {
    const { layers } = analyse({
      inputs: [{ name: 'a', dtype: FLOAT, dims: [64, 10] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('fc.weight', [32, 64])],
      nodes: [{ op: 'Gemm', inputs: ['a', 'fc.weight'], outputs: ['y'], attrs: { transA: 1, transB: 1 } }],
    });
    expect(layers[0]?.outputShape).toEqual([10, 32]);
    expect(layers[0]?.gemm.fwd).toEqual({ m: 10, n: 32, k: 64 });
  });

  it('MatMul with the weight on the left streams the activation columns', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [4, 20, 50] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('proj', [30, 20])],
      nodes: [{ op: 'MatMul', inputs: ['proj', 'x'], outputs: ['y'] }],
    });
    expect(layers[0]?.outputShape).toEqual([4, 30, 50]);
    expect(layers[0]?.gemm.fwd).toEqual({ m: 200, n: 30, k: 20 });
    expect(layers[0]?.macs).toBe(4 * 30 * 50 * 20);
  });

  it('GRU (bidirectional): 3 gate GEMMs per step and direction', () => {
    const { layers, inferred } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [10, 3, 16] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('W', [2, 96, 16]), w('R', [2, 96, 32]), w('B', [2, 192])],
      nodes: [{ op: 'GRU', inputs: ['x', 'W', 'R', 'B'], outputs: ['y', 'h'], attrs: { hidden_size: 32, direction: 'bidirectional' } }],
    });
    expect(inferred.values.get('y')?.shape).toEqual([10, 2, 3, 32]);
    expect(inferred.values.get('h')?.shape).toEqual([2, 3, 32]);
    const l = present(layers[0], 'layer 0');
    expect(l.gemm.fwd).toEqual({ m: 3, n: 32, k: 48 });
    expect(l.gemmCount).toBe(10 * 2 * 3);
    expect([l.weightParams, l.biasParams]).toEqual([2 * 96 * 48, 384]);
  });
});

describe('unbound symbols', () => {
  it('name the symbol and the flag that binds it', () => {
    expect(() => analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: ['batch', 64] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('fc.weight', [64, 10])],
      nodes: [{ op: 'MatMul', inputs: ['x', 'fc.weight'], outputs: ['y'] }],
    })).toThrow(/unbound dim 'batch'; bind --dim batch=N \(input 'x', dim 0\)/);
  });
});

describe('more GEMM-like ops', () => {
  const int64 = (name: string, values: number[]) => ({ name, dtype: 7, dims: [values.length], values });

  it('Einsum: a shared weight folds the batch into rows; two activations are a batched GEMM', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 16, 64] }, { name: 'k', dtype: FLOAT, dims: [2, 4, 16, 32] }],
      outputs: [{ name: 's', dtype: FLOAT, dims: [] }],
      initializers: [w('proj.weight', [64, 128]), int64('heads', [2, 16, 4, 32])],
      nodes: [
        { op: 'Einsum', inputs: ['x', 'proj.weight'], outputs: ['y'], attrs: { equation: 'bsd,de->bse' } },
        { op: 'Reshape', inputs: ['y', 'heads'], outputs: ['r'] },
        { op: 'Transpose', inputs: ['r'], outputs: ['q'], attrs: { perm: [0, 2, 1, 3] } },
        { op: 'Einsum', inputs: ['q', 'k'], outputs: ['s'], attrs: { equation: 'bhqd,bhkd->bhqk' } },
      ],
    });
    expect(layers.map((l) => [l.kind, l.gemm.fwd, l.gemmCount, l.macs])).toEqual([
      ['gemm', { m: 32, n: 128, k: 64 }, 1, 32 * 128 * 64],
      ['activation-gemm', { m: 16, n: 16, k: 32 }, 8, 8 * 16 * 16 * 32],
    ]);
  });

  it('quantized products: MatMulInteger and QLinearConv use their own operand positions', () => {
    const i8 = (name: string, dims: number[]) => ({ name, dtype: 3, dims, external: { location: 'missing.bin' } });
    const scalar = (name: string, dtype: number) => ({ name, dtype, dims: [], external: { location: 'missing.bin' } });
    const { layers } = analyse({
      inputs: [{ name: 'a', dtype: 3, dims: [4, 8] }, { name: 'x', dtype: 3, dims: [1, 3, 8, 8] }],
      outputs: [{ name: 'y', dtype: 6, dims: [] }, { name: 'z', dtype: 3, dims: [] }],
      initializers: [i8('fc.weight', [8, 16]), i8('conv.weight', [6, 3, 3, 3]), scalar('s', FLOAT), scalar('zp', 3)],
      nodes: [
        { op: 'MatMulInteger', inputs: ['a', 'fc.weight'], outputs: ['y'] },
        { op: 'QLinearConv', inputs: ['x', 's', 'zp', 'conv.weight', 's', 'zp', 's', 'zp'], outputs: ['z'] },
      ],
    }, 13);
    expect(layers.map((l) => [l.name, l.gemm.fwd, l.weightBytes])).toEqual([
      ['fc', { m: 4, n: 16, k: 8 }, 128],
      ['conv', { m: 36, n: 6, k: 27 }, 162],
    ]);
  });

  it('com.microsoft Attention: QKV projection with weights, then weightless scores and context per head', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 8, 64] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('attn.qkv.weight', [64, 192]), w('attn.qkv.bias', [192])],
      nodes: [{ name: '/enc/attn/Attention', op: 'Attention', domain: 'com.microsoft', inputs: ['x', 'attn.qkv.weight', 'attn.qkv.bias'], outputs: ['y'], attrs: { num_heads: 4 } }],
    }, 13, { 'com.microsoft': 1 });
    expect(layers.map((l) => [l.name, l.kind, l.gemm.fwd, l.gemmCount, l.weightParams + l.biasParams])).toEqual([
      ['attn.qkv', 'gemm', { m: 16, n: 192, k: 64 }, 1, 64 * 192 + 192],
      ['enc.attn.scores', 'activation-gemm', { m: 8, n: 8, k: 16 }, 8, 0],
      ['enc.attn.context', 'activation-gemm', { m: 8, n: 16, k: 8 }, 8, 0],
    ]);
    expect(layers[1]?.outputShape).toEqual([2, 4, 8, 8]);
  });

  it('names GEMM-bearing ops it cannot lower, so missing compute never goes unnoticed', () => {
    const analysed = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 4, 8, 8] }, { name: 'offset', dtype: FLOAT, dims: [1, 18, 6, 6] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('dc.weight', [8, 4, 3, 3])],
      nodes: [{ op: 'DeformConv', inputs: ['x', 'dc.weight', 'offset'], outputs: ['y'] }],
    }, 19);
    expect(analysed.layers).toEqual([]);
    expect(describeUnlowered(analysed)).toEqual(['1 DeformConv node not lowered to GEMM layers: their compute is missing from the workload']);
  });
});

describe('ONNX Attention (opset 23)', () => {
  it('grouped-query attention: products per query head over past + new keys', () => {
    const { layers } = analyse({
      inputs: [
        { name: 'q', dtype: FLOAT, dims: [2, 8, 10, 32] }, { name: 'k', dtype: FLOAT, dims: [2, 2, 10, 32] },
        { name: 'v', dtype: FLOAT, dims: [2, 2, 10, 48] },
      ],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      nodes: [{ name: '/dec/attn/Attention', op: 'Attention', inputs: ['q', 'k', 'v'], outputs: ['y'] }],
    }, 23);
    expect(layers.map((l) => [l.name, l.gemm.fwd, l.gemmCount, l.macs])).toEqual([
      ['dec.attn.scores', { m: 10, n: 10, k: 32 }, 16, 16 * 10 * 10 * 32],
      ['dec.attn.context', { m: 10, n: 48, k: 10 }, 16, 16 * 10 * 48 * 10],
    ]);
  });
});

describe('shape arguments stored as initializers', () => {
  it('Resize takes its scales from a float initializer', () => {
    const { inferred } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 8, 10, 12] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [{ name: 'scales', dtype: FLOAT, dims: [4], values: [1, 1, 2, 2] }, { name: 'roi', dtype: FLOAT, dims: [0], values: [] }],
      nodes: [{ op: 'Resize', inputs: ['x', 'roi', 'scales'], outputs: ['y'], attrs: { mode: 'nearest' } }],
    });
    expect(inferred.values.get('y')?.shape).toEqual([1, 8, 20, 24]);
  });
});
