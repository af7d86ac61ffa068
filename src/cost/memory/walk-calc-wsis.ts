/**
 * CALC reads of a ws or is convolution's ifmap, epoch by epoch instead of word by word.
 *
 * An epoch (read-buffer-calc.ts) is a stretch of the demand stream, from just after the word that
 * closed the previous one, holding `cap` distinct words. Inside any stretch the elements of im2col
 * column k form at most two ofmap-pixel ranges, so its distinct words come in closed form from
 * those ranges (tap-union.ts). The closing word is then found by search: galloping over folds,
 * bisecting the line in the closing fold, then the column on that line. Each probe costs
 * O(K + shapes), none per word or line.
 *
 * ws: fold tile fr holds columns k = fr*R + c; line t, array row c reads ofmap pixel m = t - R - c
 *     (skewed), columns in order. The row-fold tiles are streamed once per column fold, so a
 *     stretch holds each k at most twice (an epoch never spans a whole pass: that holds every word).
 * is: fold (fc, fr) loads columns k = fr*R + R-1-t on lines t < R (bottom row first), each line the
 *     ofmap pixels [fc*Cols, fc*Cols + Cols) in order. Every element is read once, and the pixels of
 *     one k in a stretch are one range (its m-blocks are consecutive).
 */
import { indexOutOfRange } from '../../errors.js';
import { usedInFold } from '../systolic/mapping.js';
import { type CalcReadCounters, calcEpochWords } from './read-buffer-calc.js';
import { ConvTapUnion, TapRanges } from './tap-union.js';
import type { WalkContext } from './walk-context.js';

/** A demand position: fold g (in demand order), line t of the fold, array row/column c on it. */
interface Position {
  g: number;
  t: number;
  c: number;
}

/** Sets the ranges of every k for the stretch (from, to] and returns the channels they touch. */
type FillRanges = (from: Position, to: Position) => void;

export function walkWsIsIfmap(ctx: WalkContext, base: CalcReadCounters): CalcReadCounters {
  const { geometry } = ctx.operands;
  const cap = calcEpochWords(base.sramWords);
  const K = geometry.gemm.k;
  const channels = geometry.conv.channels;
  const union = new ConvTapUnion(geometry);
  const ranges = new TapRanges(K);
  const G = ctx.rowFolds * ctx.colFolds;
  // A ws stretch reaching over a whole pass holds every word: an epoch closes within RF + 1 folds.
  const reach = ctx.dataflow === 'ws' ? ctx.rowFolds : G;
  const fill = ctx.dataflow === 'ws' ? wsRanges(ctx, ranges) : isRanges(ctx, ranges);
  const words = (from: Position, to: Position): number => {
    fill(from, to);
    let total = 0;
    for (let ch = 0; ch < channels; ch++) total += union.channelWords(ch, ranges);
    return total;
  };
  const END = Number.MAX_SAFE_INTEGER;
  const foldEnd = (g: number): Position => ({ g, t: END, c: END });
  const { first: firstLine, last: lastLine, usedLine } = foldLayout(ctx);

  let from: Position = { g: 0, t: -1, c: END };
  let reads = 0;
  let closedEpochs = 0;
  let lastCloseCycle = 0;
  for (;;) {
    // Gallop, then bisect, to the first fold whose end holds cap distinct words.
    let below = from.g - 1;
    let g = -1;
    for (let step = 1; ; step *= 2) {
      const end = Math.min(G - 1, from.g + reach);
      const probe = Math.min(end, from.g - 1 + step);
      if (words(from, foldEnd(probe)) >= cap) {
        g = probe;
        break;
      }
      below = probe;
      if (probe === end) break;
    }
    if (g < 0) break;
    while (g - below > 1) {
      const mid = (below + g) >> 1;
      if (words(from, foldEnd(mid)) >= cap) g = mid;
      else below = mid;
    }
    // The line, then the column on it.
    let lo = (g === from.g ? Math.max(from.t, firstLine(g)) : firstLine(g)) - 1; // words(.., lo) < cap
    let t = lastLine(g);
    while (t - lo > 1) {
      const mid = Math.floor((lo + t) / 2);
      if (words(from, { g, t: mid, c: END }) >= cap) t = mid;
      else lo = mid;
    }
    let cLo = -1;
    let c = usedLine(g) - 1;
    while (c - cLo > 1) {
      const mid = (cLo + c) >> 1;
      if (words(from, { g, t, c: mid }) >= cap) c = mid;
      else cLo = mid;
    }
    const to = { g, t, c };
    if (words(from, to) !== cap) throw new Error('walk-calc-wsis: an epoch did not close on its cap-th word');
    reads += cap;
    closedEpochs++;
    lastCloseCycle = g * ctx.foldLines + t;
    from = to;
  }
  const wordsLastEpoch = from.g < G ? words(from, foldEnd(G - 1)) : 0;
  reads += wordsLastEpoch;
  return { ...base, reads, closedEpochs, lastCloseCycle, wordsLastEpoch };
}

