/** Per-layer MACs and parameter counts against the exporter's ground truth (shapes.json). */
import { describe, expect, it } from 'vitest';
import { analyseModel } from '../../src/pipeline.js';
import { MODELS, modelPath, staticBindings, truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

describe.each(MODELS)('%s', (name) => {
  const t = truth(name);
  const { layers } = analyseModel(modelPath(name), { dims: staticBindings(name) });
  const byNode = new Map(layers.map((l) => [l.node, l]));

  it('has one layer per Conv/Gemm/MatMul/LSTM node with the exact MACs', () => {
    const gemmNodes = t.nodes.filter((n) => ['Conv', 'Gemm', 'MatMul', 'LSTM'].includes(n.op_type));
    expect(gemmNodes.length).toBeGreaterThan(0);
    const got = gemmNodes.map((n) => [n.name, byNode.get(n.name)?.macs]);
    const want = gemmNodes.map((n) => [n.name, typeof n.macs === 'number' ? n.macs : n.macs_runtime]);
    expect(got).toEqual(want);
  });

  it('attributes every Conv/Gemm/MatMul/LSTM/embedding initializer exactly once', () => {
    const attributed = layers.flatMap((l) => [...l.weightTensors, ...l.biasTensors]);
    expect(new Set(attributed).size).toBe(attributed.length);
    for (const tensor of attributed) expect(t.initializers[tensor]).toBeDefined();
    const params = layers.reduce((a, l) => a + l.weightParams + l.biasParams, 0);
    expect(params).toBe(attributed.reduce((a, n) => a + present(t.initializers[n], n).numel, 0));
  });

  it('gives unique, whitespace-free names', () => {
    const names = layers.map((l) => l.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_.-]+$/);
  });

  it('derives the backward GEMMs by transposition', () => {
    for (const l of layers.filter((x) => x.kind !== 'embedding')) {
      const { fwd, ig, wg } = l.gemm;
      expect(ig).toEqual({ m: fwd.m, n: fwd.k, k: fwd.n });
      expect(wg).toEqual({ m: fwd.k, n: fwd.n, k: fwd.m });
    }
  });
});

describe('specific lowerings', () => {
  it('resnet50: all initializers are Conv/Gemm weights; conv1 is 12544 x 64 x 147', () => {
    const { layers } = analyseModel(modelPath('resnet50'));
    const conv1 = present(layers.find((l) => l.node === '/conv1/Conv'), '/conv1/Conv');
    expect(conv1.gemm.fwd).toEqual({ m: 12544, n: 64, k: 147 });
    expect(conv1.name).toBe('conv1');
    expect(layers.reduce((a, l) => a + l.weightParams, 0)).toBe(25_502_912); // ASTRA-sim's ResNet-50 total
  });

  it('gpt2: attention products are weightless activation GEMMs batched over heads', () => {
    const { layers } = analyseModel(modelPath('gpt2_small_like'));
    const qk = present(layers.find((l) => l.node === '/blocks.0/attn/MatMul'), '/blocks.0/attn/MatMul');
    expect(qk.kind).toBe('activation-gemm');
    expect(qk.gemm.fwd).toEqual({ m: 128, n: 128, k: 64 });
    expect(qk.gemmCount).toBe(12);
    expect(qk.weightParams + qk.biasParams).toBe(0);
    const q = present(layers.find((l) => l.node === '/blocks.0/attn/q/MatMul'), '/blocks.0/attn/q/MatMul');
    expect(q.biasTensors).toEqual(['blocks.0.attn.q.bias']); // folded from the following Add
    const wte = present(layers.find((l) => l.name === 'wte'), 'wte');
    expect(wte.kind).toBe('embedding');
    expect(wte.weightParams).toBe(50257 * 768);
    expect(wte.macs).toBe(0);
  });

  it('lstm_lm: gate GEMMs over the sequence', () => {
    const { layers } = analyseModel(modelPath('lstm_lm'));
    const lstm = present(layers.find((l) => l.op === 'LSTM'), 'the LSTM layer');
    expect(lstm.gemm.fwd).toEqual({ m: 1, n: 1024, k: 2048 });
    expect(lstm.gemmCount).toBe(35 * 4);
  });

  it('squeezenet: grouped-free fire modules keep the expand branches apart', () => {
    const { layers } = analyseModel(modelPath('squeezenet1_0'));
    expect(layers.map((l) => l.name).slice(1, 4)).toEqual(['features.3.squeeze', 'features.3.expand1x1', 'features.3.expand3x3']);
  });
});
