/**
 * Bounds on what a plan implies, so that absurd options are a clear error instead of hours of work
 * or an out-of-memory abort (`--dp 2^31`, `--global-batch 1e6 --micro-batch 1`, `--iterations 10000`).
 * Each error names the limit and the options that set the figure (README, "Limits").
 */
import { withThousands } from '../digits.js';
import { InputError } from '../errors.js';
import type { WorldShape } from './types.js';

/** Ranks of a world (--tp x --dp x --pp, or --npus): 65,536. Traces of 16,384 ranks take ~10 s. */
export const MAX_WORLD_RANKS = 1 << 16;
/** Micro-batches per step and replica (--global-batch / (--micro-batch x --dp)). */
export const MAX_MICRO_BATCHES = 1 << 14;
/** Training iterations per trace (--iterations). */
export const MAX_ITERATIONS = 1000;
/**
 * Layer passes in one rank's trace: layers of the largest pipeline stage x micro-batches x
 * iterations. Each is a few nodes; 2^24 of them is a trace of gigabytes.
 */
export const MAX_TRACE_LAYER_PASSES = 1 << 24;

const count = withThousands;
/** Every limit's error says how to lift it. */
const LIFT = '; --no-limits lifts the bounds';

export function checkWorldSize(world: WorldShape, flags: string, enforce = true): void {
  const ranks = world.tp * world.dp * world.pp;
  if (enforce && ranks > MAX_WORLD_RANKS) {
    throw new InputError(`${flags}: a world of ${count(ranks)} ranks is more than the limit of ${count(MAX_WORLD_RANKS)} ranks${LIFT}`);
  }
}

export function checkMicroBatches(microBatches: number, flags: string, enforce = true): void {
  if (enforce && microBatches > MAX_MICRO_BATCHES) {
    throw new InputError(`${flags}: ${count(microBatches)} micro-batches per step are more than the limit of ${count(MAX_MICRO_BATCHES)}; raise --micro-batch or lower --global-batch${LIFT}`);
  }
}

/** The size of one rank's trace: `stageLayers` layers of the largest stage x micro-batches x iterations. */
export function checkTraceSize(stageLayers: number, microBatches: number, iterations: number, enforce = true): void {
  const layerPasses = stageLayers * microBatches * iterations;
  if (enforce && layerPasses > MAX_TRACE_LAYER_PASSES) {
    throw new InputError(
      `the plan's traces would hold ${count(layerPasses)} layer passes per rank (${count(stageLayers)} layers per stage x ${count(microBatches)} micro-batches x ${count(iterations)} --iterations), ` +
        `more than the limit of ${count(MAX_TRACE_LAYER_PASSES)}; lower --iterations or --global-batch, raise --micro-batch or --pp${LIFT}`,
    );
  }
}

