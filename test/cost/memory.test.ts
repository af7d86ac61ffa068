/**
 * Properties of the SRAM/DRAM model (src/cost/access/) beyond the reference runs, on small
 * random layers: the shortcuts are exact, bandwidth monotonicity, and what the thrash artifact
 * does (and does not) break.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MIN_SRAM_WORDS } from '../../src/cost/access/constants.js';
import { type ConvShape, convGeometry, distinctIfmapWords, gemmGeometry } from '../../src/cost/access/layer.js';
import { type MemoryConfig, simulateLayerMemory } from '../../src/cost/access/simulate.js';
import { systolicCompute } from '../../src/cost/systolic/compute.js';
import type { Dataflow } from '../../src/cost/types.js';
import type { Gemm } from '../../src/layers/types.js';

const dataflowArb = fc.constantFrom<Dataflow>('os', 'ws', 'is');
const arrayArb = fc.record({ rows: fc.constantFrom(2, 3, 4, 8), cols: fc.constantFrom(2, 4, 5, 8) });
const gemmArb = fc.record({ m: fc.integer({ min: 1, max: 90 }), n: fc.integer({ min: 1, max: 90 }), k: fc.integer({ min: 1, max: 90 }) });
const convArb: fc.Arbitrary<ConvShape> = fc
  .record({
    ifmapHeight: fc.integer({ min: 3, max: 14 }),
    ifmapWidth: fc.integer({ min: 3, max: 14 }),
    filterHeight: fc.integer({ min: 1, max: 3 }),
    filterWidth: fc.integer({ min: 1, max: 3 }),
    channels: fc.integer({ min: 1, max: 4 }),
    numFilters: fc.integer({ min: 1, max: 30 }),
    strideHeight: fc.integer({ min: 1, max: 4 }),
    strideWidth: fc.integer({ min: 1, max: 4 }),
  });
const layerArb = fc.oneof(gemmArb.map(gemmGeometry), convArb.map(convGeometry));
/** Down to MIN_SRAM_WORDS: single-word halves, sets of one word, drains of one line. */
const configArb: fc.Arbitrary<MemoryConfig> = fc.record({
  mode: fc.constantFrom<'calc' | 'user'>('calc', 'user'),
  ifmapSramWords: fc.oneof(fc.integer({ min: MIN_SRAM_WORDS, max: 12 }), fc.integer({ min: 40, max: 4000 })),
  filterSramWords: fc.oneof(fc.integer({ min: MIN_SRAM_WORDS, max: 12 }), fc.integer({ min: 40, max: 4000 })),
  ofmapSramWords: fc.integer({ min: MIN_SRAM_WORDS, max: 4000 }),
  bandwidthWordsPerCycle: fc.integer({ min: 1, max: 16 }),
});
/** Arrays down to a single row or column (no skew, one-line folds). */
const edgeArrayArb = fc.record({ rows: fc.constantFrom(1, 2, 3, 8), cols: fc.constantFrom(1, 2, 5, 8) });

function userConfig(sramWords: number, bandwidthWordsPerCycle: number): MemoryConfig {
  return { mode: 'user', ifmapSramWords: sramWords, filterSramWords: sramWords, ofmapSramWords: 4096, bandwidthWordsPerCycle };
}

