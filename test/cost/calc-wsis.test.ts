/**
 * CALC reads of ws and is convolution ifmaps in closed form (walk-calc-wsis.ts, tap-union.ts)
 * against the oracle: the word-by-word walk of SCALE-sim's demand matrices through its CALC read
 * buffer (`shortcuts: false`). Random convolutions with strides 1-3, filters 1-5, 1-20 channels,
 * inputs with windows past the edge (the ceil quirk: -1 elements), square and non-square arrays,
 * and SRAMs from many epochs per fold tile to epochs that span several tiles and passes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ConvShape, convGeometry, distinctIfmapWords } from '../../src/cost/memory/layer.js';
import { type MemoryConfig, simulateLayerMemory } from '../../src/cost/memory/simulate.js';
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
