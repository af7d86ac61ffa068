/**
 * CALC reads of an os convolution's ifmap, epoch by epoch instead of word by word.
 *
 * os fold fr streams im2col rows m = fr*R + c down array column c: line t of the fold holds
 * element (m, k = t - c), k = (dy*S + dx)*C + ch. So each window tap (c, dy, dx) reads all C
 * channels of one input pixel on C consecutive lines ("a run"), and the occurrences of word
 * (pixel, ch) are its runs shifted by ch. A fold tile reads every channel of the pixels its
 * windows cover; the demand stream is the row-fold tiles in order, once per column fold.
 *
 * An epoch (read-buffer-calc.ts) begins inside some tile s: it has seen the words of tile s after
 * the word that closed the previous epoch ("carried": per pixel a channel suffix), then whole
 * tiles s+1, s+2, ... Its distinct words through tile j are therefore
 *   C x |pixels covered by the windows of tiles s+1..j|  +  carried words of pixels none of those covers,
 * the first term in closed form (conv-coverage.ts), the second a suffix sum over the carried
 * pixels sorted by the first later tile covering them. A galloping search over j finds the tile
 * that closes the epoch; only there is the tile resolved into runs, to find the closing word's line
 * and column. Cost: O(epochs x (log folds x input rows + one tile's taps)), none per word or per fold.
 */
