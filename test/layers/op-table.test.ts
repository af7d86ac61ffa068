/**
 * The op table (src/shape/op-table.ts, rows in src/shape/rules/): one row per op, and what the
 * pipeline derives from it. Expected classes and input positions come from the ONNX operator
 * specs (input lists) and onnxruntime's contrib-op specs, not from the code.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gemmCarrier } from '../../src/layers/gemm-ops.js';
import { LOWERINGS, unloweredComputeNodes } from '../../src/layers/lower.js';
import { readModel } from '../../src/onnx/reader.js';
import { analyseModel } from '../../src/pipeline.js';
import type { ShapeRule } from '../../src/shape/context.js';
import { inferShapes } from '../../src/shape/infer.js';
import { opRows, type OpRow } from '../../src/shape/op-table.js';
import { matmul } from '../../src/shape/rules/math.js';
import { OP_TABLE } from '../../src/shape/rules/index.js';
import { buildModel, FLOAT, type GraphSpec, type TensorSpec } from '../helpers/onnx-builder.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-optable-'));
let counter = 0;
function modelFile(g: GraphSpec, opset: number, domains: Record<string, number> = {}): string {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, opset, domains));
  return path;
}
const w = (name: string, dims: number[]): TensorSpec => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });
const value = (name: string) => ({ name, dtype: FLOAT, dims: [] });
const row = (key: string): OpRow | undefined => OP_TABLE.get(key);

describe('op table rows', () => {
  it('every row has a shape rule', () => {
    expect(OP_TABLE.size).toBeGreaterThan(200);
    const withoutRule = [...OP_TABLE].filter(([, r]) => typeof r.shape !== 'function').map(([op]) => op);
    expect(withoutRule).toEqual([]);
  });

  it('every GEMM-bearing row names a lowering that layers/lower.ts implements, and every lowering is used', () => {
    const lowerings: Record<string, unknown> = LOWERINGS;
    const missing = [...OP_TABLE].filter(([, r]) => r.gemm === true && typeof lowerings[r.lowering] !== 'function').map(([op]) => op);
    expect(missing).toEqual([]);
    const named = new Set([...OP_TABLE.values()].flatMap((r) => (r.lowering === undefined ? [] : [r.lowering])));
    expect(Object.keys(LOWERINGS).filter((name) => !named.has(name as never))).toEqual([]);
  });

  it('the only GEMM-bearing op declared as not lowered is DeformConv (a new one is a deliberate edit here)', () => {
    expect([...OP_TABLE].filter(([, r]) => r.gemm === 'not-lowered').map(([op]) => op)).toEqual(['DeformConv']);
  });

  it('a row lowered by name is never also vector work (the lowering would shadow it)', () => {
    expect([...OP_TABLE].filter(([, r]) => r.lowering !== undefined && r.vectorClass !== undefined).map(([op]) => op)).toEqual([]);
  });

  it('rejects at compile time a GEMM-bearing row without a lowering, an unknown lowering, and a lowered vector row', () => {
    const noLowering: OpRow[] = [
      // @ts-expect-error a GEMM-bearing row must name its lowering
      { shape: matmul, gemm: true, weightInputs: [0, 1] },
      // @ts-expect-error the name must be a LoweringName (implemented in layers/lower.ts)
      { shape: matmul, gemm: true, lowering: 'deform-conv', weightInputs: [1] },
      // @ts-expect-error vector work and a named lowering exclude each other
      { shape: matmul, vectorClass: 'elementwise', lowering: 'matmul' },
    ];
    expect(noLowering).toHaveLength(3);
  });

  it('an op registered twice is an error, not a silent override', () => {
    const rule: ShapeRule = matmul;
    expect(() => opRows({ MatMul: { shape: rule } }, { MatMul: { shape: rule, gemm: true, lowering: 'matmul', weightInputs: [0, 1] } })).toThrow(/'MatMul' is registered twice/);
  });
});

describe('what the rows say, against the operator specs', () => {
  it('vector classes: element-wise, transcendental, GELU, softmax, norms, pools and reductions; shape ops are no work', () => {
    const classes = Object.fromEntries(['Relu', 'Add', 'Where', 'Erf', 'Sigmoid', 'Swish', 'Gelu', 'com.microsoft::FastGelu', 'Softmax', 'LogSoftmax',
      'LayerNormalization', 'BatchNormalization', 'RMSNormalization', 'GlobalAveragePool', 'MaxPool', 'ReduceMean', 'ArgMax',
      'Reshape', 'Transpose', 'Shape', 'Equal', 'MatMul', 'Gather'].map((op) => [op, row(op)?.vectorClass]));
    expect(classes).toEqual({
      Relu: 'elementwise', Add: 'elementwise', Where: 'elementwise', Erf: 'transcendental', Sigmoid: 'transcendental', Swish: 'transcendental',
      Gelu: 'gelu', 'com.microsoft::FastGelu': 'gelu', Softmax: 'softmax', LogSoftmax: 'softmax',
      LayerNormalization: 'layernorm', BatchNormalization: 'layernorm', RMSNormalization: 'layernorm',
      GlobalAveragePool: 'pool', MaxPool: 'pool', ReduceMean: 'reduce', ArgMax: 'reduce',
      Reshape: undefined, Transpose: undefined, Shape: undefined, Equal: undefined, MatMul: undefined, Gather: undefined,
    });
  });

  it('trained parameter inputs: LayerNorm (X, Scale, B), BatchNorm (X, scale, B, mean, var), RMSNorm (X, scale), PRelu (X, slope), SkipLayerNorm (input, skip, gamma, beta, bias)', () => {
    const params = (op: string) => row(op)?.parameterInputs;
    expect(params('LayerNormalization')).toEqual({ scale: [1], shift: [2] });
    expect(params('BatchNormalization')).toEqual({ scale: [1], shift: [2] });
    expect(params('RMSNormalization')).toEqual({ scale: [1], shift: [] });
    expect(params('PRelu')).toEqual({ scale: [1], shift: [] });
    expect(params('com.microsoft::SkipLayerNormalization')).toEqual({ scale: [2], shift: [3, 4] });
    expect(params('Softmax')).toBeUndefined();
  });

  it('weight inputs of GEMM ops: Conv W 1, QLinearConv w 3, QLinearMatMul a 0 and b 3, Gemm A and B, LSTM W 1 and R 2', () => {
    const weights = (op: string) => row(op)?.weightInputs;
    expect(weights('Conv')).toEqual([1]);
    expect(weights('QLinearConv')).toEqual([3]);
    expect(weights('QLinearMatMul')).toEqual([0, 3]);
    expect(weights('Gemm')).toEqual([0, 1]);
    expect(weights('LSTM')).toEqual([1, 2]);
    expect(weights('Attention')).toEqual([]); // Q, K, V are activations
  });

  it('weight views: ops that keep one element per parameter of their data input (all inputs for Concat); nothing else, arithmetic and slicing included', () => {
    const views = Object.fromEntries([...OP_TABLE].filter(([, r]) => r.weightView !== undefined).map(([op, r]) => [op, r.weightView]));
    expect(views).toEqual({
      Identity: 'first', Cast: 'first', CastLike: 'first', Reshape: 'first', Flatten: 'first', Transpose: 'first',
      Squeeze: 'first', Unsqueeze: 'first', QuantizeLinear: 'first', DequantizeLinear: 'first', Concat: 'all',
    });
  });
});

describe('GEMM-bearing ops', () => {
  it('the name heuristic for ops outside the table agrees with the table on every op it holds', () => {
    const disagree = [...OP_TABLE]
      .filter(([op, r]) => (gemmCarrier({ domain: 'com.example', opType: op.split('::').at(-1) ?? op }) !== undefined) !== (r.gemm !== undefined))
      .map(([op]) => op);
    expect(disagree).toEqual([]);
  });

  it('an op outside the table (a custom domain the caller gave a shape rule) is reported as unlowered compute by its name', () => {
    const path = modelFile({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [4, 8] }],
      outputs: [value('y'), value('z')],
      initializers: [w('fc.weight', [8, 8])],
      nodes: [
        { op: 'BlockMatMul', domain: 'com.example', inputs: ['x', 'fc.weight'], outputs: ['y'] },
        { op: 'Scale', domain: 'com.example', inputs: ['y'], outputs: ['z'] },
      ],
    }, 17, { 'com.example': 1 });
    const same: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: ctx.shape(0) }];
    const inferred = inferShapes(readModel(path), { rules: new Map([['com.example::BlockMatMul', same], ['com.example::Scale', same]]) });
    expect(unloweredComputeNodes(inferred).map((n) => n.opType)).toEqual(['BlockMatMul']);
  });

  it("onnxruntime's FusedConv (Conv + activation) infers and lowers like Conv", () => {
    // x [2, 3, 8, 8], W [4, 3, 3, 3], pads 1: y [2, 4, 8, 8]; GEMM (N x out positions) x (Cin x kernel) . (Cin x kernel) x Cout.
    const { layers } = analyseModel(modelFile({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 3, 8, 8] }],
      outputs: [value('y')],
      initializers: [w('conv.weight', [4, 3, 3, 3]), w('conv.bias', [4])],
      nodes: [{ op: 'FusedConv', domain: 'com.microsoft', inputs: ['x', 'conv.weight', 'conv.bias'], outputs: ['y'], attrs: { pads: [1, 1, 1, 1], activation: 'Relu' } }],
    }, 17, { 'com.microsoft': 1 }));
    expect(layers.map((l) => [l.kind, l.outputShape, l.gemm.fwd, l.macs, l.weightParams, l.biasParams])).toEqual([
      ['gemm', [2, 4, 8, 8], { m: 2 * 64, n: 4, k: 27 }, 2 * 64 * 4 * 27, 4 * 27, 4],
    ]);
  });
});

describe('vector rows', () => {
  it('SimplifiedLayerNormalization in the default domain (as onnxruntime registers it) is a layernorm vector layer holding its scale', () => {
    const { layers } = analyseModel(modelFile({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 8, 32] }],
      outputs: [value('y')],
      initializers: [w('s', [32])],
      nodes: [{ op: 'SimplifiedLayerNormalization', inputs: ['x', 's'], outputs: ['y'], attrs: { axis: -1 } }],
    }, 17), {}, {}, { vectorOps: true });
    const n = 2 * 8 * 32;
    expect(layers.map((l) => [l.kind, l.vector?.opClass, l.vector?.elements, l.vector?.bytesIn, l.weightTensors, l.biasTensors])).toEqual([
      ['vector', 'layernorm', n, 4 * n + 4 * 32, ['s'], []],
    ]);
  });
});
