/**
 * Non-GEMM work as vector layers: which nodes are work, their op class and element counts, and
 * their cycles derived by hand from the documented table (README, "Non-GEMM work"):
 * cycles = max(ceil(elements x ops per element / lanes), ceil(bytes / bytes per cycle)),
 * ops fwd/bwd/wg: elementwise 1/1, transcendental 4/5, GELU 8/12, softmax 5/4, LayerNorm 8/12/2.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../../src/cost/ideal.js';
import type { HardwareProfile } from '../../src/cost/types.js';
import { uniqueParameterCount } from '../../src/layers/params.js';
import { analyseModel, workloadOf } from '../../src/pipeline.js';
import { buildReport } from '../../src/report/layer-report.js';
import { costModelLayers } from '../../src/costed/costed-plan.js';
import { reportToCsv } from '../../src/writers/layer-report.js';
import { buildModel, FLOAT, INT64, type GraphSpec, type TensorSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-vector-'));
let counter = 0;
function analyse(g: GraphSpec, { opset = 20, vectorOps = true, domains = {} as Record<string, number> } = {}) {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, opset, domains));
  return analyseModel(path, {}, {}, { vectorOps });
}
const w = (name: string, dims: number[]): TensorSpec => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });
const scalar = (name: string, value: number): TensorSpec => ({ name, dtype: FLOAT, dims: [], values: [value] });
const ints = (name: string, values: number[]): TensorSpec => ({ name, dtype: INT64, dims: [values.length], values });
const value = (name: string) => ({ name, dtype: FLOAT, dims: [] });

const LANES = 128;
const BYTES_PER_CYCLE = 1536;
const profile: HardwareProfile = {
  name: 'unit', source: 'test', arrayRows: 8, arrayCols: 8, arrays: 1, dataflow: 'ws', ifmapSramBytes: 1 << 20,
  filterSramBytes: 1 << 20, ofmapSramBytes: 1 << 20, bandwidthMode: 'calc', dramBandwidthWordsPerCycle: 16, clockMHz: 1000, elementBytes: 1,
  vectorLanes: LANES, vectorBytesPerCycle: BYTES_PER_CYCLE,
};
const roofline = (elements: number, opsPerElement: number, bytes: number): number =>
  Math.max(Math.ceil((elements * opsPerElement) / LANES), Math.ceil(bytes / BYTES_PER_CYCLE));

// x [2, 16, 64] -> LayerNorm -> Gelu -> MatMul W[64, 64] -> Softmax -> + x (residual).
const E = 2 * 16 * 64;
const B = 4 * E; // fp32 bytes of one activation
const LN_IN = B + 2 * 64 * 4; // the norm reads x, its scale and its shift
const block: GraphSpec = {
  inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 16, 64] }],
  outputs: [value('y'), value('shape_arith'), value('const_only')],
  initializers: [w('ln.weight', [64]), w('ln.bias', [64]), w('fc.weight', [64, 64]), w('c1', [128]), w('c2', [128])],
  nodes: [
    { op: 'LayerNormalization', inputs: ['x', 'ln.weight', 'ln.bias'], outputs: ['ln'], name: '/ln/LayerNormalization', attrs: { axis: -1 } },
    { op: 'Gelu', inputs: ['ln'], outputs: ['g'], name: '/act/Gelu' },
    { op: 'MatMul', inputs: ['g', 'fc.weight'], outputs: ['h'], name: '/fc/MatMul' },
    { op: 'Softmax', inputs: ['h'], outputs: ['s'], name: '/attn/Softmax', attrs: { axis: -1 } },
    { op: 'Add', inputs: ['s', 'x'], outputs: ['y'], name: '/Add' },
    // Not work: shape arithmetic on 3 elements, and an op on constants only.
    { op: 'Shape', inputs: ['x'], outputs: ['shp'] },
    { op: 'Cast', inputs: ['shp'], outputs: ['shpf'], attrs: { to: FLOAT } },
    { op: 'Mul', inputs: ['shpf', 'shpf'], outputs: ['shape_arith'] },
    { op: 'Mul', inputs: ['c1', 'c2'], outputs: ['const_only'] },
  ],
};

describe('vector layers of a small block (LayerNorm, GELU, MatMul, Softmax, residual Add)', () => {
  const analysed = analyse(block);
  const { layers } = analysed;

  it('one layer per op that is work, in graph order, with op class and element count', () => {
    expect(layers.map((l) => [l.kind, l.op, l.vector?.opClass, l.vector?.elements])).toEqual([
      ['vector', 'LayerNormalization', 'layernorm', E],
      ['vector', 'Gelu', 'gelu', E],
      ['gemm', 'MatMul', undefined, undefined],
      ['vector', 'Softmax', 'softmax', E],
      ['vector', 'Add', 'elementwise', E],
    ]);
    expect(layers.map((l) => [l.vector?.bytesIn, l.vector?.bytesOut])).toEqual([[LN_IN, B], [B, B], [undefined, undefined], [B, B], [2 * B, B]]);
  });

  it("LayerNorm's scale and shift are its parameters; the model's parameters count every initializer of a layer once", () => {
    const ln = present(layers[0], 'layer 0');
    expect([ln.weightTensors, ln.biasTensors, ln.weightParams, ln.biasParams, ln.macs]).toEqual([['ln.weight'], ['ln.bias'], 64, 64, 0]);
    expect(uniqueParameterCount(layers)).toBe(64 + 64 + 64 * 64);
  });

  it('fwd / ig / wg cycles follow the roofline of the documented table', () => {
    const wl = workloadOf(analysed, idealCostModel(profile), { parallelism: 'DATA', npus: 1, mpGroup: 1, dtype: 'fp32', params: 'all' });
    const cycles = wl.layers.map((l) => [l.fwdCycles, l.igCycles, l.wgCycles]);
    // fwd bytes = in + out; ig bytes = out + 2 x in; wg bytes (parameters only) = in + out.
    expect(cycles[0]).toEqual([roofline(E, 8, LN_IN + B), roofline(E, 12, B + 2 * LN_IN), roofline(E, 2, LN_IN + B)]);
    expect(cycles[1]).toEqual([roofline(E, 8, 2 * B), roofline(E, 12, 3 * B), 0]);
    expect(cycles[3]).toEqual([roofline(E, 5, 2 * B), roofline(E, 4, 3 * B), 0]);
    expect(cycles[4]).toEqual([roofline(E, 1, 3 * B), roofline(E, 1, 5 * B), 0]);
    // The residual add's input gradient is memory-bound: 5 x 8192 bytes / 1536 > 2048 / 128.
    expect(cycles[4]?.[1]).toBe(Math.ceil((5 * B) / BYTES_PER_CYCLE));
    expect(cycles[0]).toEqual([128, 192, 32]);
  });

  it('DATA on 2 NPUs: each replica runs its own batch (all elements); the norm all-reduces its full (replicated) parameters', () => {
    const wl = workloadOf(analysed, idealCostModel(profile), { parallelism: 'DATA', npus: 2, mpGroup: 1, dtype: 'fp32', params: 'all' });
    expect(wl.layers[0]?.fwdCycles).toBe(roofline(E, 8, LN_IN + B));
    expect(wl.layers[0]?.wgComm).toEqual({ type: 'ALLREDUCE', bytes: 128 * 4, group: 'data' });
    expect(wl.layers.filter((_, i) => layers[i]?.kind === 'vector' && i > 0).map((l) => l.wgComm.type)).toEqual(['NONE', 'NONE', 'NONE']);
    const model = workloadOf(analysed, idealCostModel(profile), { parallelism: 'MODEL', npus: 2, mpGroup: 2, dtype: 'fp32', params: 'all' });
    // No activation collective for vector layers; the GEMM keeps its all-gather.
    expect(model.layers.map((l) => l.fwdComm.type)).toEqual(['NONE', 'NONE', 'ALLGATHER', 'NONE', 'NONE']);
  });

  it('the report lists vector layers with their op class and elements, and cycles matching the workload', () => {
    const report = buildReport('m', costModelLayers(layers, idealCostModel(profile)));
    expect(report.layers[3]?.vector).toEqual({ opClass: 'softmax', elements: E, bytesIn: B, bytesOut: B });
    expect(report.layers[3]?.fwd.cycles).toBe(roofline(E, 5, 2 * B));
    expect(report.totals.params).toBe(64 + 64 + 64 * 64);
  });

  it('--vector-ops off restores the GEMM-only layers and report columns', async () => {
    const off = analyse(block, { vectorOps: false }).layers;
    expect(off.map((l) => l.kind)).toEqual(['gemm']);
    expect(off[0]?.gemm.fwd).toEqual(present(layers[2], 'layer 2').gemm.fwd);
    const header = (csv: string): string[] => present(csv.split('\n')[0], 'CSV header').split(',');
    expect(header(await reportToCsv(buildReport('m', costModelLayers(off, idealCostModel(profile)))))).not.toContain('op_class');
    expect(header(await reportToCsv(buildReport('m', costModelLayers(layers, idealCostModel(profile)))))).toEqual(expect.arrayContaining(['op_class', 'elements']));
    expect(buildReport('m', costModelLayers(off, idealCostModel(profile))).totals.vectorCycles).toBeUndefined();
  });

  it('a profile can override the ops table', () => {
    const wl = workloadOf(analysed, idealCostModel({ ...profile, vectorOpsPerElement: { softmax: { fwd: 10, bwd: 4, wg: 2 } } }), { parallelism: 'DATA', npus: 1, mpGroup: 1, dtype: 'fp32', params: 'all' });
    expect(wl.layers[3]?.fwdCycles).toBe(roofline(E, 10, 2 * B));
  });
});

describe('decomposed norms (as PyTorch exports them at opset < 17)', () => {
  /** x -> [ReduceMean -> Sub ->] Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div [-> Mul gamma -> Add beta]. */
  function norm(centred: boolean, affine: boolean): GraphSpec {
    const d = centred ? 'd' : 'x';
    return {
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 8, 32] }],
      outputs: [value(affine ? 'y' : 'n')],
      initializers: [w('norm.weight', [32]), w('norm.bias', [32]), scalar('two', 2), scalar('eps', 1e-5)],
      nodes: [
        ...(centred ? [
          { op: 'ReduceMean', inputs: ['x'], outputs: ['mean'], attrs: { axes: [-1] } },
          { op: 'Sub', inputs: ['x', 'mean'], outputs: ['d'] },
        ] : []),
        { op: 'Pow', inputs: [d, 'two'], outputs: ['sq'] },
        { op: 'ReduceMean', inputs: ['sq'], outputs: ['var'], attrs: { axes: [-1] } },
        { op: 'Add', inputs: ['var', 'eps'], outputs: ['ve'] },
        { op: 'Sqrt', inputs: ['ve'], outputs: ['std'] },
        { op: 'Div', inputs: [d, 'std'], outputs: ['n'] },
        ...(affine ? [
          { op: 'Mul', inputs: ['n', 'norm.weight'], outputs: ['scaled'] },
          { op: 'Add', inputs: ['scaled', 'norm.bias'], outputs: ['y'] },
        ] : []),
      ],
    };
  }

  it('LayerNorm with scale and shift is one layernorm layer holding both', () => {
    const { layers } = analyse(norm(true, true), { opset: 13 });
    expect(layers.map((l) => [l.op, l.vector?.opClass, l.vector?.elements, l.weightTensors, l.biasTensors])).toEqual([
      ['LayerNormalization', 'layernorm', 2 * 8 * 32, ['norm.weight'], ['norm.bias']],
    ]);
  });

  it('RMSNorm (no centring, no affine) is one layernorm layer without parameters', () => {
    const { layers } = analyse(norm(false, false), { opset: 13 });
    expect(layers.map((l) => [l.op, l.vector?.opClass, l.weightParams, l.vector?.hasParams])).toEqual([['RMSNormalization', 'layernorm', 0, false]]);
  });

  it('a pattern whose intermediate feeds another op stays op by op', () => {
    const g = norm(true, false);
    g.outputs.push(value('var'));
    const { layers } = analyse(g, { opset: 13 });
    expect(layers.map((l) => l.op)).toEqual(['ReduceMean', 'Sub', 'Pow', 'ReduceMean', 'Div']); // var + eps and sqrt are tiny (16 elements)
  });
});

