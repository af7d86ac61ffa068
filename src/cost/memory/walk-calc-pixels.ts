/**
 * CALC reads of an os convolution's ifmap, by input pixel instead of by word.
 *
 * os fold fr streams im2col rows m = fr*R + c down array column c: line t of the fold holds
 * element (m, k = t - c), k = (dy*S + dx)*C + ch. So each window tap (c, dy, dx) reads all C
 * channels of one input pixel on C consecutive lines ("a run"), and the occurrences of word
 * (pixel, ch) are its runs shifted by ch. Hence every pixel's first occurrence in the tile is
 * (t0 + ch, c0) and its last (t1 + ch, c1) for one pair of runs, whatever the channel. The
 * CALC epoch walk (read-buffer-calc.ts) reduces to pixels and runs:
 * - the words of a pixel seen in the current epoch are a channel suffix [from, C): a tile read
 *   whole sees all, and an epoch that begins inside a tile has seen the words occurring after its
 *   start there (from = start - t1, give or take the column);
 * - the distinct words a run set covers between two positions are, per pixel, a union of channel
 *   intervals, one per run; so an epoch's end is found by binary search over lines, then columns.
 * A fold costs O(pixels) when no epoch ends in it, else O(runs x log(lines)) per epoch end.
 */
import { indexOutOfRange } from '../../errors.js';
import { usedInFold } from '../systolic/mapping.js';
import type { CalcReadCounters } from './read-buffer-calc.js';
import { calcEpochWords } from './read-buffer-calc.js';
import type { WalkContext } from './walk-context.js';

/** One fold tile: its pixels (Y*W + X) and, per pixel, its runs by (line, column) descending. */
interface TileRuns {
  pixel: Int32Array;
  /** CSR: the runs of pixel i are [runStart[i], runStart[i+1]). */
  runStart: Int32Array;
  runLine: Int32Array;
  runCol: Int32Array;
}

/** A demand position: (line, column) of the fold, ordered line first. */
interface Position {
  line: number;
  col: number;
}

const BEFORE_TILE: Position = { line: -1, col: Number.MAX_SAFE_INTEGER };

export function walkOsIfmapPixels(ctx: WalkContext, base: CalcReadCounters): CalcReadCounters {
  const { conv } = ctx.operands.geometry;
  const C = conv.channels;
  const cap = calcEpochWords(base.sramWords);
  const pixels = conv.ifmapHeight * conv.ifmapWidth;
  const builder = new TileRunBuilder(ctx);
  const reused = ctx.colFolds > 1;
  const cache: (TileRuns | undefined)[] = [];
  /** Words of pixel p seen in epoch seenEpoch[p]: channels [seenFrom[p], C). */
  const seenEpoch = new Int32Array(pixels);
  const seenFrom = new Int32Array(pixels);
  const tileSeenEpoch = new Int32Array(ctx.rowFolds);
  const perLine = new Int32Array(ctx.foldLines + 1);
  const columns = new Int32Array(ctx.array.rows);
  let epoch = 1;
  let words = 0;
  let reads = 0;
  let closedEpochs = 0;
  let lastCloseCycle = 0;
  /** Unseen channels (a prefix [0, n)) of pixel p in the current epoch. */
  const unseen = (p: number): number => (seenEpoch[p] === epoch ? seenFrom[p] ?? indexOutOfRange(p) : C);

  let foldStart = 0;
  for (let fc = 0; fc < ctx.colFolds; fc++) {
    for (let fr = 0; fr < ctx.rowFolds; fr++, foldStart += ctx.foldLines) {
      if (tileSeenEpoch[fr] === epoch) continue; // every word hits
      let tile = cache[fr];
      if (tile === undefined) {
        tile = builder.build(fr);
        if (reused) cache[fr] = tile;
      }
      const { pixel } = tile;
      let from = BEFORE_TILE;
      for (;;) {
        let fresh = 0;
        if (from === BEFORE_TILE) for (let i = 0; i < pixel.length; i++) fresh += unseen(pixel[i] ?? indexOutOfRange(i));
        else for (let i = 0; i < pixel.length; i++) fresh += coveredChannels(tile, i, C, from);
        if (words + fresh < cap) {
          reads += fresh;
          words += fresh;
          if (from === BEFORE_TILE) tileSeenEpoch[fr] = epoch;
          for (let i = 0; i < pixel.length; i++) {
            const p = pixel[i] ?? indexOutOfRange(i);
            // Seen now: everything (read whole) or the channels occurring after `from`.
            const first = from === BEFORE_TILE ? 0 : C - coveredChannels(tile, i, C, from);
            if (first >= C) continue;
            seenEpoch[p] = epoch;
            seenFrom[p] = first;
          }
          break;
        }
        // The need-th fresh word ends the epoch: find its line, then its column.
        const need = cap - words;
        const at = locateFreshWord(tile, unseen, from, need, perLine, columns);
        const line = at.line;
        reads += need;
        closedEpochs++;
        lastCloseCycle = foldStart + line;
        epoch++;
        words = 0;
        from = at;
      }
    }
  }
  return { ...base, reads, closedEpochs, lastCloseCycle, wordsLastEpoch: words };
}