describe('memory model', () => {
  it('its shortcuts (tile, position and epoch-suffix walks) equal the word-by-word walk', () => {
    fc.assert(
      fc.property(layerArb, edgeArrayArb, dataflowArb, configArb, (geometry, array, df, config) => {
        const fast = simulateLayerMemory(geometry, array, df, config);
        const slow = simulateLayerMemory(geometry, array, df, config, { shortcuts: false });
        expect(JSON.parse(JSON.stringify(fast))).toEqual(JSON.parse(JSON.stringify(slow)));
      }),
      { numRuns: 200 },
    );
  });

  it('CALC conv ifmap reads (os: by pixel and window tap) equal the word-by-word walk, epoch ends included', () => {
    const convs = convArb.chain((conv) => fc.constant({ ...conv, channels: conv.channels * 3 }));
    fc.assert(
      fc.property(convs, arrayArb, dataflowArb, fc.integer({ min: 100, max: 3000 }), (conv, array, df, sram) => {
        const geometry = convGeometry(conv);
        const config: MemoryConfig = { mode: 'calc', ifmapSramWords: sram, filterSramWords: sram, ofmapSramWords: 4096, bandwidthWordsPerCycle: 10 };
        const fast = simulateLayerMemory(geometry, array, df, config);
        const slow = simulateLayerMemory(geometry, array, df, config, { shortcuts: false });
        expect(fast.dram.ifmap).toEqual(slow.dram.ifmap);
      }),
      { numRuns: 200 },
    );
  });

  it('more DRAM bandwidth never adds stalls; the window slides do not depend on it', () => {
    fc.assert(
      fc.property(gemmArb, arrayArb, dataflowArb, fc.integer({ min: 100, max: 3000 }), (gemm, array, df, sram) => {
        const geometry = gemmGeometry(gemm);
        const prefetchWords = sram - Math.ceil(sram / 2);
        let previous: { stall: number; total: number; slides: number } | undefined;
        for (const bw of [1, 2, 3, 5, 8, 13, 40]) {
          const r = simulateLayerMemory(geometry, array, df, userConfig(sram, bw));
          // Each slide fetches ceil(P/bw) lines back to back (+1 port latency) after cycle -1.
          const slides = (r.dram.filter.dramStopCycle + 1) / (Math.ceil(prefetchWords / bw) + 1);
          expect(Number.isInteger(slides)).toBe(true);
          expect(r.dram.filter.dramReads % bw).toBe(0);
          if (previous) {
            expect(r.stallCycles).toBeLessThanOrEqual(previous.stall);
            expect(r.totalCycles).toBeLessThanOrEqual(previous.total);
            expect(slides).toBe(previous.slides);
          }
          previous = { stall: r.stallCycles, total: r.totalCycles, slides };
        }
      }),
      { numRuns: 60 },
    );
  });

  it('more SRAM CAN add stalls: the 100-set ring and 50-set window thrash on some shapes', () => {
    // Found by search; documented in README: USER stalls are not monotone in SRAM size.
    const geometry = gemmGeometry({ m: 69, n: 87, k: 59 });
    const array = { rows: 4, cols: 8 };
    const small = simulateLayerMemory(geometry, array, 'os', userConfig(3200, 1));
    const large = simulateLayerMemory(geometry, array, 'os', userConfig(6400, 1));
    expect(large.stallCycles).toBeGreaterThan(3 * small.stallCycles);
  });

  it('USER total cycles lie between the compute cycles and compute + stall cycles', () => {
    fc.assert(
      fc.property(gemmArb, arrayArb, dataflowArb, fc.integer({ min: 60, max: 3000 }), fc.integer({ min: 1, max: 12 }), (gemm, array, df, sram, bw) => {
        const r = simulateLayerMemory(gemmGeometry(gemm), array, df, userConfig(sram, bw));
        const compute = systolicCompute(gemm, array, df).computeCycles;
        expect(r.totalCycles).toBeGreaterThanOrEqual(compute);
        expect(r.totalCycles).toBeLessThanOrEqual(compute + r.stallCycles);
      }),
      { numRuns: 80 },
    );
  });

  it('USER mode with room and bandwidth to spare has no stall and equals CALC cycles', () => {
    const gemm: Gemm = { m: 70, n: 50, k: 60 };
    for (const df of ['os', 'ws', 'is'] as const) {
      const r = simulateLayerMemory(gemmGeometry(gemm), { rows: 8, cols: 8 }, df, userConfig(100_000, 1000));
      expect(r.stallCycles).toBe(0);
      expect(r.totalCycles).toBe(systolicCompute(gemm, { rows: 8, cols: 8 }, df).computeCycles);
    }
  });

  it('CALC never stalls (ofmap SRAM >= 4 columns) and reads every distinct word at least once', () => {
    fc.assert(
      fc.property(layerArb, arrayArb, dataflowArb, fc.integer({ min: 40, max: 4000 }), fc.integer({ min: 0, max: 500 }), (geometry, array, df, sram, extra) => {
        const config: MemoryConfig = { mode: 'calc', ifmapSramWords: sram, filterSramWords: sram, ofmapSramWords: 4 * array.cols + extra, bandwidthWordsPerCycle: 10 };
        const r = simulateLayerMemory(geometry, array, df, config);
        expect(r.stallCycles).toBe(0);
        expect(r.totalCycles).toBe(systolicCompute(geometry.gemm, array, df).computeCycles);
        const { m, n, k } = geometry.gemm;
        expect(r.dram.ifmap.dramReads).toBeGreaterThanOrEqual(distinctIfmapWords(geometry));
        expect(r.dram.filter.dramReads).toBeGreaterThanOrEqual(k * n);
        // Words written are the SRAM writes (ws/is: once per row fold), plus partial-line slack.
        expect(r.dram.ofmap.dramWrites).toBeGreaterThanOrEqual(m * n);
      }),
      { numRuns: 150 },
    );
  });
});
