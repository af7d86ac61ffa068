/**
 * Activations per transformer layer against the closed forms of Korthikanti et al. 2022,
 * "Reducing Activation Recomputation in Large Transformer Models" (section 4, 16-bit activations,
 * 1-byte dropout masks), for GPT-3's block: h 12288, a 96, s 2048, b 1, t 8.
 */
import { describe, expect, it } from 'vitest';
import { activationBytesPerMicroBatch, transformerBlocks } from '../../src/memory/activations.js';
import { analyseModel, planOf } from '../../src/pipeline.js';
import type { ParallelPlan } from '../../src/plan/types.js';
import { writeGptModel, type GptOptions } from '../../bench/models/gpt-graph.js';

const h = 12288;
const a = 96;
const s = 2048;
const b = 1;
const t = 8;
const sbh = s * b * h;
const attentionTerm = (5 * a * s) / h; // 5as/h: softmax output (2), its dropout mask (1), dropout output (2), per sbh
/**
 * GPT-3's block as Megatron-LM runs it: pre-norm, no linear biases, the 1/sqrt(d) scale fused into
 * the softmax, dropout; its GELU one op (opset 20), or as PyTorch exports it at opset 13 to 19
 * (`x * 0.5 * (1 + erf(x / sqrt 2))`, five element-wise ops), which is still one activation that
 * keeps its input.
 */
for (const mlp of ['gelu', 'gelu-erf'] as const) {
const block: GptOptions = { layers: 1, hidden: h, heads: a, seq: s, batch: b, vocab: 0, blockOnly: true, mlp, linearBias: false, scaledScores: false, dropout: true };

describe(`activations of a GPT-3 block (${mlp === 'gelu' ? 'one Gelu op' : 'GELU exported with Erf'}) vs Korthikanti et al. 2022`, () => {
  const analysed = analyseModel(writeGptModel(block), {}, {}, { vectorOps: true });
  const plan = (tp: number, sequenceParallel: boolean): ParallelPlan => planOf(analysed, {
    world: { tp, dp: 1, pp: 1 }, batch: { globalBatch: b, microBatch: b, microBatches: 1 }, sequenceParallel, zero: 0, dtype: 'fp16', dpBucketMiB: 25,
  });
  const perLayer = (p: ParallelPlan, recompute: 'none' | 'selective' | 'full' = 'none'): number => activationBytesPerMicroBatch(p, p.layers, recompute);

  it('finds the tensor-parallel roles the closed forms assume', () => {
    const roles = Object.fromEntries(plan(t, false).layers.map((l) => [l.layer.node || l.layer.name, l.role]));
    expect(Object.values(roles).filter((r) => r === 'heads')).toHaveLength(2);
    expect(Object.values(roles).filter((r) => r === 'column')).toHaveLength(4); // Q, K, V, fc
    expect(Object.values(roles).filter((r) => r === 'row')).toHaveLength(2); // out-proj, proj
  });

  it('without parallelism: sbh (34 + 5as/h)', () => {
    expect(perLayer(plan(1, false))).toBe(sbh * (34 + attentionTerm));
  });

  it('tensor parallelism: sbh (10 + 24/t + 5as/(ht))', () => {
    expect(perLayer(plan(t, false))).toBe(sbh * (10 + 24 / t + attentionTerm / t));
  });

  it('tensor and sequence parallelism: sbh/t (34 + 5as/h)', () => {
    expect(perLayer(plan(t, true))).toBe((sbh / t) * (34 + attentionTerm));
  });

  it('selective recomputation drops the 5as/h term', () => {
    expect(perLayer(plan(1, false), 'selective')).toBe(sbh * 34);
    expect(perLayer(plan(t, false), 'selective')).toBe(sbh * (10 + 24 / t));
    expect(perLayer(plan(t, true), 'selective')).toBe((sbh / t) * 34);
  });

  it('without Dropout nodes: the masks (as^2 b, 2 sbh) and the dropped probabilities (2 as^2 b) are not kept', () => {
    const bare = analyseModel(writeGptModel({ ...block, dropout: false }), {}, {}, { vectorOps: true });
    const p = planOf(bare, { world: { tp: t, dp: 1, pp: 1 }, batch: { globalBatch: b, microBatch: b, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'fp16', dpBucketMiB: 25 });
    // AV reads the softmax output itself, kept once: sbh (8 + 24/t + 2as/(ht)).
    expect(perLayer(p)).toBe(sbh * (8 + 24 / t + (2 * a * s) / (h * t)));
    // With sequence parallelism every term is split: sbh/t (32 + 2as/h), 8 sbh here (as/h = 16, t = 8).
    const sp = planOf(bare, { world: { tp: t, dp: 1, pp: 1 }, batch: { globalBatch: b, microBatch: b, microBatches: 1 }, sequenceParallel: true, zero: 0, dtype: 'fp16', dpBucketMiB: 25 });
    expect(perLayer(sp)).toBe((sbh / t) * (32 + (2 * a * s) / h));
    expect(perLayer(sp)).toBe(8 * sbh);
  });

  it('full recomputation keeps only the layer input, 2sbh (its sequence shard under sp)', () => {
    const one = plan(1, false);
    expect(transformerBlocks(one, one.layers)).toEqual([{ start: 0, end: one.layers.length - 1 }]);
    expect(perLayer(plan(1, false), 'full')).toBe(2 * sbh);
    expect(perLayer(plan(t, false), 'full')).toBe(2 * sbh);
    expect(perLayer(plan(t, true), 'full')).toBe((2 * sbh) / t);
  });
});
}

describe('transformer blocks for full recomputation', () => {
  it('finds one block per layer of gpt2_small_like, with or without vector layers', async () => {
    const { modelPath } = await import('../helpers/models.js');
    for (const vectorOps of [true, false]) {
      const analysed = analyseModel(modelPath('gpt2_small_like'), {}, {}, { vectorOps });
      const p = planOf(analysed, { world: { tp: 1, dp: 1, pp: 1 }, batch: { globalBatch: 1, microBatch: 1, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25 });
      const blocks = transformerBlocks(p, p.layers);
      expect(blocks).toHaveLength(12); // the file's blocks.0 ... blocks.11
      // Each block holds its 6 weight GEMMs (Q, K, V, o, fc, proj) and 2 attention products.
      for (const { start, end } of blocks) {
        const kinds = p.layers.slice(start, end + 1).map((l) => l.layer.kind);
        expect(kinds.filter((k) => k === 'gemm')).toHaveLength(6);
        expect(kinds.filter((k) => k === 'activation-gemm')).toHaveLength(2);
      }
    }
  });
});
