/**
 * CALC mode: reads never stall, so demand line i is served at cycle i and each operand can be
 * walked on its own. The ofmap stream takes a whole fold at once between drain events (closed-form
 * counts per line otherwise); a read operand is skipped entirely when it fits one epoch, handled a
 * fold tile at a time when its tiles are identical-or-disjoint (GEMMs), and epoch by epoch for conv
 * ifmaps: os in walk-calc-pixels.ts, ws and is in walk-calc-wsis.ts. Nothing walks words unless
 * `shortcuts: false` (the test oracle) or an address offset removes an element (simulate.ts). Returns undefined if the ofmap buffer stalls: then the lines are not at
 * cycle i any more.
 */
import { indexOutOfRange } from '../../errors.js';
import { usedInFold } from '../systolic/mapping.js';
import { cappedRamp } from './constants.js';
import { DemandStreams, FlippedTile, type LineSource, type SkewedTile } from './demand.js';
import { Im2colAddress } from './im2col-address.js';
import { Im2colMatrix, LinearMatrix, distinctIfmapWords } from './layer.js';
import { CalcReadBuffer, type CalcReadCounters, calcEpochWords, calcReadStats } from './read-buffer-calc.js';
import type { ReadBufferStats } from './read-buffer-user.js';
import { walkOsIfmapPixels } from './walk-calc-pixels.js';
import { walkWsIsIfmap } from './walk-calc-wsis.js';
import { type MemorySimResult, type SramWindow, type WalkContext, WindowTracker } from './walk-context.js';
import { OfmapWriteBuffer } from './write-buffer.js';

export function walkCalc(ctx: WalkContext): MemorySimResult | undefined {
  const { streams, rowFolds, colFolds, foldLines, config, array } = ctx;
  const writer = new OfmapWriteBuffer(config.ofmapSramWords, array.cols);
  const ofmapWindow = new WindowTracker();
  let foldStart = 0;
  for (let fc = 0; fc < colFolds; fc++) {
    for (let fr = 0; fr < rowFolds; fr++, foldStart += foldLines) {
      if (!ctx.shortcuts) {
        streams.setFold(fr, fc);
        // The reference: line by line.
        for (let t = 0; t < foldLines; t++) {
          const words = streams.ofmap.count(t);
          if (words === 0) continue;
          if (!writer.serveLines(words, 1, foldStart + t)) return undefined;
          ofmapWindow.note(foldStart + t);
        }
        continue;
      }
      // A fold's ofmap words per line are a trapezoid over [lo, hi + usedCols - 2]: ramps of
      // single lines around a plateau of `top` words, served at once.
      const { lo, hi, usedCols } = ofmapTrapezoid(ctx, fr, fc);
      const top = Math.min(usedCols, hi - lo);
      if (top <= 0) continue;
      const last = hi + usedCols - 2;
      ofmapWindow.note(foldStart + lo);
      ofmapWindow.note(foldStart + last);
      // No drain starts or ends during the fold: its words are stored at once.
      const foldWords = (hi - lo) * usedCols;
      if (foldWords <= writer.quietWords(foldStart + lo) && foldStart + last < writer.quietBeforeCycle(foldStart + lo)) {
        writer.storeQuiet(foldWords);
        continue;
      }
      streams.setFold(fr, fc); // the ramps' counts per line
      const plateauFirst = lo + top - 1;
      const plateauLast = last - top + 1;
      for (let t = lo; t < plateauFirst; t++) if (!writer.serveLines(streams.ofmap.count(t), 1, foldStart + t)) return undefined;
      if (!writer.serveLines(top, plateauLast - plateauFirst + 1, foldStart + plateauFirst)) return undefined;
      for (let t = plateauLast + 1; t <= last; t++) if (!writer.serveLines(streams.ofmap.count(t), 1, foldStart + t)) return undefined;
    }
  }
  const lastLine = foldStart - 1;
  writer.finish(lastLine);
  const ifmap = walkReads(ctx, 'ifmap');
  const filter = walkReads(ctx, 'filter');
  return {
    totalCycles: lastLine,
    stallCycles: 0,
    sram: { ifmap: ifmap.window, filter: filter.window, ofmap: ofmapWindow },
    dram: { ifmap: ifmap.stats, filter: filter.stats, ofmap: writer.stats() },
  };
}

/**
 * The ofmap lines of fold (fr, fc), as DemandStreams.setFold sets them (OfmapCounts): column c
 * writes lines [lo + c, hi + c). os writes its flipped R x C tile after T - 1 lines, ws and is
 * their T output rows after 2R - 1 lines.
 */
