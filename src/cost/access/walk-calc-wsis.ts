/**
 * CALC reads of a ws or is convolution's ifmap, epoch by epoch instead of word by word.
 *
 * An epoch (read-buffer-calc.ts) is a stretch of the demand stream, from just after the word that
 * closed the previous one, holding `cap` distinct words. The distinct words of any stretch come in
 * closed form (wsis-stretch.ts, tap-union.ts), so the closing word is found by search: a gallop
 * over folds (from the last epoch's span), then an interpolating search for the fold, the line in
 * it and the column on that line. Each probe costs O(columns of the stretch + shapes of the
 * channels it reads more than once), nothing per word or line; there is no fallback walk.
 */
import { usedInFold } from '../systolic/mapping.js';
import { type CalcReadCounters, calcEpochWords } from './read-buffer-calc.js';
import type { WalkContext } from './walk-context.js';
import { END, type Position, stretchWords } from './wsis-stretch.js';

export function walkWsIsIfmap(ctx: WalkContext, base: CalcReadCounters): CalcReadCounters {
  const cap = calcEpochWords(base.sramWords);
  const G = ctx.rowFolds * ctx.colFolds;
  // A ws stretch reaching over a whole pass holds every word: an epoch closes within RF + 1 folds.
  const reach = ctx.dataflow === 'ws' ? ctx.rowFolds : G;
  const stretch = stretchWords(ctx);
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
  let lineSpan = Number.NaN;
  for (;;) {
    // Gallop to a fold whose end holds cap distinct words, then search back to the first such.
    // Epochs span similar numbers of folds: the gallop starts at the last epoch's span.
    let below = from.g - 1;
    let belowWords = 0;
    let g = -1;
    let gWords = 0;
    const end = Math.min(G - 1, from.g + reach);
    for (let probe = Math.min(end, from.g + span), step = 1; ; step *= 2) {
      const probeWords = stretch.words(from, at(probe, END, END));
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
    // The guess was enough: gallop back down to bracket the first such fold.
    for (let step = 1; below === from.g - 1 && g > from.g; step *= 2) {
      const probe = Math.max(from.g, g - step);
      const probeWords = stretch.words(from, at(probe, END, END));
      if (probeWords < cap) {
        below = probe;
        belowWords = probeWords;
        break;
      }
      g = probe;
      gWords = probeWords;
    }
    const fold = firstReaching({ x: below, words: belowWords }, { x: g, words: gWords }, cap, (x) => stretch.words(from, at(x, END, END)));
    g = fold.x;
    span = g - from.g;
    // The line, then the column on it. Lines up to `lo` hold what the folds before g hold.
    const lo = (g === from.g ? Math.max(from.t, firstLine(g)) : firstLine(g)) - 1;
    stretch.enterFold(from, g);
    // An epoch inside one fold likely spans as many lines as the last one did.
    const hint = g === from.g ? from.t + lineSpan : Number.NaN;
    const line = firstReaching(
      { x: lo, words: g === from.g ? 0 : fold.belowWords },
      { x: lastLine(g), words: fold.words },
      cap,
      (x) => stretch.wordsInFold(from, at(g, x, END)),
      hint,
    );
    const t = line.x;
    lineSpan = g === from.g ? t - from.t : lineSpan;
    const column = firstReaching({ x: -1, words: line.belowWords }, { x: usedLine(g) - 1, words: line.words }, cap, (x) =>
      stretch.wordsInFold(from, at(g, t, x)),
    );
    if (column.words !== cap) throw new Error('walk-calc-wsis: an epoch did not close on its cap-th word');
    const to = { g, t, c: column.x };
    reads += cap;
    closedEpochs++;
    lastCloseCycle = g * ctx.foldLines + t;
    from = to;
  }
  const wordsLastEpoch = from.g < G ? stretch.words(from, at(G - 1, END, END)) : 0;
  reads += wordsLastEpoch;
  return { ...base, reads, closedEpochs, lastCloseCycle, wordsLastEpoch };
}

/**
 * The smallest x in (lo.x, hi.x] with f(x) >= cap, f non-decreasing, f(lo.x) < cap <= f(hi.x); also
 * f there and f(x - 1). Distinct words mostly grow nearly linearly over lines and folds, so probes
 * are placed by false position (Illinois: no end stays put for long); two probes in a row that do
 * not halve the bracket make the next one bisect. A `hint` inside the bracket is probed first.
 */
function firstReaching(
  lo: { x: number; words: number },
  hi: { x: number; words: number },
  cap: number,
  f: (x: number) => number,
  hint = Number.NaN,
): { x: number; words: number; belowWords: number } {
  let a = lo.x;
  let fa = lo.words;
  let b = hi.x;
  let fb = hi.words;
  // Illinois false position: the weights are the distances to cap, halved on the side kept twice.
  let weightA = cap - fa;
  let weightB = fb - cap;
  let kept = 0; // -1: a moved last, 1: b moved last
  let slow = 0; // false-position probes in a row that did not halve the bracket
  while (b - a > 1) {
    const span = b - a;
    const bisect = slow >= 2;
    let guess = bisect ? a + Math.floor(span / 2) : a + Math.ceil((weightA * span) / (weightA + weightB));
    if (hint > a && hint < b) {
      guess = hint;
      hint = Number.NaN;
    }
    const x = Math.min(b - 1, Math.max(a + 1, guess));
    const v = f(x);
    if (v >= cap) {
      b = x;
      fb = v;
      weightB = v - cap;
      if (kept === 1) weightA /= 2;
      kept = 1;
    } else {
      a = x;
      fa = v;
      weightA = cap - v;
      if (kept === -1) weightB /= 2;
      kept = -1;
    }
    slow = bisect || 2 * (b - a) <= span ? 0 : slow + 1;
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
