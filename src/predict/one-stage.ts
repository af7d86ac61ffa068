/**
 * The free-network step of a plan without pipeline stages, read off the plan instead of its step
 * graph. With one stage every collective completes as it is issued and nothing waits on another
 * stage, so the compute unit never idles: the step is the sum of the durations of the compute
 * nodes buildStepSchedule would write (each pass of positive cycles: per micro-batch the forward,
 * the recomputed forward, the input gradient when needed, the weight gradient; then the optimizer
 * step). predictFreeNetwork over scheduleOf(plan) gives the same figures; a 100k-layer plan's
 * graph is ~10^5 nodes that this need not allocate.
 */
import { at } from '../errors.js';
import { LayerPassesCosts } from '../cost/training.js';
import type { CostModel } from '../cost/types.js';
import type { ParallelPlan } from '../plan/types.js';
import { costUpdate } from '../schedule/cost.js';
import { computeDurationNs, type PredictionSummary } from './free-network.js';

/** The prediction summary of a pp = 1 plan; undefined when the plan has pipeline stages (their waits need the graph). */
export function oneStageStepSummary(plan: ParallelPlan, model: CostModel): PredictionSummary | undefined {
  if (plan.world.pp !== 1) return undefined;
  const clockMHz = model.profile.clockMHz;
  const ns = (cycles: number): number => (cycles > 0 ? computeDurationNs(cycles, clockMHz) : 0);
  const costs = new LayerPassesCosts(model);
  let perMicroBatchNs = 0;
  for (const stage of plan.pipeline.stages) {
    for (const chunk of stage.chunks) {
      for (const i of chunk) {
        const l = at(plan.layers, i);
        const c = costs.of(l.passes);
        const fwd = ns(c.fwd.cycles);
        perMicroBatchNs += (l.recompute ? 2 * fwd : fwd) + (l.needsInputGrad ? ns(c.ig.cycles) : 0) + ns(c.wg.cycles);
      }
    }
  }
  const busyNs = plan.batch.microBatches * perMicroBatchNs + ns(costUpdate(plan, model, 0));
  return { network: 'free', stepNs: busyNs, bubbleFraction: 0, stages: [{ stage: 0, busyNs, idleNs: 0 }] };
}