function ofmapTrapezoid(ctx: WalkContext, fr: number, fc: number): { lo: number; hi: number; usedCols: number } {
  const { rows: R, cols: C } = ctx.array;
  const { sr, sc, t: T } = ctx.streams.mapping;
  const usedCols = usedInFold(sc, C, fc);
  if (ctx.dataflow === 'os') return { lo: T - 1 + R - usedInFold(sr, R, fr), hi: T - 1 + R, usedCols };
  return { lo: 2 * R - 1, hi: 2 * R - 1 + T, usedCols };
}

function walkReads(ctx: WalkContext, operand: 'ifmap' | 'filter'): { window: SramWindow; stats: ReadBufferStats } {
  const { streams, operands, config } = ctx;
  const matrix = operand === 'ifmap' ? operands.ifmap : operands.filter;
  const source = operand === 'ifmap' ? streams.ifmap : streams.filter;
  const out = new Int32Array(Math.max(ctx.array.rows, ctx.array.cols));
  // A conv ifmap's first and last lines are searched with table-free addresses (same streams).
  const search = ctx.shortcuts && matrix instanceof Im2colMatrix ? tableFreeIfmap(ctx) : { ctx, source };
  const firstLine = findDemandLine(search.ctx, search.source, out, 1);
  const lastLine = findDemandLine(search.ctx, search.source, out, -1);
  const firstRequest = firstRequestLine(search.ctx, search.source, out, firstLine, operands.requestFloor[operand]);
  // Reads are served one cycle after the demand (hit latency).
  const window: SramWindow = { startCycle: firstLine + 1, stopCycle: lastLine + 1 };
  const sramWords = operand === 'ifmap' ? config.ifmapSramWords : config.filterSramWords;
  const distinct = operand === 'ifmap' ? distinctIfmapWords(operands.geometry) : matrix.addressSpace;
  const counters: CalcReadCounters = {
    sramWords, reads: distinct, closedEpochs: 0, lastCloseCycle: 0, firstRequestCycle: firstRequest, wordsLastEpoch: distinct,
  };
  if (ctx.shortcuts && distinct < calcEpochWords(sramWords)) return { window, stats: calcReadStats(counters) }; // one epoch
  if (ctx.shortcuts && matrix instanceof LinearMatrix) return { window, stats: calcReadStats(walkGemmTiles(ctx, operand, counters)) };
  if (ctx.shortcuts && ctx.dataflow === 'os' && operand === 'ifmap') return { window, stats: calcReadStats(walkOsIfmapPixels(ctx, counters)) };
  if (ctx.shortcuts && matrix instanceof Im2colMatrix) return { window, stats: calcReadStats(walkWsIsIfmap(ctx, counters)) };
  // The reference (shortcuts: false): every demanded word through the buffer.
  const buffer = new CalcReadBuffer(sramWords, matrix.addressSpace);
  buffer.setFirstRequestCycle(firstRequest);
  let foldStart = 0;
  for (let fc = 0; fc < ctx.colFolds; fc++) {
    for (let fr = 0; fr < ctx.rowFolds; fr++, foldStart += ctx.foldLines) {
      streams.setFold(fr, fc);
      for (let t = 0; t < ctx.foldLines; t++) buffer.serve(out, source.line(t, out), foldStart + t);
    }
  }
  return { window, stats: buffer.stats() };
}

/** The walk context with the conv ifmap addressed by Im2colAddress (for a few line searches). */
function tableFreeIfmap(ctx: WalkContext): { ctx: WalkContext; source: LineSource } {
  const operands = { ...ctx.operands, ifmap: new Im2colAddress(ctx.operands.geometry) };
  const streams = new DemandStreams(operands, ctx.array, ctx.dataflow);
  return { ctx: { ...ctx, operands, streams }, source: streams.ifmap };
}

/**
 * A GEMM operand's folds read whole tiles of distinct words; tiles are identical (same words in
 * the same order) or disjoint. So the words of a tile seen in the current epoch are always a
 * suffix of its demand order, from position `seenFrom`: the walk is O(1) per fold plus one scan
 * of the fold that ends the last epoch (for its cycle).
 */
