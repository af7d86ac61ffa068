/**
 * Megatron-LM's vocabulary padding (megatron/training/tokenizer/tokenizer.py,
 * _vocab_size_with_padding): the word embedding's and the LM head's vocabulary rounded up to a
 * multiple of --make-vocab-size-divisible-by (128) x T. GPT-2's 50,257 words are the textbook
 * case: 50,304 at T = 1, 50,432 at 2, 50,688 at 4 (and at 6: 66 x 768), 51,200 at 8 (which 12 heads do not split).
 */
import { describe, expect, it } from 'vitest';
import { analyseModel, planOf } from '../../src/pipeline.js';
import { checkPlanInvariants } from '../../src/plan/invariants.js';
import type { ParallelPlan } from '../../src/plan/types.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { modelPath } from '../helpers/models.js';

const gpt2 = analyseModel(modelPath('gpt2_small_like'));
const V = 50257;
const H = 768;
const PADDED: Record<number, number> = { 1: 50304, 2: 50432, 4: 50688, 6: 50688 };

const planAt = (tp: number, vocabDivisibleBy?: number): ParallelPlan =>
  planOf(gpt2, { world: { tp, dp: 1, pp: 1 }, batch: { globalBatch: 1, microBatch: 1, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'bf16', ...(vocabDivisibleBy === undefined ? {} : { vocabDivisibleBy }) });
const layer = (p: ParallelPlan, name: string) => p.layers.find((l) => l.layer.name === name);

describe("Megatron-LM's vocabulary padding", () => {
  for (const tp of [1, 2, 4, 6]) {
    it(`T = ${tp}: the embedding and the LM head split ${PADDED[tp]} rows, ${(PADDED[tp] ?? 0) / tp} a rank; the padding is named in the conservation check`, () => {
      const p = planAt(tp);
      const rows = (PADDED[tp] ?? 0) / tp;
      expect(layer(p, 'wte')?.weightParamsHeld).toBe(rows * H);
      expect(layer(p, 'lm_head')?.passes.fwd[0]?.gemm.n).toBe(rows);
      expect(layer(p, 'lm_head')?.weightParamsHeld).toBe(rows * H);
      const report = checkPlanInvariants(p, gpt2.inferred, { vectorOps: false });
      expect(report.paddingParams).toBe(2 * ((PADDED[tp] ?? 0) - V) * H);
    });
  }

  it('--make-vocab-size-divisible-by 1 pads to a multiple of T only (the busiest rank: ceil(V / T))', () => {
    expect(layer(planAt(4, 1), 'wte')?.weightParamsHeld).toBe(Math.ceil(V / 4) * H);
    expect(layer(planAt(1, 1), 'lm_head')?.passes.fwd[0]?.gemm.n).toBe(V);
  });

  it('the flag under modtrans\'s and Megatron\'s name (the same flag), and the legacy -p strategies without it; exit codes of the process', async () => {
    const cwd = process.cwd();
    const r = await runCliBatch([
      { args: ['inspect', 'gpt2_small_like', '--tp', '2', '--format', 'json'], cwd },
      { args: ['inspect', 'gpt2_small_like', '--tp', '2', '--make-vocab-size-divisible-by', '64', '--format', 'json'], cwd },
      { args: ['inspect', 'gpt2_small_like', '-p', 'MODEL', '--npus', '2', '--format', 'json'], cwd },
      { args: ['inspect', 'gpt2_small_like', '--tp', '2', '--make-vocab-size-divisible-by', '0'], cwd },
    ]);
    expect(r.map((x) => x.status)).toEqual([0, 0, 0, 2]);
    const wte = (i: number): number => (JSON.parse(r[i]?.stdout ?? '{}') as { layers: { name: string; rank: { weightParams: number } }[] }).layers.find((l) => l.name === 'wte')?.rank.weightParams ?? Number.NaN;
    expect(wte(0)).toBe((50432 / 2) * H);
    // A multiple of 64 x 2 = 128: 50,304 words, 25,152 a rank.
    expect(wte(1)).toBe((50304 / 2) * H);
    expect(wte(2)).toBe(Math.ceil(V / 2) * H);
    expect(r[3]?.stderr.trim().split('\n')).toHaveLength(1);
  });
});