import { indexOutOfRange } from '../../errors.js';
import { usedInFold } from '../systolic/mapping.js';
import type { CalcReadCounters } from './read-buffer-calc.js';
import { calcEpochWords } from './read-buffer-calc.js';
import { ConvCoverage } from './conv-coverage.js';
import { OsTileOccurrences } from './os-tile-occurrences.js';
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
  const { geometry } = ctx.operands;
  const { conv } = geometry;
  const C = conv.channels;
  const width = conv.ifmapWidth;
  const cap = calcEpochWords(base.sramWords);
  const R = ctx.array.rows;
  const M = geometry.gemm.m;
  const RF = ctx.rowFolds;
  const G = RF * ctx.colFolds; // tiles in demand order; tile g reads row fold g % RF
  const coverage = new ConvCoverage(geometry);
  const builder = new TileRunBuilder(ctx);
  const perLine = new Int32Array(ctx.foldLines + 1);
  const columns = new Int32Array(R);
  const allPixels = coverage.countPixels(0, M);
  const occurrences = new OsTileOccurrences(geometry, coverage, R);
  /** The closing tile's pixels with unseen channels (indexes into `occurrences`) and how many. */
  const fresh = new Int32Array(occurrences.pixel.length);
  const freshChannels = new Int32Array(occurrences.pixel.length);
  const locateBuffers = {
    starts: new Int32Array(occurrences.pixel.length),
    ends: new Int32Array(occurrences.pixel.length),
    columns,
  };

  /** Pixels covered by the windows of tiles g0..g1 (fewer than RF tiles: one or two m ranges). */
  const tilesPixels = (g0: number, g1: number): number => {
    if (g1 < g0) return 0;
    if (g1 - g0 + 1 >= RF) return allPixels;
    const a = (g0 % RF) * R;
    const b = Math.min(M, ((g1 % RF) + 1) * R);
    return Math.floor(g0 / RF) === Math.floor(g1 / RF) ? coverage.countPixels(a, b) : coverage.countPixels(a, M, 0, b);
  };

  // The carried words of the current epoch (see above), stamped per input pixel.
  const carriedStamp = new Int32Array(conv.ifmapHeight * width);
  const carriedChannels = new Int32Array(conv.ifmapHeight * width);
  let carriedCover = new Float64Array(0); // first later tile covering each carried pixel, ascending
  let carriedFrom = new Float64Array(1); // carriedFrom[i]: carried words of entries i.. (suffix sums)
  const carriedKeys = new Float64Array(occurrences.pixel.length);
  let epoch = 1;
  let s = -1; // the tile the epoch began in (-1: before the first tile)
  let from = BEFORE_TILE; // the position in tile s the epoch began after
  let tile: TileRuns | undefined;
  let tileIndex = -1;
  let reads = 0;
  let closedEpochs = 0;
  let lastCloseCycle = 0;
  const carriedTotal = (): number => carriedFrom[0] ?? 0;
  /** The epoch's distinct words through tile j >= s. */
  const wordsThrough = (j: number): number => {
    let lo = 0;
    let hi = carriedCover.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((carriedCover[mid] ?? indexOutOfRange(mid)) > j) hi = mid;
      else lo = mid + 1;
    }
    return C * tilesPixels(s + 1, j) + (carriedFrom[lo] ?? indexOutOfRange(lo));
  };
  const runsOf = (g: number): TileRuns => {
    if (tile === undefined || tileIndex !== g % RF) {
      tileIndex = g % RF;
      tile = builder.build(tileIndex);
    }
    return tile;
  };
  /** Ends the epoch at position `at` of tile g; the next one carries tile g's words after it. */
  const close = (g: number, at: Position): void => {
    reads += cap;
    closedEpochs++;
    lastCloseCycle = g * ctx.foldLines + at.line;
    epoch++;
    s = g;
    from = at;
    const occ = occurrences.load(g % RF);
    // Carried pixels keyed by (first later tile covering them, channels), sorted natively.
    const keys = carriedKeys;
    let n = 0;
    const base = g - (g % RF);
    for (let i = 0; i < occ.count; i++) {
      // Channels after `at`: those whose last occurrence (lastLine + ch, lastCol) follows it.
      const lastCol = occ.lastCol[i] ?? indexOutOfRange(i);
      const q = C - Math.max(0, at.line - (occ.lastLine[i] ?? indexOutOfRange(i)) + (lastCol > at.col ? 0 : 1));
      if (q <= 0) continue;
      const p = occ.pixel[i] ?? indexOutOfRange(i);
      carriedStamp[p] = epoch;
      carriedChannels[p] = q;
      // The first later tile covering the pixel: in this column fold, else in the next.
      const after = occ.coverAfter[i] ?? indexOutOfRange(i);
      const cover = after >= 0 ? base + Math.floor(after / R) : base + RF + Math.floor((occ.coverFirst[i] ?? indexOutOfRange(i)) / R);
      keys[n++] = cover * (C + 1) + q;
    }
    const sorted = keys.subarray(0, n).sort();
    carriedCover = new Float64Array(n);
    carriedFrom = new Float64Array(n + 1);
    for (let i = n - 1; i >= 0; i--) {
      const key = sorted[i] ?? indexOutOfRange(i);
      const cover = Math.floor(key / (C + 1));
      carriedCover[i] = cover;
      carriedFrom[i] = (carriedFrom[i + 1] ?? 0) + key - cover * (C + 1);
    }
  };

  for (;;) {
    // The carried words alone close the epoch: again inside tile s.
    while (s >= 0 && carriedTotal() >= cap) {
      close(s, locateFreshWord(runsOf(s), () => C, from, cap, perLine, columns));
    }
    if (s === G - 1) break;
    // Gallop, then bisect, to the first tile j whose end holds cap distinct words.
    const last = G - 1;
    let below = s; // wordsThrough(below) < cap
    let j = -1;
    for (let step = 1; ; step *= 2) {
      const probe = Math.min(last, s + step);
      if (wordsThrough(probe) >= cap) {
        j = probe;
        break;
      }
      below = probe;
      if (probe === last) break;
    }
    if (j < 0) break;
    while (j - below > 1) {
      const mid = (below + j) >> 1;
      if (wordsThrough(mid) >= cap) j = mid;
      else below = mid;
    }
    const need = cap - wordsThrough(j - 1);
    // Unseen channels (a prefix) of the closing tile's pixels.
    const occ = occurrences.load(j % RF);
    let n = 0;
    // Tiles s+1..j-1 read ofmap pixels [from, M) and/or [head, m0 of tile j) (none if s + 1 = j).
    const coveredFrom = ((s + 1) % RF) * R;
    const toEnd = s + 1 < j && (Math.floor((s + 1) / RF) !== Math.floor((j - 1) / RF) || j % RF === 0);
    const head = s + 1 < j ? (toEnd ? 0 : coveredFrom) : Infinity;
    const all = j - s - 1 >= RF;
    for (let i = 0; i < occ.count; i++) {
      if (all) break;
      // Seen whole if a window of tiles s+1..j-1 covers the pixel.
      if ((occ.coverBefore[i] ?? indexOutOfRange(i)) >= head) continue;
      if (toEnd && (occ.coverLast[i] ?? indexOutOfRange(i)) >= coveredFrom) continue;
      const p = occ.pixel[i] ?? indexOutOfRange(i);
      const u = carriedStamp[p] === epoch ? C - (carriedChannels[p] ?? indexOutOfRange(p)) : C;
      if (u === 0) continue;
      fresh[n] = i;
      freshChannels[n++] = u;
    }
    close(j, locateFirstReads(occ, fresh, freshChannels, n, need, locateBuffers));
  }
  const wordsLastEpoch = wordsThrough(G - 1);
  reads += wordsLastEpoch;
  return { ...base, reads, closedEpochs, lastCloseCycle, wordsLastEpoch };
}

