import { describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { analyseModel, createCostModel, planOf, scheduleOf } from '../../src/pipeline.js';
import { predictFreeNetwork } from '../../src/predict/free-network.js';
import { modelPath } from '../helpers/models.js';
import { present } from '../helpers/present.js';

describe('pp = 1: with communication free, the step is the stage compute back to back', () => {
  for (const world of [{ tp: 1, dp: 1, pp: 1 }, { tp: 2, dp: 2, pp: 1 }]) {
    it(`gpt2_small_like, TP ${world.tp} x DP ${world.dp}, 2 micro-batches`, async () => {
      const profile = await loadHardwareProfile('tpu-256');
      const model = await createCostModel(profile, 'ideal');
      const analysed = analyseModel(modelPath('gpt2_small_like'));
      const plan = planOf(analysed, { world, batch: { globalBatch: 2 * world.dp, microBatch: 1, microBatches: 2 }, sequenceParallel: false, zero: 0, dtype: 'fp16', dpBucketMiB: 25 });
      const schedule = scheduleOf(plan, model);
      const p = predictFreeNetwork(schedule);
      // Ground truth: each compute node's cycles at the clock, whole ns, summed (one compute unit, nothing to wait for).
      const sum = present(schedule.graphs[0], 'stage 0 graph').nodes.reduce((a, n) => a + (n.kind === 'compute' ? Math.max(1, Math.round((n.cycles * 1000) / profile.clockMHz)) : 0), 0);
      expect(p.stepNs).toBe(sum);
      expect(p.stages).toHaveLength(1);
      expect(p.stages[0]?.busyNs).toBe(sum);
      expect(p.stages[0]?.idleNs).toBe(0);
      expect(p.bubbleFraction).toBe(0);
      if (world.tp > 1) expect(schedule.graphs[0]?.nodes.some((n) => n.kind === 'collective')).toBe(true);
    });
  }
});