describe('casts', () => {
  it('a cast of an activation is element-wise work; casts of shape values and weights are not', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 16, 64] }],
      outputs: [value('y'), value('shape_f'), value('wf')],
      initializers: [{ name: 'w16', dtype: 10, dims: [64, 64], external: { location: 'missing.bin' } }],
      nodes: [
        { op: 'Cast', inputs: ['x'], outputs: ['y'], attrs: { to: 10 } }, // fp32 -> fp16
        { op: 'Shape', inputs: ['x'], outputs: ['shp'] },
        { op: 'Cast', inputs: ['shp'], outputs: ['shape_f'], attrs: { to: FLOAT } },
        { op: 'Cast', inputs: ['w16'], outputs: ['wf'], attrs: { to: FLOAT } },
      ],
    });
    expect(layers.map((l) => [l.op, l.vector?.opClass, l.vector?.elements, l.vector?.bytesIn, l.vector?.bytesOut])).toEqual([
      ['Cast', 'elementwise', 2048, 4 * 2048, 2 * 2048],
    ]);
  });
});

describe('sizes known only at run time', () => {
  it('an element-wise op on a NonZero-sized tensor is left out instead of failing the model', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [4, 64] }],
      outputs: [value('y'), value('r')],
      initializers: [w('fc.weight', [64, 64])],
      nodes: [
        { op: 'MatMul', inputs: ['x', 'fc.weight'], outputs: ['y'] },
        { op: 'NonZero', inputs: ['y'], outputs: ['nz'] },
        { op: 'Cast', inputs: ['nz'], outputs: ['nzf'], attrs: { to: FLOAT } },
        { op: 'Relu', inputs: ['nzf'], outputs: ['r'] },
      ],
    });
    expect(layers.map((l) => l.kind)).toEqual(['gemm']);
  });
});

