import { describe, expect, it } from 'vitest';
import { writeGptModel } from '../../bench/models/gpt-graph.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import type { ZeroStage } from '../../src/plan/types.js';
import { analyseModel, costedPlanOf, createCostModel, planOf, scheduleOf } from '../../src/pipeline.js';
import { predictFreeNetwork, predictionSummary } from '../../src/predict/free-network.js';
import { oneStageStepSummary } from '../../src/predict/one-stage.js';

// Ground truth: the event-driven prediction over the full step graph (test/predict/free-network.test.ts checks it by hand).
describe('pp = 1: the step read off the plan equals the prediction over its step graph', () => {
  const file = writeGptModel({ layers: 2, hidden: 64, heads: 4, seq: 16, batch: 2, vocab: 100, tiedHead: true });
  const cases: { tp: number; dp: number; microBatches: number; zero: ZeroStage; recompute: 'none' | 'selective' | 'full'; sp: boolean; costModel: 'scalesim' | 'ideal' }[] = [
    { tp: 1, dp: 1, microBatches: 1, zero: 0, recompute: 'none', sp: false, costModel: 'scalesim' },
    { tp: 2, dp: 2, microBatches: 3, zero: 0, recompute: 'selective', sp: true, costModel: 'scalesim' },
    { tp: 2, dp: 4, microBatches: 2, zero: 3, recompute: 'full', sp: false, costModel: 'ideal' },
    { tp: 4, dp: 2, microBatches: 1, zero: 1, recompute: 'none', sp: false, costModel: 'scalesim' },
  ];
  for (const c of cases) {
    it(`TP ${c.tp} x DP ${c.dp}, ${c.microBatches} micro-batches, ZeRO-${c.zero}, recompute ${c.recompute}${c.sp ? ', SP' : ''}, ${c.costModel}`, async () => {
      const profile = await loadHardwareProfile('tpu-256');
      const model = await createCostModel(profile, c.costModel, { optimizer: 'adam' });
      const analysed = analyseModel(file, { batch: 2 }, {}, { vectorOps: true });
      const plan = planOf(analysed, { world: { tp: c.tp, dp: c.dp, pp: 1 }, batch: { globalBatch: 2 * c.dp * c.microBatches, microBatch: 2, microBatches: c.microBatches }, sequenceParallel: c.sp, zero: c.zero, dtype: 'bf16', dpBucketMiB: 25, recompute: c.recompute }, model);
      const expected = predictionSummary(predictFreeNetwork(scheduleOf(plan, model)));
      expect(expected.stepNs).toBeGreaterThan(0);
      expect(oneStageStepSummary(costedPlanOf(plan, model))).toEqual(expected);
    });
  }

  it('a plan with pipeline stages is left to the step graph', async () => {
    const model = await createCostModel(await loadHardwareProfile('tpu-256'), 'ideal');
    const analysed = analyseModel(file, { batch: 2 }, {}, { vectorOps: true });
    const plan = planOf(analysed, { world: { tp: 1, dp: 1, pp: 2 }, batch: { globalBatch: 4, microBatch: 2, microBatches: 2 }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25 }, model);
    expect(oneStageStepSummary(costedPlanOf(plan, model))).toBeUndefined();
  });
});
