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

/** Sets the ranges of the stretch (from, to] for columns k in [kLo, kHi). */
type FillRanges = (from: Position, to: Position, kLo: number, kHi: number) => void;

const END = Number.MAX_SAFE_INTEGER;

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
    fill(from, to, 0, K);
    let total = 0;
    for (let ch = 0; ch < channels; ch++) total += union.channelWords(ch, ranges);
    return total;
  };
  // Inside fold g only the columns k of its row fold move with the stretch's end: the words of
  // the other channels are counted once per search.
  const touched = new Uint8Array(channels);
  const touchedList = new Int32Array(channels);
  let touchedCount = 0;
  let kLo = 0;
  let kHi = 0;
  let untouchedWords = 0;
  const focus = (from: Position, g: number): void => {
    const R = ctx.array.rows;
    kLo = (g % ctx.rowFolds) * R;
    kHi = Math.min(K, kLo + R);
    touched.fill(0);
    touchedCount = 0;
    for (let k = kLo; k < kHi && touchedCount < channels; k++) {
      const ch = k % channels;
      if (touched[ch] === 0) {
        touched[ch] = 1;
        touchedList[touchedCount++] = ch;
      }
    }
    fill(from, { g, t: END, c: END }, 0, K);
    untouchedWords = 0;
    for (let ch = 0; ch < channels; ch++) if (touched[ch] === 0) untouchedWords += union.channelWords(ch, ranges);
  };
  const wordsInFold = (from: Position, to: Position): number => {
    fill(from, to, kLo, kHi);
    let total = untouchedWords;
    for (let i = 0; i < touchedCount; i++) total += union.channelWords(touchedList[i] ?? indexOutOfRange(i), ranges);
    return total;
  };
  const { first: firstLine, last: lastLine, usedLine } = foldLayout(ctx);
  // The stretch's end, reused by every probe (no allocation per probe).
  const probeEnd: Position = { g: 0, t: 0, c: 0 };
  const at = (g: number, t: number, c: number): Position => {
    probeEnd.g = g;
    probeEnd.t = t;
    probeEnd.c = c;
    return probeEnd;
  };

  let from: Position = { g: 0, t: -1, c: END };
  let reads = 0;
  let closedEpochs = 0;
  let lastCloseCycle = 0;
  let span = 0;
  for (;;) {
    // Gallop to a fold whose end holds cap distinct words, then search back to the first such.
    // Epochs span similar numbers of folds: the gallop starts at the last epoch's span.
    let below = from.g - 1;
    let belowWords = 0;
    let g = -1;
    let gWords = 0;
    const end = Math.min(G - 1, from.g + reach);
    for (let probe = Math.min(end, from.g + span), step = 1; ; step *= 2) {
      const probeWords = words(from, at(probe, END, END));
      if (probeWords >= cap) {
        g = probe;
        gWords = probeWords;
        break;
      }
      below = probe;
      belowWords = probeWords;
      if (probe === end) break;
      probe = Math.min(end, probe + step);
    }
    if (g < 0) break;
    const fold = firstReaching({ x: below, words: belowWords }, { x: g, words: gWords }, cap, (x) => words(from, at(x, END, END)));
    g = fold.x;
    span = g - from.g;
    // The line, then the column on it. Lines up to `lo` hold what the folds before g hold.
    const lo = (g === from.g ? Math.max(from.t, firstLine(g)) : firstLine(g)) - 1;
    focus(from, g);
    const line = firstReaching({ x: lo, words: g === from.g ? 0 : fold.belowWords }, { x: lastLine(g), words: fold.words }, cap, (x) =>
      wordsInFold(from, at(g, x, END)),
    );
    const t = line.x;
    const column = firstReaching({ x: -1, words: line.belowWords }, { x: usedLine(g) - 1, words: line.words }, cap, (x) =>
      wordsInFold(from, at(g, t, x)),
    );
    if (column.words !== cap) throw new Error('walk-calc-wsis: an epoch did not close on its cap-th word');
    const to = { g, t, c: column.x };
    reads += cap;
    closedEpochs++;
    lastCloseCycle = g * ctx.foldLines + t;
    from = to;
  }
  const wordsLastEpoch = from.g < G ? words(from, at(G - 1, END, END)) : 0;
  reads += wordsLastEpoch;
  return { ...base, reads, closedEpochs, lastCloseCycle, wordsLastEpoch };
}

/**
 * The smallest x in (lo.x, hi.x] with f(x) >= cap, f non-decreasing, f(lo.x) < cap <= f(hi.x); also
 * f there and f(x - 1). Distinct words grow nearly linearly over lines and folds, so a probe is
 * first placed by interpolation; a probe that does not halve the bracket makes the next one bisect.
 */
function firstReaching(
  lo: { x: number; words: number },
  hi: { x: number; words: number },
  cap: number,
  f: (x: number) => number,
): { x: number; words: number; belowWords: number } {
  let a = lo.x;
  let fa = lo.words;
  let b = hi.x;
  let fb = hi.words;
  let bisect = false;
  while (b - a > 1) {
    const span = b - a;
    const guess = bisect || fb <= fa ? a + Math.floor(span / 2) : a + Math.ceil(((cap - fa) * span) / (fb - fa));
    const x = Math.min(b - 1, Math.max(a + 1, guess));
    const v = f(x);
    if (v >= cap) {
      b = x;
      fb = v;
    } else {
      a = x;
      fa = v;
    }
    bisect = !bisect && 2 * (b - a) > span;
  }
  return { x: b, words: fb, belowWords: fa };
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
  return (from, to, kLo, kHi) => {
    ranges.a1.fill(0, kLo, kHi);
    ranges.b1.fill(0, kLo, kHi);
    ranges.a2.fill(0, kLo, kHi);
    ranges.b2.fill(0, kLo, kHi);
    const last = Math.min(to.g, ctx.rowFolds * ctx.colFolds - 1);
    if (last - from.g >= RF + 1) throw new Error('walk-calc-wsis: a ws stretch spans more than a pass');
    for (let g = from.g; g <= last; g++) {
      const fr = g % RF;
      const k0 = fr * R;
      const used = usedInFold(K, R, fr);
      const second = g - from.g >= RF; // the tile's second time in the stretch
      const cEnd = Math.min(used, kHi - k0);
      for (let c = Math.max(0, kLo - k0); c < cEnd; c++) {
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
  return (from, to, kLo, kHi) => {
    const fcFrom = Math.floor(from.g / RF);
    const fcTo = Math.floor(to.g / RF);
    // Fold ends and starts fall between the keys of two lines.
    const keyFrom = (from.g - fcFrom * RF) * R + Math.min(Math.max(from.t, -0.5), R - 0.5);
    const keyTo = (to.g - fcTo * RF) * R + Math.min(Math.max(to.t, -0.5), R - 0.5);
    const blockFrom = fcFrom * cols;
    const blockTo = fcTo * cols;
    const atFrom = blockFrom + Math.min(from.c, cols - 1) + 1;
    const atTo = blockTo + Math.min(to.c, cols - 1) + 1;
    for (let k = kLo; k < kHi; k++) {
      const key = order[k] ?? indexOutOfRange(k);
      const a = key > keyFrom ? blockFrom : key === keyFrom ? atFrom : blockFrom + cols;
      const b = key < keyTo ? blockTo + cols : key === keyTo ? atTo : blockTo;
      ranges.set(k, Math.max(0, a), Math.min(M, b));
    }
  };
}
