/**
 * The line-by-line walk of all three demand streams together: needed whenever a buffer can stall
 * (USER mode), because a stall delays every later line of every operand.
 *
 * Shortcuts that leave the result unchanged: an operand whose active window spans all its sets
 * never misses; a fold re-reading a prefetch tile whose sets are all in the window hits throughout;
 * GEMM lines are served a set at a time from their prefetch positions (gemm-positions.ts).
 */
import { userElemsPerSet } from './constants.js';
import type { LineSource } from './demand.js';
import { GemmLinePositions, PrefetchPositions, gemmSetIndex } from './gemm-positions.js';
import { LinearMatrix, distinctIfmapWords } from './layer.js';
import { buildSetIndex, prefetchLayout } from './prefetch.js';
import { CalcReadBuffer, calcEpochWords } from './read-buffer-calc.js';
import { type ReadBufferStats, UserReadBuffer } from './read-buffer-user.js';
import { type MemorySimResult, type WalkContext, WindowTracker } from './walk-context.js';
import { OfmapWriteBuffer } from './write-buffer.js';

interface ReadSide {
  /** True if every line of fold (fr, fc) is known to hit without changing the buffer. */
  skips(fr: number, fc: number): boolean;
  /** Serves line t of the current fold at `cycle`; returns its stall; sets `words`. */
  serveLine(t: number, cycle: number): number;
  /** Words demanded by the last served line. */
  words: number;
  stats(): ReadBufferStats;
}

export function walkCoupled(ctx: WalkContext): MemorySimResult {
  const { streams, array, config, rowFolds, colFolds, foldLines } = ctx;
  const ifmapSide = readSide(ctx, 'ifmap');
  const filterSide = readSide(ctx, 'filter');
  const writer = new OfmapWriteBuffer(config.ofmapSramWords, config.mode === 'calc' ? array.cols : config.bandwidthWordsPerCycle);
  const scratch = new Int32Array(Math.max(array.rows, array.cols));
  const windows = { ifmap: new WindowTracker(), filter: new WindowTracker(), ofmap: new WindowTracker() };

  let stall = 0;
  let line = 0;
  let lastAccepted = 0;
  for (let fc = 0; fc < colFolds; fc++) {
    for (let fr = 0; fr < rowFolds; fr++) {
      streams.setFold(fr, fc);
      // Skipped operands only need the fold's first and last demand lines (SRAM start/stop).
      const skipI = ifmapSide.skips(fr, fc);
      const skipF = filterSide.skips(fr, fc);
      const boundsI = skipI ? dataLineBounds(streams.ifmap, foldLines, scratch) : NO_BOUNDS;
      const boundsF = skipF ? dataLineBounds(streams.filter, foldLines, scratch) : NO_BOUNDS;
      for (let t = 0; t < foldLines; t++, line++) {
        const cycle = line + stall;
        let stallI = 0;
        let stallF = 0;
        if (!skipI) {
          stallI = ifmapSide.serveLine(t, cycle);
          if (ifmapSide.words > 0) windows.ifmap.note(cycle + 1 + stallI); // reads are served after 1 cycle
        } else if (t === boundsI[0] || t === boundsI[1]) windows.ifmap.note(cycle + 1);
        if (!skipF) {
          stallF = filterSide.serveLine(t, cycle);
          if (filterSide.words > 0) windows.filter.note(cycle + 1 + stallF);
        } else if (t === boundsF[0] || t === boundsF[1]) windows.filter.note(cycle + 1);
        const ofmapWords = streams.ofmap.count(t);
        lastAccepted = writer.serve(ofmapWords, cycle);
        if (ofmapWords > 0) windows.ofmap.note(lastAccepted);
        stall += Math.max(stallI, stallF, lastAccepted - cycle);
      }
    }
  }
  writer.finish(lastAccepted);
  return {
    totalCycles: lastAccepted,
    stallCycles: stall,
    sram: windows,
    dram: { ifmap: ifmapSide.stats(), filter: filterSide.stats(), ofmap: writer.stats() },
  };
}

const NO_BOUNDS: readonly [number, number] = [-1, -1];