/**
 * The position of the need-th word first read in a tile whose pixel fresh[f] has its channels
 * [0, freshChannels[f]) unseen: they are first read on lines firstLine .. firstLine + unseen - 1,
 * all in the pixel's first column. A sweep over the sorted segment starts and ends finds the
 * line; that line's words are then ordered by column.
 */
function locateFirstReads(
  occ: OsTileOccurrences,
  fresh: Int32Array,
  freshChannels: Int32Array,
  n: number,
  need: number,
  buffers: { starts: Int32Array; ends: Int32Array; columns: Int32Array },
): Position {
  const { starts, ends, columns } = buffers;
  for (let f = 0; f < n; f++) {
    const first = occ.firstLine[fresh[f] ?? indexOutOfRange(f)] ?? indexOutOfRange(f);
    starts[f] = first;
    ends[f] = first + (freshChannels[f] ?? indexOutOfRange(f));
  }
  const s = starts.subarray(0, n).sort();
  const e = ends.subarray(0, n).sort();
  // Lines [line, next event) each hold `active` fresh words; `words` are on lines before `line`.
  let words = 0;
  let active = 0;
  let line = s[0] ?? indexOutOfRange(0);
  let si = 0;
  let ei = 0;
  for (;;) {
    while (si < n && s[si] === line) {
      active++;
      si++;
    }
    while (ei < n && e[ei] === line) {
      active--;
      ei++;
    }
    const next = Math.min(si < n ? (s[si] ?? indexOutOfRange(si)) : Infinity, ei < n ? (e[ei] ?? indexOutOfRange(ei)) : Infinity);
    if (next === Infinity) throw new Error('walk-calc-pixels: fewer fresh words than the epoch needs');
    if (words + active * (next - line) >= need) break;
    words += active * (next - line);
    line = next;
  }
  const skip = Math.floor((need - words - 1) / active); // whole lines before the closing one
  line += skip;
  const before = words + skip * active;
  let k = 0;
  for (let f = 0; f < n; f++) {
    const i = fresh[f] ?? indexOutOfRange(f);
    const first = occ.firstLine[i] ?? indexOutOfRange(i);
    if (first <= line && line < first + (freshChannels[f] ?? indexOutOfRange(f))) columns[k++] = occ.firstCol[i] ?? indexOutOfRange(i);
  }
  const onLine = columns.subarray(0, k).sort();
  return { line, col: onLine[need - before - 1] ?? indexOutOfRange(need - before - 1) };
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