describe('onnxruntime fused norms', () => {
  it('SkipLayerNormalization reads input, skip and its parameters, holds gamma (weight) and beta + bias; SimplifiedLayerNormalization holds its scale', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 8, 32] }, { name: 'skip', dtype: FLOAT, dims: [2, 8, 32] }],
      outputs: [value('y'), value('z')],
      initializers: [w('g', [32]), w('b', [32]), w('bias', [32]), w('s', [32])],
      nodes: [
        { op: 'SkipLayerNormalization', domain: 'com.microsoft', inputs: ['x', 'skip', 'g', 'b', 'bias'], outputs: ['y'] },
        { op: 'SimplifiedLayerNormalization', domain: 'com.microsoft', inputs: ['y', 's'], outputs: ['z'], attrs: { axis: -1 } },
      ],
    }, { opset: 17, domains: { 'com.microsoft': 1 } });
    const n = 2 * 8 * 32;
    expect(layers.map((l) => [l.vector?.opClass, l.vector?.elements, l.vector?.bytesIn, l.weightTensors, l.biasTensors])).toEqual([
      ['layernorm', n, 2 * 4 * n + 3 * 4 * 32, ['g'], ['b', 'bias']], // input, skip, gamma, beta, bias
      ['layernorm', n, 4 * n + 4 * 32, ['s'], []],
    ]);
  });
});

describe('pooling and reductions', () => {
  it('MaxPool counts output x window elements; GlobalAveragePool and ReduceSum their input elements', () => {
    const { layers } = analyse({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 8, 16, 16] }],
      outputs: [value('p'), value('gp'), value('r')],
      initializers: [ints('axes', [1])],
      nodes: [
        { op: 'MaxPool', inputs: ['x'], outputs: ['p'], attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } },
        { op: 'GlobalAveragePool', inputs: ['x'], outputs: ['gp'] },
        { op: 'ReduceSum', inputs: ['x', 'axes'], outputs: ['r'] },
      ],
    }, { opset: 13 });
    expect(layers.map((l) => [l.vector?.opClass, l.vector?.elements])).toEqual([['pool', 8 * 8 * 8 * 9], ['pool', 8 * 16 * 16], ['reduce', 8 * 16 * 16]]);
  });
});