function walkGemmTiles(ctx: WalkContext, operand: 'ifmap' | 'filter', base: CalcReadCounters): CalcReadCounters {
  const { streams, rowFolds, colFolds, foldLines } = ctx;
  const cap = calcEpochWords(base.sramWords);
  const tiles = streams.tileCount[operand];
  const tileEpoch = new Int32Array(tiles);
  const tileSeenFrom = new Float64Array(tiles);
  const tileWords = new Float64Array(tiles).fill(-1);
  const source = operand === 'ifmap' ? streams.ifmap : streams.filter;
  let epoch = 1;
  let words = 0;
  let reads = 0;
  let closedEpochs = 0;
  let lastClose = { fr: 0, fc: 0, foldStart: 0, position: 0 };
  let foldStart = 0;
  for (let fc = 0; fc < colFolds; fc++) {
    for (let fr = 0; fr < rowFolds; fr++, foldStart += foldLines) {
      const tile = streams.tileId(operand, fr, fc);
      // A tile's size is the same in every fold that reads it: point the streams at it once.
      let size = tileWords[tile] ?? indexOutOfRange(tile);
      if (size < 0) {
        streams.setFold(fr, fc);
        size = source.words;
        tileWords[tile] = size;
      }
      let seenFrom = tileEpoch[tile] === epoch ? tileSeenFrom[tile] ?? indexOutOfRange(tile) : size;
      let pos = 0;
      for (;;) {
        const fresh = seenFrom - pos;
        if (words + fresh < cap) {
          reads += fresh;
          words += fresh;
          break;
        }
        const toClose = cap - words; // the toClose-th fresh word ends the epoch
        reads += toClose;
        pos += toClose;
        lastClose = { fr, fc, foldStart, position: pos - 1 };
        epoch++;
        closedEpochs++;
        words = 0;
        seenFrom = size; // nothing of this tile is in the new epoch yet
        if (pos === size) break;
      }
      tileEpoch[tile] = epoch;
      tileSeenFrom[tile] = pos;
    }
  }
  const lastCloseCycle = closedEpochs > 0 ? lineOfPosition(ctx, source, lastClose) : 0;
  return { ...base, reads, closedEpochs, lastCloseCycle, wordsLastEpoch: words };
}

/** The demand line (cycle) of the `position`-th word of a fold's tile (a GEMM tile: every word is real). */
function lineOfPosition(
  ctx: WalkContext,
  source: SkewedTile | FlippedTile,
  at: { fr: number; fc: number; foldStart: number; position: number },
): number {
  ctx.streams.setFold(at.fr, at.fc);
  // Bisect the first line t whose lines [0, t] hold more than `position` words.
  let below = -1;
  let line = ctx.foldLines - 1;
  if (wordsBeforeLine(ctx, source, line + 1) <= at.position) throw new Error('walk-calc: tile position past the end of its fold');
  while (line - below > 1) {
    const mid = (below + line) >> 1;
    if (wordsBeforeLine(ctx, source, mid + 1) > at.position) line = mid;
    else below = mid;
  }
  return at.foldStart + line;
}

/**
 * Words on lines [0, t) of a tile without -1 entries. Skewed: column c holds rows on lines
 * [prefix + c, prefix + c + rows), a trapezoid; flipped: one full row per line over the last
 * usedRows of the first R lines.
 */
function wordsBeforeLine(ctx: WalkContext, source: SkewedTile | FlippedTile, t: number): number {
  if (source instanceof FlippedTile) {
    const start = ctx.array.rows - source.usedRows;
    return source.usedCols * Math.min(Math.max(t - start, 0), source.usedRows);
  }
  if (source.rows <= 0 || source.usedCols <= 0) return 0;
  const x = t - source.prefix;
  return cappedRamp(x, source.rows) - cappedRamp(x - source.usedCols, source.rows);
}

/**
 * SCALE-sim's "first request" of a CALC read buffer: the first demand line whose largest address
 * is > -1, i.e. with a relative address >= `floor` (0 unless the operand's offset is negative);
 * cycle 0 if there is none.
 */
function firstRequestLine(ctx: WalkContext, source: LineSource, out: Int32Array, firstLine: number, floor: number): number {
  if (floor === 0) return firstLine;
  const line = findDemandLine(ctx, source, out, 1, (n) => out.subarray(0, n).some((a) => a >= floor));
  return Math.max(line, 0);
}

/** The first (direction 1) or last (-1) demand line holding a real address of `source` (that `wanted` accepts). */
function findDemandLine(
  ctx: WalkContext,
  source: LineSource,
  out: Int32Array,
  direction: 1 | -1,
  wanted: (count: number) => boolean = (count) => count > 0,
): number {
  const { streams, rowFolds, colFolds, foldLines } = ctx;
  const folds = rowFolds * colFolds;
  for (let i = 0; i < folds; i++) {
    const fold = direction === 1 ? i : folds - 1 - i;
    const fc = Math.floor(fold / rowFolds);
    streams.setFold(fold - fc * rowFolds, fc);
    for (let j = 0; j < foldLines; j++) {
      const t = direction === 1 ? j : foldLines - 1 - j;
      if (wanted(source.line(t, out))) return fold * foldLines + t;
    }
  }
  return -1;
}
