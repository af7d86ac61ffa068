/**
 * CALC reads of ws and is convolution ifmaps in closed form (walk-calc-wsis.ts, tap-union.ts)
 * against the oracle: the word-by-word walk of SCALE-sim's demand matrices through its CALC read
 * buffer (`shortcuts: false`). Random convolutions with strides 1-3, filters 1-5, 1-20 channels,
 * inputs with windows past the edge (the ceil quirk: -1 elements), square and non-square arrays,
 * and SRAMs from many epochs per fold tile to epochs that span several tiles and passes. The
 * closed-form counts of tap-union.ts are also checked against listing the addresses one by one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ConvShape, convGeometry, distinctIfmapWords } from '../../src/cost/access/layer.js';
import { type MemoryConfig, simulateLayerMemory } from '../../src/cost/access/simulate.js';
import { ColumnSet } from '../../src/cost/access/tap-columns.js';
import { ConvTapUnion, TapRanges } from '../../src/cost/access/tap-union.js';
import type { Dataflow } from '../../src/cost/types.js';

const dataflowArb = fc.constantFrom<Dataflow>('ws', 'is');
const arrayArb = fc.record({ rows: fc.integer({ min: 1, max: 12 }), cols: fc.integer({ min: 1, max: 12 }) });
const convArb: fc.Arbitrary<ConvShape> = fc
  .record({
    filterHeight: fc.integer({ min: 1, max: 5 }),
    filterWidth: fc.integer({ min: 1, max: 5 }),
    extraHeight: fc.integer({ min: 0, max: 12 }),
    extraWidth: fc.integer({ min: 0, max: 12 }),
    channels: fc.integer({ min: 1, max: 20 }),
    numFilters: fc.integer({ min: 1, max: 30 }),
    strideHeight: fc.integer({ min: 1, max: 3 }),
    strideWidth: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ extraHeight, extraWidth, ...c }) => ({ ...c, ifmapHeight: c.filterHeight + extraHeight, ifmapWidth: c.filterWidth + extraWidth }));

function calcConfig(ifmapSramWords: number): MemoryConfig {
  return { mode: 'calc', ifmapSramWords, filterSramWords: 1 << 16, ofmapSramWords: 1 << 16, bandwidthWordsPerCycle: 10 };
}

/** The ifmap figures of the shortcut path and of the word-by-word walk. */
function bothWays(conv: ConvShape, array: { rows: number; cols: number }, dataflow: Dataflow, sram: number) {
  const geometry = convGeometry(conv);
  const config = calcConfig(sram);
  const fast = simulateLayerMemory(geometry, array, dataflow, config);
  const slow = simulateLayerMemory(geometry, array, dataflow, config, { shortcuts: false });
  return { fast: { dram: fast.dram.ifmap, sram: fast.sram.ifmap }, slow: { dram: slow.dram.ifmap, sram: slow.sram.ifmap } };
}

describe('CALC ws/is conv ifmap reads in closed form', () => {
  it('small SRAMs (many epochs per fold tile) equal the word-by-word walk', () => {
    fc.assert(
      fc.property(convArb, arrayArb, dataflowArb, fc.integer({ min: 100, max: 600 }), (conv, array, df, sram) => {
        const { fast, slow } = bothWays(conv, array, df, sram);
        expect(fast).toEqual(slow);
      }),
      { numRuns: 300 },
    );
  });

  it('epochs of a fraction of the ifmap (spanning several tiles, wrapping into the next pass) equal the word-by-word walk', () => {
    fc.assert(
      fc.property(convArb, arrayArb, dataflowArb, fc.double({ min: 0.05, max: 0.99, noNaN: true }), (conv, array, df, fraction) => {
        const epochWords = Math.max(1, Math.floor(distinctIfmapWords(convGeometry(conv)) * fraction));
        const sram = 100 * Math.ceil(epochWords / 50); // an epoch ends after 50 * floor(S / 100) words
        const { fast, slow } = bothWays(conv, array, df, sram);
        expect(fast).toEqual(slow);
      }),
      { numRuns: 300 },
    );
  });

  it('first layers (few channels, wide arrays: one channel under several taps in a tile) equal the word-by-word walk', () => {
    const firstLayer = convArb.map((c) => ({ ...c, channels: 1 + (c.channels % 3), ifmapHeight: c.ifmapHeight + 6, ifmapWidth: c.ifmapWidth + 6 }));
    const wide = fc.record({ rows: fc.integer({ min: 6, max: 32 }), cols: fc.integer({ min: 1, max: 16 }) });
    fc.assert(
      fc.property(firstLayer, wide, dataflowArb, fc.integer({ min: 100, max: 2000 }), (conv, array, df, sram) => {
        const { fast, slow } = bothWays(conv, array, df, sram);
        expect(fast).toEqual(slow);
      }),
      { numRuns: 200 },
    );
  });
});

