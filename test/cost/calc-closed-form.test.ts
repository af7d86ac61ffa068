/**
 * CALC-mode memory accounting in closed form (walk-calc.ts, walk-calc-pixels.ts, conv-coverage.ts)
 * against the oracle: the word-by-word walk of SCALE-sim's demand matrices through its CALC read
 * buffer (`shortcuts: false`). Small random convolutions and GEMMs on every dataflow, with the
 * ceil quirk (windows past the input), strides larger than the filter, odd sizes, several column
 * folds (tiles streamed again) and SRAMs small enough to end many epochs inside one fold.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConvCoverage } from '../../src/cost/access/conv-coverage.js';
import { Im2colAddress } from '../../src/cost/access/im2col-address.js';
import { type ConvShape, Im2colMatrix, convGeometry, distinctIfmapWords, gemmGeometry } from '../../src/cost/access/layer.js';
import { type MemoryConfig, simulateLayerMemory } from '../../src/cost/access/simulate.js';
import type { Dataflow } from '../../src/cost/types.js';

const dataflowArb = fc.constantFrom<Dataflow>('os', 'ws', 'is');
const arrayArb = fc.record({ rows: fc.constantFrom(1, 2, 3, 4, 7, 8), cols: fc.constantFrom(1, 2, 3, 5, 8) });
const convArb: fc.Arbitrary<ConvShape> = fc
  .record({
    filterHeight: fc.integer({ min: 1, max: 5 }),
    filterWidth: fc.integer({ min: 1, max: 5 }),
    extraHeight: fc.integer({ min: 0, max: 13 }),
    extraWidth: fc.integer({ min: 0, max: 13 }),
    channels: fc.integer({ min: 1, max: 7 }),
    numFilters: fc.integer({ min: 1, max: 20 }),
    strideHeight: fc.integer({ min: 1, max: 6 }),
    strideWidth: fc.integer({ min: 1, max: 6 }),
  })
  .map(({ extraHeight, extraWidth, ...c }) => ({ ...c, ifmapHeight: c.filterHeight + extraHeight, ifmapWidth: c.filterWidth + extraWidth }));
const gemmArb = fc.record({ m: fc.integer({ min: 1, max: 70 }), n: fc.integer({ min: 1, max: 70 }), k: fc.integer({ min: 1, max: 70 }) });
/** From sets of one word (epochs of 50 words) to SRAMs that hold the whole operand. */
const sramArb = fc.oneof(fc.integer({ min: 100, max: 400 }), fc.integer({ min: 400, max: 6000 }));

function calcConfig(ifmapSramWords: number, filterSramWords: number): MemoryConfig {
  return { mode: 'calc', ifmapSramWords, filterSramWords, ofmapSramWords: 1 << 16, bandwidthWordsPerCycle: 10 };
}

/** Input pixels under the windows of ofmap pixels [a0, b0) and [a1, b1), one by one. */
function coveredPixelsByWindow(conv: ConvShape, ofmapWidth: number, ranges: [number, number][]): number {
  const covered = new Set<number>();
  for (const [a, b] of ranges) {
    for (let m = a; m < b; m++) {
      const y0 = Math.floor(m / ofmapWidth) * conv.strideHeight;
      const x0 = (m % ofmapWidth) * conv.strideWidth;
      for (let dy = 0; dy < conv.filterHeight; dy++) {
        for (let dx = 0; dx < conv.filterWidth; dx++) {
          if (y0 + dy < conv.ifmapHeight && x0 + dx < conv.ifmapWidth) covered.add((y0 + dy) * conv.ifmapWidth + x0 + dx);
        }
      }
    }
  }
  return covered.size;
}

