/**
 * SCALE-sim v2's fixed memory-system constants (`single_layer_sim.py`, `read_buffer*.py`;
 * docs/scalesim-model.md §1, §7), in one place so every buffer model agrees on them.
 */

/** Every read SRAM is cut into this many "sets" (SCALE-sim's hashed prefetch buffer). */
export const SRAM_SETS = 100;

/** CALC mode: sets in the hit window; an epoch ends when this many sets are full. */
export const CALC_ACTIVE_SETS = 50;

/** CALC mode: the fixed "default" DRAM read bandwidth, words per cycle. */
export const CALC_READ_BANDWIDTH_WORDS = 10;

/**
 * Smallest SRAM, in words per array, the double-buffered model can run: one word in each half.
 * With one word the prefetch (or drain) half is empty and SCALE-sim's buffers never make progress.
 */
export const MIN_SRAM_WORDS = 2;

/** Largest array side (rows, columns) and array count accepted in a profile or .cfg. */
export const MAX_ARRAY_DIM = 1 << 20;

/** Words per USER-mode prefetch set: ceil(S / 100), duplicates counted. */
export function userElemsPerSet(sramWords: number): number {
  return Math.ceil(sramWords / SRAM_SETS);
}

/** Words per CALC-mode set: floor(S / 100) distinct words (0 when S < 100: sets never fill). */
export function calcItemsPerSet(sramWords: number): number {
  return Math.floor(sramWords / SRAM_SETS);
}

/** sum of min(v, cap) for v = 1..y (0 for y <= 0): the closed form behind trapezoid counts. */
export function cappedRamp(y: number, cap: number): number {
  if (y <= 0) return 0;
  return y <= cap ? (y * (y + 1)) / 2 : (cap * (cap + 1)) / 2 + (y - cap) * cap;
}
