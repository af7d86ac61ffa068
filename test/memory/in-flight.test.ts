/** Micro-batches a pipeline stage holds at its peak, from the schedules' definitions. */
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { inFlightMicroBatches, stageMicroBatchesHeld } from '../../src/memory/in-flight.js';

const stages = (pp: number): number[] => Array.from({ length: pp }, (_, i) => i);

describe('inFlightMicroBatches', () => {
  it('1F1B: stage i holds min(P - i, m)', () => {
    expect(stages(4).map((i) => inFlightMicroBatches('1f1b', i, 4, 8))).toEqual([4, 3, 2, 1]);
    expect(stages(4).map((i) => inFlightMicroBatches('1f1b', i, 4, 2))).toEqual([2, 2, 2, 1]);
    expect(inFlightMicroBatches('1f1b', 0, 1, 5)).toBe(1); // no pipeline: forward then backward per micro-batch
  });

  it('GPipe: every stage holds all m', () => {
    expect(stages(4).map((i) => inFlightMicroBatches('gpipe', i, 4, 8))).toEqual([8, 8, 8, 8]);
  });

  it("interleaved: Megatron-LM's warm-up (P - i - 1) x 2 + (vpp - 1) x P chunks, plus the first steady forward", () => {
    // P 4, vpp 2, m 8: stage 0 warms up with 3 x 2 + 1 x 4 = 10 chunks, stage 3 with 0 + 4.
    expect(stages(4).map((i) => inFlightMicroBatches('interleaved', i, 4, 8, 2))).toEqual([11, 9, 7, 5]);
    // m = P: all forwards first, m x vpp chunks.
    expect(stages(4).map((i) => inFlightMicroBatches('interleaved', i, 4, 4, 2))).toEqual([8, 8, 8, 8]);
    // P 2, vpp 4, m 4: (2 - 0 - 1) x 2 + 3 x 2 = 8 warm-up chunks, + 1 = 9 of the 16.
    expect(inFlightMicroBatches('interleaved', 0, 2, 4, 4)).toBe(9);
  });

  it("interleaved stage 0 holds Korthikanti et al.'s (1 + (P - 1) / (P vpp)) x P stage-sized micro-batches", () => {
    for (const [pp, vpp] of [[4, 2], [8, 3], [16, 4]] as const) {
      expect(stageMicroBatchesHeld('interleaved', 0, pp, 4 * pp, vpp)).toBeCloseTo(pp * (1 + (pp - 1) / (pp * vpp)), 12);
    }
    // Without interleaving (vpp 1) the same factor is 1F1B's P.
    expect(stageMicroBatchesHeld('1f1b', 0, 8, 32)).toBe(8);
  });

  it('refuses impossible inputs', () => {
    expect(() => inFlightMicroBatches('interleaved', 0, 4, 6, 2)).toThrow(InputError);
    expect(() => inFlightMicroBatches('1f1b', 4, 4, 8)).toThrow(/stage 4/);
    expect(() => inFlightMicroBatches('gpipe', 0, 0, 8)).toThrow(InputError);
  });
});
