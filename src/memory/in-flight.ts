/**
 * Micro-batches whose activations a pipeline stage holds at its schedule's peak (README, "Memory
 * per rank"). A stage keeps a micro-batch's activations from its forward until its backward.
 */
import { InputError } from '../errors.js';
import type { PipelineScheduleKind } from '../plan/types.js';

/**
 * Forward passes in flight on `stage` (0-based) of `pp` stages at the peak, with `microBatches`
 * per step:
 * - gpipe: every forward runs before any backward: m;
 * - 1f1b: P - 1 - i warm-up forwards (Megatron-LM's forward_backward_pipelining_without_interleaving),
 *   then one more forward before the first backward: min(P - i, m);
 * - interleaved: in model chunks (each 1 / vpp of the stage's layers). Megatron-LM's
 *   forward_backward_pipelining_with_interleaving warms up with (P - i - 1) x 2 + (vpp - 1) x P chunk
 *   forwards (all m x vpp when m = P), then runs one more before its first backward; capped at
 *   m x vpp. On stage 0 that is (vpp + 1) P - 1 chunks, i.e. (1 + (P - 1) / (P vpp)) x P micro-batches
 *   of the whole stage: Korthikanti et al.'s interleaving factor.
 */
export function inFlightMicroBatches(schedule: PipelineScheduleKind, stage: number, pp: number, microBatches: number, vpp = 1): number {
  for (const [name, v] of [['pp', pp], ['microBatches', microBatches], ['vpp', vpp]] as const) {
    if (!Number.isSafeInteger(v) || v < 1) throw new InputError(`${name} ${v}: expected a positive integer`);
  }
  if (!Number.isSafeInteger(stage) || stage < 0 || stage >= pp) throw new InputError(`stage ${stage}: expected 0..${pp - 1}`);
  const m = microBatches;
  switch (schedule) {
    case 'gpipe':
      return m;
    case '1f1b':
      return Math.min(pp - stage, m);
    case 'interleaved': {
      if (m % pp !== 0) throw new InputError(`interleaved schedule: ${m} micro-batches are not a multiple of --pp ${pp}`);
      const total = m * vpp;
      if (m === pp) return total;
      const warmUp = Math.min((pp - stage - 1) * 2 + (vpp - 1) * pp, total);
      return Math.min(warmUp + 1, total);
    }
  }
}

/** Stage-sized micro-batches held: interleaved chunks count 1 / vpp each. */
export function stageMicroBatchesHeld(schedule: PipelineScheduleKind, stage: number, pp: number, microBatches: number, vpp = 1): number {
  const inFlight = inFlightMicroBatches(schedule, stage, pp, microBatches, vpp);
  return schedule === 'interleaved' ? inFlight / vpp : inFlight;
}