describe('CALC closed-form memory accounting', () => {
  it('counts the input pixels under a range of windows as listing them does', () => {
    fc.assert(
      fc.property(convArb, fc.nat(), fc.nat(), fc.nat(), fc.nat(), (conv, u, v, w, z) => {
        const geometry = convGeometry(conv);
        const m = geometry.gemm.m;
        const [a0, b0] = [u % (m + 1), v % (m + 1)].sort((p, q) => p - q) as [number, number];
        // A second range after the first, as a wrapped epoch has ([0, b) and [a, M)).
        const a1 = b0 + (w % (m - b0 + 1));
        const b1 = a1 + (z % (m - a1 + 1));
        const coverage = new ConvCoverage(geometry);
        expect(coverage.countPixels(a0, b0, a1, b1)).toBe(coveredPixelsByWindow(conv, geometry.ofmapWidth, [[a0, b0], [a1, b1]]));
      }),
      { numRuns: 300 },
    );
  });

  it('computes im2col addresses (-1 past the input) as the tabled matrix does', () => {
    fc.assert(
      fc.property(convArb, (conv) => {
        const geometry = convGeometry(conv);
        const tabled = new Im2colMatrix(geometry);
        const computed = new Im2colAddress(geometry);
        const mismatches: [number, number][] = [];
        for (let i = 0; i < geometry.gemm.m; i++) {
          for (let j = 0; j < geometry.gemm.k; j++) if (computed.addr(i, j) !== tabled.addr(i, j)) mismatches.push([i, j]);
        }
        expect(mismatches).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('conv layers: every report figure equals the word-by-word walk', () => {
    fc.assert(
      fc.property(convArb, arrayArb, dataflowArb, sramArb, sramArb, (conv, array, df, ifmapSram, filterSram) => {
        const geometry = convGeometry(conv);
        const config = calcConfig(ifmapSram, filterSram);
        const fast = simulateLayerMemory(geometry, array, df, config);
        const slow = simulateLayerMemory(geometry, array, df, config, { shortcuts: false });
        expect(fast).toEqual(slow);
      }),
      { numRuns: 250 },
    );
  });

  it('os conv ifmaps re-read across column folds with epochs ending mid-tile equal the word-by-word walk', () => {
    // Many filters: several column folds stream the same row-fold tiles again (an epoch can wrap).
    const wide = convArb.map((c) => ({ ...c, numFilters: c.numFilters * 3 }));
    fc.assert(
      fc.property(wide, arrayArb, fc.integer({ min: 100, max: 1500 }), (conv, array, sram) => {
        const geometry = convGeometry(conv);
        const config = calcConfig(sram, 1 << 16);
        const fast = simulateLayerMemory(geometry, array, 'os', config);
        const slow = simulateLayerMemory(geometry, array, 'os', config, { shortcuts: false });
        expect(fast.dram.ifmap).toEqual(slow.dram.ifmap);
        expect(fast.sram.ifmap).toEqual(slow.sram.ifmap);
      }),
      { numRuns: 250 },
    );
  });

  it('os conv ifmaps a little larger than an epoch (epochs wrap into the next column fold) equal the word-by-word walk', () => {
    // An epoch of a fraction of the ifmap: it closes late in one column fold and the next one
    // reaches over the wrap into the first tiles of the next, which share pixels on small inputs.
    const small = convArb.map((c) => ({ ...c, ifmapHeight: Math.min(c.ifmapHeight, c.filterHeight + 3), numFilters: c.numFilters * 3 }));
    fc.assert(
      fc.property(small, arrayArb, fc.double({ min: 0.3, max: 0.99, noNaN: true }), (conv, array, fraction) => {
        const geometry = convGeometry(conv);
        const epochWords = Math.max(1, Math.floor(distinctIfmapWords(geometry) * fraction));
        const sram = 100 * Math.ceil(epochWords / 50); // an epoch ends after 50 * floor(S / 100) words
        const config = calcConfig(sram, 1 << 16);
        const fast = simulateLayerMemory(geometry, array, 'os', config);
        const slow = simulateLayerMemory(geometry, array, 'os', config, { shortcuts: false });
        expect(fast.dram.ifmap).toEqual(slow.dram.ifmap);
      }),
      { numRuns: 300 },
    );
  });

  it('GEMM layers: every report figure equals the word-by-word walk', () => {
    fc.assert(
      fc.property(gemmArb, arrayArb, dataflowArb, sramArb, sramArb, (gemm, array, df, ifmapSram, filterSram) => {
        const geometry = gemmGeometry(gemm);
        const config = calcConfig(ifmapSram, filterSram);
        const fast = simulateLayerMemory(geometry, array, df, config);
        const slow = simulateLayerMemory(geometry, array, df, config, { shortcuts: false });
        expect(fast).toEqual(slow);
      }),
      { numRuns: 150 },
    );
  });
});
