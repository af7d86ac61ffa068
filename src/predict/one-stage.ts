/**
 * The free-network step of a plan without pipeline stages, read off the costed plan instead of
 * its step graph. With one stage every collective completes as it is issued and nothing waits on
 * another stage, so the compute unit never idles: the step is the sum of the durations of the
 * compute nodes the step graph holds — each layer's pass lists (`CostedLayer.forward` and
 * `backward`, which buildStepSchedule issues node by node) once per micro-batch, then the
 * optimizer step; passes of 0 cycles are no node. predictFreeNetwork over the step graph gives
 * the same figures; a 100k-layer plan's graph is ~10^5 nodes that this need not allocate.
 */
import type { CostedPass, CostedPlan } from '../costed/costed-plan.js';
import { at } from '../errors.js';
import { computeDurationNs } from '../units.js';
import type { PredictionSummary } from './free-network.js';

/** The prediction summary of a pp = 1 plan; undefined when the plan has pipeline stages (their waits need the graph). */
export function oneStageStepSummary(costed: CostedPlan): PredictionSummary | undefined {
  const { plan, clockMHz } = costed;
  if (plan.world.pp !== 1) return undefined;
  // The step graph drops compute of 0 cycles (schedule/graph-builder.ts).
  const ns = (cycles: number): number => (cycles > 0 ? computeDurationNs(cycles, clockMHz) : 0);
  const passesNs = (passes: readonly CostedPass[]): number => passes.reduce((a, p) => a + ns(p.cost.cycles), 0);
  let perMicroBatchNs = 0;
  for (const stage of plan.pipeline.stages) {
    for (const chunk of stage.chunks) {
      for (const i of chunk) {
        const c = at(costed.layers, i);
        perMicroBatchNs += passesNs(c.forward) + passesNs(c.backward);
      }
    }
  }
  const busyNs = plan.batch.microBatches * perMicroBatchNs + ns(at(costed.stages, 0).updateCycles);
  return { network: 'free', stepNs: busyNs, bubbleFraction: 0, stages: [{ stage: 0, busyNs, idleNs: 0 }] };
}
