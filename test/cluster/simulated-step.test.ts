/**
 * The simulated step's figures: Megatron-LM's FLOP count (num_floating_point_operations,
 * megatron/training/training.py:802) worked by hand from the GPT's dimensions, and the step,
 * TFLOP/s and MFU from ranks' finish times.
 */
import { describe, expect, it } from 'vitest';
import { gptModel, type GptOptions } from '../../bench/models/gpt-graph.js';
import { megatronFlopsPerStep, peakFlopsPerSec, simulatedStep } from '../../src/cluster/simulated-step.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { analyseModel, planOf } from '../../src/pipeline.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const gpt: GptOptions = { layers: 2, hidden: 64, heads: 4, seq: 16, batch: 2, vocab: 96 };

function gptPlan(globalBatch: number) {
  const file = join(mkdtempSync(join(tmpdir(), 'modtrans-flops-')), 'gpt.onnx');
  writeFileSync(file, gptModel(gpt));
  const analysed = analyseModel(file, {}, {}, { vectorOps: true });
  return planOf(analysed, { world: { tp: 2, dp: 1, pp: 1 }, batch: { globalBatch, microBatch: 2, microBatches: globalBatch / 2 }, sequenceParallel: false, zero: 0, dtype: 'bf16', dpBucketMiB: 25 });
}

/** Megatron-LM's dense MHA formula, term by term (training.py:1065-1067, 1141-1170, 1255-1309): no gated MLP, ffn = 4h, no MTP. */
function megatronFormula(batch: number, o: GptOptions): number {
  const { hidden: h, layers: L, seq: s, vocab: V } = o;
  const ffn = 4 * h;
  const tokens = batch * s;
  const selfAttn = 3 * 2 * (h * (h + h + h) + h * h); // qkv + out projections (kv_channels x heads = h)
  const core = ((3 * 2 * h) / 2) * 2; // causal half, QK^T and (QK^T)V
  const mlp = 3 * 2 * h * (ffn * 2);
  // Over args.padded_vocab_size (training.py:1302): V padded to a multiple of 128 x T (T = 2 here: 96 -> 256).
  const logits = 3 * 2 * h * Math.ceil(V / 256) * 256;
  return tokens * (mlp * L + selfAttn * L + logits) + batch * s * s * core * L;
}

describe("Megatron-LM's FLOPs of a step", () => {
  it('equal the formula for a GPT, one micro-batch and four', () => {
    expect(megatronFlopsPerStep(gptPlan(2))).toBe(megatronFormula(2, gpt));
    expect(megatronFlopsPerStep(gptPlan(8))).toBe(megatronFormula(8, gpt));
  });

  it('TFLOP/s per device and MFU from the last rank to finish', async () => {
    const plan = gptPlan(2);
    const profile = await loadHardwareProfile('tpu-v4');
    const finished = [
      { rank: 0, finishedCycles: 1000, exposedCommCycles: 100 },
      { rank: 1, finishedCycles: 2000, exposedCommCycles: 300 },
    ];
    const step = simulatedStep(plan, profile, finished, 0.25);
    const perDevice = megatronFormula(2, gpt) / 2 / 2000e-9;
    expect(step.step_ns).toBe(2000);
    expect(step.exposed_comm_ns).toBe(300);
    expect(step.tflops_per_device).toBeCloseTo(perDevice / 1e12, 9);
    // tpu-v4 profile: 4 arrays of 128 x 128 at 1050 MHz, 2 FLOP per multiply-add.
    expect(peakFlopsPerSec(profile)).toBe(2 * 128 * 128 * 4 * 1050e6);
    expect(step.mfu).toBeCloseTo(perDevice / peakFlopsPerSec(profile), 12);
    expect(step.bubble).toBe(0.25);
    expect(step.ranks).toEqual([{ rank: 0, finished_ns: 1000, exposed_comm_ns: 100 }, { rank: 1, finished_ns: 2000, exposed_comm_ns: 300 }]);
  });
});

describe("Megatron-LM's FLOPs of a mixture of experts", () => {
  it('count each token through its top-k experts (num_experts_routed_to), whether the graph runs every expert on every token (dense form) or on its routed share (index form)', async () => {
    const { mixtralModel, MIXTRAL_FORMS } = await import('../helpers/arch/mixtral.js');
    const o = { layers: 2, hidden: 64, heads: 8, kvHeads: 2, ffn: 96, seq: 16, batch: 2, vocab: 100, experts: 4, topK: 2 };
    const { hidden: h, layers: L, seq: s, batch: b, vocab: V, ffn: f, experts: E, topK: k, kvHeads, heads } = o;
    const d = h / heads;
    const tokens = b * s;
    // Per token and block: Q and O (h x h), K and V (h x kv x d), the router (h x E), k SwiGLU experts (3 x h x ffn); the LM head.
    const perToken = L * (2 * h * h + 2 * h * kvHeads * d + h * E + k * 3 * h * f) + h * Math.ceil(V / 128) * 128; // padded vocabulary at T = 1
    // The attention core, causal half: QK^T and AV, s x s x h each per sample.
    const expected = 3 * 2 * (tokens * perToken + (L * b * s * s * 2 * h) / 2);
    for (const [form, dispatch] of MIXTRAL_FORMS) {
      const file = join(mkdtempSync(join(tmpdir(), 'modtrans-flops-moe-')), 'moe.onnx');
      writeFileSync(file, mixtralModel({ ...o, ...dispatch }).bytes);
      const plan = planOf(analyseModel(file, {}, {}, { vectorOps: true }), { world: { tp: 1, dp: 1, pp: 1 }, batch: { globalBatch: b, microBatch: b, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'bf16' });
      expect(megatronFlopsPerStep(plan), form).toBe(expected);
      // --moe-topk 1: each token through one expert, as the plan runs it.
      const top1 = planOf(analyseModel(file, {}, {}, { vectorOps: true }), { world: { tp: 1, dp: 1, pp: 1 }, batch: { globalBatch: b, microBatch: b, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'bf16', moe: { topK: 1 } });
      expect(megatronFlopsPerStep(top1), `${form}, top-1`).toBe(expected - 3 * 2 * tokens * L * (k - 1) * 3 * h * f);
    }
  });
});