/**
 * Channels of tile pixel i (all C: called in an epoch begun inside the tile) occurring after
 * `from`: run r holds channels ch >= from.line - line_r (+1 unless its column is past
 * from.col); their union is a suffix, given by the latest run.
 */
function coveredChannels(tile: TileRuns, i: number, channels: number, from: Position): number {
  const r = tile.runStart[i] ?? indexOutOfRange(i);
  const lo = Math.max(0, from.line - (tile.runLine[r] ?? indexOutOfRange(r)) + ((tile.runCol[r] ?? indexOutOfRange(r)) > from.col ? 0 : 1));
  return Math.max(0, channels - lo);
}

/**
 * The position of the need-th word first read after `from` (unseen channels only). Going through
 * a pixel's runs from the earliest, each run is the first reader of the channels the earlier ones
 * do not reach: a contiguous channel range, so contiguous lines. A difference array over lines
 * then gives the line, and the words on that line their columns.
 */
function locateFreshWord(
  tile: TileRuns,
  unseen: (p: number) => number,
  from: Position,
  need: number,
  perLine: Int32Array,
  columns: Int32Array,
): Position {
  perLine.fill(0);
  const { pixel, runStart, runLine, runCol } = tile;
  const lines = perLine.length - 1;
  const eachSegment = (visit: (line0: number, count: number, col: number) => void): void => {
    for (let i = 0; i < pixel.length; i++) {
      let top = unseen(pixel[i] ?? indexOutOfRange(i)); // channels [lo, top) are first read by the current run
      for (let r = (runStart[i + 1] ?? indexOutOfRange(i + 1)) - 1; r >= (runStart[i] ?? indexOutOfRange(i)) && top > 0; r--) {
        const line = runLine[r] ?? indexOutOfRange(r);
        const col = runCol[r] ?? indexOutOfRange(r);
        const lo = Math.max(0, from.line - line + (col > from.col ? 0 : 1));
        if (lo < top) {
          visit(line + lo, top - lo, col);
          top = lo;
        }
      }
    }
  };
  eachSegment((line0, count) => {
    perLine[line0] = (perLine[line0] ?? indexOutOfRange(line0)) + 1;
    const end = Math.min(lines, line0 + count);
    perLine[end] = (perLine[end] ?? indexOutOfRange(end)) - 1;
  });
  let line = 0;
  let before = 0;
  for (let running = 0; ; line++) {
    running += perLine[line] ?? indexOutOfRange(line);
    if (before + running >= need) break;
    before += running;
  }
  let n = 0;
  eachSegment((line0, count, col) => {
    if (line0 <= line && line < line0 + count) columns[n++] = col;
  });
  const onLine = columns.subarray(0, n).sort();
  return { line, col: (onLine[need - before - 1] ?? indexOutOfRange(need - before - 1)) };
}

