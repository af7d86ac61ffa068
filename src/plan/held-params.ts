/** Parameters a rank holds and updates under a plan (elements; bytes are x plan.elementBytes). */
import type { LayerPlan, ParallelPlan } from './types.js';
import { axesOf } from './axes.js';

/** Gradient (and parameter) elements a rank holds for `l`: weights, and biases unless excluded. */
export function gradientParams(plan: ParallelPlan, l: LayerPlan): number {
  return l.weightParamsHeld + (plan.gradientParams === 'weights' ? 0 : l.biasParamsHeld);
}

/** Parameters a rank of pipeline stage `stage` holds: its layers', and the last stage the parameters outside every layer. */
export function heldParams(plan: ParallelPlan, stage: number): number {
  const last = stage === plan.world.pp - 1;
  return plan.layers.reduce((a, l) => a + (l.stage === stage ? gradientParams(plan, l) : 0), 0) + (last ? plan.otherParams : 0);
}

/**
 * The group a layer's gradients reduce over, and its parameters shard over under ZeRO: Megatron's
 * data-parallel group with context parallelism ('dp'), or for an expert layer under expert
 * parallelism the expert data-parallel group ('edp'; distributed_data_parallel.py's expert buffers).
 */
export const gradientGroupOf = (l: LayerPlan): 'dp' | 'edp' => (l.expert === undefined ? 'dp' : 'edp');

/** Ranks of the gradient group of each kind: DP x CP, and EDP. */
export function gradientGroupSize(plan: ParallelPlan, group: 'dp' | 'edp'): number {
  const a = axesOf(plan.world);
  return group === 'dp' ? a.dp * a.cp : a.edp;
}

/** Parameters a rank's optimizer updates (of its pipeline stage): all it holds, or under ZeRO its shard of each gradient group's. */
export function updatedParams(plan: ParallelPlan, stage = 0): number {
  const held = heldParams(plan, stage);
  if (plan.zero < 1) return held;
  const expert = plan.layers.reduce((a, l) => a + (l.stage === stage && l.expert !== undefined ? gradientParams(plan, l) : 0), 0);
  if (expert === 0) return Math.ceil(held / gradientGroupSize(plan, 'dp'));
  return Math.ceil((held - expert) / gradientGroupSize(plan, 'dp')) + Math.ceil(expert / gradientGroupSize(plan, 'edp'));
}
