/** Parameters a rank holds and updates under a plan (elements; bytes are x plan.elementBytes). */
import type { LayerPlan, ParallelPlan } from './types.js';

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
 * Ranks the optimizer state and gradients are sharded over under ZeRO: Megatron-LM's data-parallel
 * group with context parallelism, D x C (its distributed optimizer's group,
 * get_data_parallel_group(with_context_parallel=True)), the 'dp' group kind.
 */
export const shardingRanks = (plan: Pick<ParallelPlan, 'world'>): number => plan.world.dp * (plan.world.cp ?? 1);

/** Parameters a rank's optimizer updates (of its pipeline stage): all it holds, or its 1/(D x C) shard under ZeRO. */
export function updatedParams(plan: ParallelPlan, stage = 0): number {
  const held = heldParams(plan, stage);
  return plan.zero >= 1 ? Math.ceil(held / shardingRanks(plan)) : held;
}