/** Groups a fold's window taps (column c, tap dy, dx) by input pixel. */
class TileRunBuilder {
  private readonly index: Int32Array;
  private readonly tapPixel: Int32Array;
  private readonly tapLine: Int32Array;
  private readonly tapCol: Int32Array;
  private readonly found: Int32Array;
  private readonly counts: Int32Array;

  constructor(private readonly ctx: WalkContext) {
    const { conv } = ctx.operands.geometry;
    this.index = new Int32Array(conv.ifmapHeight * conv.ifmapWidth).fill(-1);
    const taps = ctx.array.rows * conv.filterHeight * conv.filterWidth;
    this.tapPixel = new Int32Array(taps);
    this.tapLine = new Int32Array(taps);
    this.tapCol = new Int32Array(taps);
    this.found = new Int32Array(taps);
    this.counts = new Int32Array(taps);
  }

  build(fr: number): TileRuns {
    const { geometry } = this.ctx.operands;
    const { conv } = geometry;
    const { index, tapPixel, tapLine, tapCol, found, counts } = this;
    const R = this.ctx.array.rows;
    const used = usedInFold(geometry.gemm.m, R, fr);
    let taps = 0;
    let pixels = 0;
    for (let c = 0; c < used; c++) {
      const m = fr * R + c;
      const y = Math.floor(m / geometry.ofmapWidth) * conv.strideHeight;
      const x = (m % geometry.ofmapWidth) * conv.strideWidth;
      for (let dy = 0; dy < conv.filterHeight && y + dy < conv.ifmapHeight; dy++) {
        for (let dx = 0; dx < conv.filterWidth && x + dx < conv.ifmapWidth; dx++) {
          const p = (y + dy) * conv.ifmapWidth + x + dx;
          let i = index[p] ?? indexOutOfRange(p);
          if (i < 0) {
            i = pixels++;
            index[p] = i;
            found[i] = p;
            counts[i] = 0;
          }
          counts[i] = (counts[i] ?? indexOutOfRange(i)) + 1;
          tapPixel[taps] = i;
          tapLine[taps] = c + (dy * conv.filterWidth + dx) * conv.channels;
          tapCol[taps++] = c;
        }
      }
    }
    const runStart = new Int32Array(pixels + 1);
    for (let i = 0; i < pixels; i++) {
      index[(found[i] ?? indexOutOfRange(i))] = -1;
      runStart[i + 1] = (runStart[i] ?? indexOutOfRange(i)) + (counts[i] ?? indexOutOfRange(i));
    }
    const fill = runStart.slice(0, pixels);
    const runLine = new Int32Array(taps);
    const runCol = new Int32Array(taps);
    for (let j = 0; j < taps; j++) {
      const pixel = tapPixel[j] ?? indexOutOfRange(j);
      const slot = fill[pixel] ?? indexOutOfRange(pixel);
      fill[pixel] = slot + 1;
      runLine[slot] = tapLine[j] ?? indexOutOfRange(j);
      runCol[slot] = tapCol[j] ?? indexOutOfRange(j);
    }
    for (let i = 0; i < pixels; i++) sortDescending(runLine, runCol, (runStart[i] ?? indexOutOfRange(i)), (runStart[i + 1] ?? indexOutOfRange(i + 1)));
    return { pixel: found.slice(0, pixels), runStart, runLine, runCol };
  }
}

/** Insertion sort of [start, end) by (line, column) descending (a pixel has few runs). */
function sortDescending(line: Int32Array, col: Int32Array, start: number, end: number): void {
  for (let j = start + 1; j < end; j++) {
    const t = line[j] ?? indexOutOfRange(j);
    const c = col[j] ?? indexOutOfRange(j);
    let k = j - 1;
    for (; k >= start; k--) {
      const lineK = line[k] ?? indexOutOfRange(k);
      const colK = col[k] ?? indexOutOfRange(k);
      if (lineK > t || (lineK === t && colK >= c)) break;
      line[k + 1] = lineK;
      col[k + 1] = colK;
    }
    line[k + 1] = t;
    col[k + 1] = c;
  }
}