/** First and last line of the current fold holding a real address of `source` ([-1, -1]: none). */
function dataLineBounds(source: LineSource, foldLines: number, out: Int32Array): readonly [number, number] {
  let first = 0;
  while (first < foldLines && source.line(first, out) === 0) first++;
  if (first === foldLines) return NO_BOUNDS;
  let last = foldLines - 1;
  while (source.line(last, out) === 0) last--;
  return [first, last];
}

function readSide(ctx: WalkContext, operand: 'ifmap' | 'filter'): ReadSide {
  return ctx.config.mode === 'user' ? userReadSide(ctx, operand) : calcReadSide(ctx, operand);
}

function userReadSide(ctx: WalkContext, operand: 'ifmap' | 'filter'): ReadSide {
  const { config, operands, streams, array } = ctx;
  const sramWords = operand === 'ifmap' ? config.ifmapSramWords : config.filterSramWords;
  const bandwidth = config.bandwidthWordsPerCycle;
  const elemsPerSet = userElemsPerSet(sramWords);
  const source = operand === 'ifmap' ? streams.ifmap : streams.filter;
  const matrix = operand === 'ifmap' ? operands.ifmap : operands.filter;
  const layout = prefetchLayout(operands, array, ctx.dataflow, operand);

  if (ctx.shortcuts && matrix instanceof LinearMatrix) {
    // A GEMM line is a run of consecutive prefetch positions: served a set at a time.
    const positions = new PrefetchPositions(layout);
    const buffer = new UserReadBuffer(gemmSetIndex(positions, elemsPerSet, bandwidth), sramWords, bandwidth);
    const lines = new GemmLinePositions(streams, operand, positions, layout.rowsPerTile, array.rows);
    const gemmSide: ReadSide = {
      words: 0,
      skips: () => buffer.neverMisses,
      serveLine: (t, cycle) => {
        const n = source.count(t);
        gemmSide.words = n;
        return n === 0 ? 0 : buffer.serveRun(lines.first(t), n, cycle);
      },
      stats: () => buffer.stats(),
    };
    return gemmSide;
  }

  const buffer = new UserReadBuffer(buildSetIndex(layout, elemsPerSet, bandwidth), sramWords, bandwidth);
  const scratch = new Int32Array(Math.max(array.rows, array.cols));
  // Folds that re-read a whole prefetch tile can be checked at tile level; ws filter and is
  // ifmap folds read sub-blocks of their prefetch tiles, once each.
  const wholeTiles = !((ctx.dataflow === 'ws' && operand === 'filter') || (ctx.dataflow === 'is' && operand === 'ifmap'));
  const wordSide: ReadSide = {
    words: 0,
    skips: (fr, fc) => ctx.shortcuts && (buffer.neverMisses || (wholeTiles && buffer.coversTile(streams.tileId(operand, fr, fc)))),
    serveLine: (t, cycle) => {
      const n = source.line(t, scratch);
      wordSide.words = n;
      return buffer.serve(scratch, n, cycle);
    },
    stats: () => buffer.stats(),
  };
  return wordSide;
}

/** CALC read buffers inside the coupled walk (only when a CALC ofmap buffer stalls). */
function calcReadSide(ctx: WalkContext, operand: 'ifmap' | 'filter'): ReadSide {
  const { config, operands, streams, array } = ctx;
  const sramWords = operand === 'ifmap' ? config.ifmapSramWords : config.filterSramWords;
  const source = operand === 'ifmap' ? streams.ifmap : streams.filter;
  const matrix = operand === 'ifmap' ? operands.ifmap : operands.filter;
  const calc = new CalcReadBuffer(sramWords, matrix.addressSpace, operands.requestFloor[operand]);
  const distinct = operand === 'ifmap' ? distinctIfmapWords(operands.geometry) : matrix.addressSpace;
  const fits = ctx.shortcuts && distinct < calcEpochWords(sramWords);
  if (fits) calc.serveFitting(distinct);
  const scratch = new Int32Array(Math.max(array.rows, array.cols));
  const side: ReadSide = {
    words: 0,
    skips: () => fits,
    serveLine: (t, cycle) => {
      side.words = source.line(t, scratch);
      calc.serve(scratch, side.words, cycle);
      return 0;
    },
    stats: () => calc.stats(),
  };
  return side;
}