/** The ifmap address im2col element (m, k) reads, -1 past the input, from the conv's definition. */
function im2colAddress(conv: ConvShape, ofmapWidth: number, m: number, k: number): number {
  const ch = k % conv.channels;
  const tap = Math.floor(k / conv.channels);
  const y = Math.floor(m / ofmapWidth) * conv.strideHeight + Math.floor(tap / conv.filterWidth);
  const x = (m % ofmapWidth) * conv.strideWidth + (tap % conv.filterWidth);
  return y < conv.ifmapHeight && x < conv.ifmapWidth ? (y * conv.ifmapWidth + x) * conv.channels + ch : -1;
}

describe('distinct words of im2col column ranges (tap-union.ts, tap-columns.ts)', () => {
  const columnsArb = fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { minLength: 1, maxLength: 40 });

  it('counts the words one channel reads through its columns as listing them does', () => {
    fc.assert(
      fc.property(convArb, columnsArb, fc.nat(), (conv, picks, chPick) => {
        const geometry = convGeometry(conv);
        const { m: M, k: K } = geometry.gemm;
        const ch = chPick % conv.channels;
        const ranges = new TapRanges(K);
        const words = new Set<number>();
        for (const [kPick, u, v] of picks) {
          const k = Math.floor((kPick % K) / conv.channels) * conv.channels + ch;
          const [a, b] = [u % (M + 1), v % (M + 1)].sort((p, q) => p - q) as [number, number];
          ranges.set(k, a, b); // a later pick of the same column replaces it
        }
        for (let k = ch; k < K; k += conv.channels) {
          for (let m = ranges.a[k] ?? 0; m < (ranges.b[k] ?? 0); m++) {
            const address = im2colAddress(conv, geometry.ofmapWidth, m, k);
            if (address >= 0) words.add(address);
          }
        }
        expect(new ConvTapUnion(geometry).channelWords(ch, ranges)).toBe(words.size);
      }),
      { numRuns: 300 },
    );
  });

  it('counts what a set of column ranges (a column up to twice, as in two passes) shares as listing them does', () => {
    fc.assert(
      fc.property(convArb, columnsArb, (conv, picks) => {
        const geometry = convGeometry(conv);
        const { m: M, k: K } = geometry.gemm;
        const columns = new ColumnSet(new ConvTapUnion(geometry), conv.channels);
        columns.clear();
        let elements = 0;
        const words = new Set<number>();
        const times = new Map<number, number>();
        for (const [kPick, u, v] of picks) {
          const k = kPick % K;
          const [a, b] = [u % (M + 1), v % (M + 1)].sort((p, q) => p - q) as [number, number];
          if (b <= a || (times.get(k) ?? 0) === 2) continue;
          times.set(k, (times.get(k) ?? 0) + 1);
          columns.add(k, a, b);
          for (let m = a; m < b; m++) {
            const address = im2colAddress(conv, geometry.ofmapWidth, m, k);
            if (address < 0) continue;
            elements++;
            words.add(address);
          }
        }
        expect(columns.sharedWords()).toBe(elements - words.size);
      }),
      { numRuns: 300 },
    );
  });
});
