/**
 * The USER walk crosses runs of whole quiet folds (and quiet stretches running into a fold's data
 * lines) at once. On GEMMs with many row folds, SRAMs and bandwidths that force stalls, window
 * slides and backward-reading thrash, every figure equals the word-by-word walk (the oracle).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gemmGeometry } from '../../src/cost/access/layer.js';
import { longestRun } from '../../src/cost/access/run-search.js';
import { type MemoryConfig, simulateLayerMemory } from '../../src/cost/access/simulate.js';
import type { Dataflow } from '../../src/cost/types.js';

const dataflowArb = fc.constantFrom<Dataflow>('os', 'ws', 'is');
/** Many row folds (Sr = M, K or K over few array rows) of a few lines each, and long ones. */
const gemmArb = fc.record({
  m: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 60 })),
  n: fc.integer({ min: 1, max: 40 }),
  k: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 100 })),
});
const arrayArb = fc.record({ rows: fc.constantFrom(1, 2, 3, 4), cols: fc.constantFrom(1, 2, 3, 5) });
/** Sets of a few words, windows smaller than one operand (slides and thrash), drains of a few lines. */
const userConfigArb: fc.Arbitrary<MemoryConfig> = fc.record({
  mode: fc.constant<'user'>('user'),
  ifmapSramWords: fc.oneof(fc.integer({ min: 2, max: 40 }), fc.integer({ min: 100, max: 3000 })),
  filterSramWords: fc.oneof(fc.integer({ min: 2, max: 40 }), fc.integer({ min: 100, max: 3000 })),
  ofmapSramWords: fc.oneof(fc.integer({ min: 2, max: 40 }), fc.integer({ min: 100, max: 3000 })),
  bandwidthWordsPerCycle: fc.integer({ min: 1, max: 16 }),
});

function both(gemm: { m: number; n: number; k: number }, array: { rows: number; cols: number }, df: Dataflow, config: MemoryConfig) {
  const geometry = gemmGeometry(gemm);
  const fast = simulateLayerMemory(geometry, array, df, config);
  const slow = simulateLayerMemory(geometry, array, df, config, { shortcuts: false });
  return { fast: JSON.parse(JSON.stringify(fast)), slow: JSON.parse(JSON.stringify(slow)) };
}

describe('USER walk: quiet fold runs', () => {
  it('equal the word-by-word walk on random GEMMs, SRAMs and bandwidths', () => {
    fc.assert(
      fc.property(gemmArb, arrayArb, dataflowArb, userConfigArb, (gemm, array, df, config) => {
        const { fast, slow } = both(gemm, array, df, config);
        expect(fast).toEqual(slow);
      }),
      { numRuns: 200 },
    );
  });

  it('equal it where a fold reads its tile backwards through a window too small for the operand (thrash)', () => {
    // ws filter and is ifmap tiles are loaded bottom row first: a fold straddling the window's
    // end slides the window past its own lower rows, which then wrap the whole ring.
    const thrash = fc.record({ m: fc.integer({ min: 1, max: 3 }), n: fc.integer({ min: 4, max: 40 }), k: fc.integer({ min: 20, max: 200 }) });
    fc.assert(
      fc.property(thrash, fc.constantFrom<Dataflow>('ws', 'is'), fc.integer({ min: 100, max: 600 }), fc.integer({ min: 1, max: 12 }), (gemm, df, sram, bw) => {
        const shape = df === 'ws' ? gemm : { m: gemm.n, n: gemm.m, k: gemm.k };
        const config: MemoryConfig = { mode: 'user', ifmapSramWords: sram, filterSramWords: sram, ofmapSramWords: 4096, bandwidthWordsPerCycle: bw };
        const { fast, slow } = both(shape, { rows: 4, cols: 4 }, df, config);
        expect(fast).toEqual(slow);
      }),
      { numRuns: 150 },
    );
  });

  it('reproduce a thrashing layer: a backward-read operand larger than its window is re-read many times', () => {
    // A 1 x 8 x 300 ws GEMM on 4 x 4: the filter (2,400 words) is read in 4 x 4 blocks bottom row
    // first; with 200 words of SRAM (sets of 2 words) blocks straddling the window end thrash.
    const { fast, slow } = both({ m: 1, n: 8, k: 300 }, { rows: 4, cols: 4 }, 'ws', { mode: 'user', ifmapSramWords: 200, filterSramWords: 200, ofmapSramWords: 4096, bandwidthWordsPerCycle: 4 });
    expect(fast).toEqual(slow);
    expect(slow.dram.filter.dramReads).toBeGreaterThan(10 * 8 * 300);
  });
});

describe('longestRun', () => {
  it('finds the last n for which a monotone test holds, whatever the guess', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 6000 }), fc.double({ min: -10, max: 1e4, noNaN: true }), (max, last, guess) => {
        const expected = Math.min(max, last);
        expect(longestRun(max, guess, (n) => n <= last)).toBe(expected);
      }),
      { numRuns: 500 },
    );
    expect(longestRun(10, Infinity, (n) => n <= 3)).toBe(3);
    expect(longestRun(10, Number.NaN, (n) => n <= 7)).toBe(7);
  });
});
