/** The SCALE-sim export writes the GEMMs one rank runs under the plan, Megatron roles included. */
import { describe, expect, it } from 'vitest';
import { analyseModel, planOf } from '../../src/pipeline.js';
import { scalesimTopologies } from '../../src/report/scalesim.js';
import { modelPath } from '../helpers/models.js';

describe('scalesim export from a plan', () => {
  it('gpt2_small_like at T = 2: column layers halve N, row layers halve K', () => {
    const analysed = analyseModel(modelPath('gpt2_small_like'));
    const plan = planOf(analysed, { world: { tp: 2, dp: 1, pp: 1 }, batch: { globalBatch: 1, microBatch: 1, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'fp16', dpBucketMiB: 25 });
    const rows = new Map(scalesimTopologies(analysed.layers, analysed.inferred, plan.layers.map((l) => l.passes)).fwdGemm.map((r) => [r.name, r.gemm]));
    // 128 tokens; MLP 768 -> 3072 -> 768 (Megatron: fc column-parallel, proj row-parallel).
    expect(rows.get('blocks.0.fc')).toEqual({ m: 128, n: 3072 / 2, k: 768 });
    expect(rows.get('blocks.0.proj')).toEqual({ m: 128, n: 768, k: 3072 / 2 });
  });
});