/** Per fold: its first and last line holding ifmap elements, and the array rows/columns a line spans. */
function foldLayout(ctx: WalkContext): { first: (g: number) => number; last: (g: number) => number; usedLine: (g: number) => number } {
  const R = ctx.array.rows;
  const { m: M, k: K } = ctx.operands.geometry.gemm;
  const used = (g: number): number => usedInFold(K, R, g % ctx.rowFolds);
  if (ctx.dataflow === 'ws') return { first: () => R, last: (g) => R + used(g) + M - 2, usedLine: used };
  const cols = (g: number): number => usedInFold(M, ctx.array.cols, Math.floor(g / ctx.rowFolds));
  return { first: (g) => R - used(g), last: () => R - 1, usedLine: cols };
}

/**
 * ws: fold g streams row-fold tile fr = g % RF. In a stretch (from, to] column k = fr*R + c holds
 * ofmap pixels m = t - R - c for the lines t after `from` (on from's line, only columns after it)
 * up to `to` (on its line, columns up to it).
 */
function wsRanges(ctx: WalkContext, ranges: TapRanges): FillRanges {
  const R = ctx.array.rows;
  const RF = ctx.rowFolds;
  const { m: M, k: K } = ctx.operands.geometry.gemm;
  const clamp = (x: number): number => Math.min(M, Math.max(0, x));
  return (from, to) => {
    ranges.a1.fill(0);
    ranges.b1.fill(0);
    ranges.a2.fill(0);
    ranges.b2.fill(0);
    const last = Math.min(to.g, ctx.rowFolds * ctx.colFolds - 1);
    if (last - from.g >= RF + 1) throw new Error('walk-calc-wsis: a ws stretch spans more than a pass');
    for (let g = from.g; g <= last; g++) {
      const fr = g % RF;
      const k0 = fr * R;
      const used = usedInFold(K, R, fr);
      const second = g - from.g >= RF; // the tile's second time in the stretch
      for (let c = 0; c < used; c++) {
        const a = g === from.g ? clamp(from.t - R - c + (c > from.c ? 0 : 1)) : 0;
        const b = g === to.g ? clamp(to.t - R - c + (c > to.c ? 0 : 1)) : M;
        const k = k0 + c;
        if (second) {
          ranges.a2[k] = a;
          ranges.b2[k] = b;
        } else {
          ranges.a1[k] = a;
          ranges.b1[k] = b;
        }
      }
    }
  };
}

/**
 * is: fold g = fc*RF + fr. Column k sits on line R-1-(k - fr*R) of its row fold; in m-block fc its
 * pixels are [fc*Cols, fc*Cols + Cols). A stretch starts, in from's m-block, after from's line
 * (whole block for k read later in the block, from's column on from's line, none before) and ends
 * likewise in to's m-block.
 */
function isRanges(ctx: WalkContext, ranges: TapRanges): FillRanges {
  const R = ctx.array.rows;
  const cols = ctx.array.cols;
  const RF = ctx.rowFolds;
  const { m: M, k: K } = ctx.operands.geometry.gemm;
  /** (row fold, line) of k as one number, increasing in demand order within an m-block. */
  const orderOf = (k: number): number => {
    const fr = Math.floor(k / R);
    return fr * R + (R - 1 - (k - fr * R));
  };
  const order = new Float64Array(K);
  for (let k = 0; k < K; k++) order[k] = orderOf(k);
  return (from, to) => {
    const fcFrom = Math.floor(from.g / RF);
    const fcTo = Math.floor(to.g / RF);
    // Fold ends and starts fall between the keys of two lines.
    const keyFrom = (from.g - fcFrom * RF) * R + Math.min(Math.max(from.t, -0.5), R - 0.5);
    const keyTo = (to.g - fcTo * RF) * R + Math.min(Math.max(to.t, -0.5), R - 0.5);
    const blockFrom = fcFrom * cols;
    const blockTo = fcTo * cols;
    const atFrom = blockFrom + Math.min(from.c, cols - 1) + 1;
    const atTo = blockTo + Math.min(to.c, cols - 1) + 1;
    for (let k = 0; k < K; k++) {
      const key = order[k] ?? indexOutOfRange(k);
      const a = key > keyFrom ? blockFrom : key === keyFrom ? atFrom : blockFrom + cols;
      const b = key < keyTo ? blockTo + cols : key === keyTo ? atTo : blockTo;
      ranges.set(k, Math.max(0, a), Math.min(M, b));
    }
  };
}
