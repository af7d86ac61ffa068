/** Einsum (explicit and implicit output, ellipsis broadcasting) and Det. */
import { at, mapGet } from '../../errors.js';
import type { Dim } from '../../ir/dim.js';
import type { RuleContext, ShapeRule } from '../context.js';
import type { OpRows } from '../op-table.js';
import { broadcastShapes } from '../tensor-info.js';

interface Term {
  letters: string[];
  /** Position of '...' among the letters, or -1. */
  ellipsisAt: number;
}

function parseTerm(ctx: RuleContext, text: string): Term {
  const ellipsisAt = text.indexOf('...');
  const letters = text.replace('...', '').split('');
  if (letters.some((l) => !/^[a-zA-Z]$/.test(l))) ctx.fail(`einsum term '${text}' has characters other than letters and '...'`);
  return { letters, ellipsisAt: ellipsisAt < 0 ? -1 : text.slice(0, ellipsisAt).length };
}

export const einsum: ShapeRule = (ctx) => {
  const equation = ctx.string('equation', '').replace(/\s/g, '');
  const [lhs, rhs] = equation.split('->') as [string, string | undefined];
  const terms = lhs.split(',').map((t) => parseTerm(ctx, t));
  if (terms.length !== ctx.inputCount) ctx.fail(`equation '${equation}' has ${terms.length} terms for ${ctx.inputCount} inputs`);
  const sizes = new Map<string, Dim>();
  const counts = new Map<string, number>();
  const ellipsisShapes: Dim[][] = [];
  terms.forEach((term, i) => {
    const shape = ctx.shape(i);
    const ellipsisRank = shape.length - term.letters.length;
    if (ellipsisRank < 0 || (term.ellipsisAt < 0 && ellipsisRank !== 0)) ctx.fail(`term ${i} of '${equation}' does not match ${ctx.describe(i)}`);
    const before = term.ellipsisAt < 0 ? term.letters.length : term.ellipsisAt;
    if (term.ellipsisAt >= 0) ellipsisShapes.push(shape.slice(before, before + ellipsisRank));
    term.letters.forEach((letter, k) => {
      const dim = at(shape, k < before ? k : k + ellipsisRank);
      const known = sizes.get(letter);
      // A size-1 dim broadcasts against the letter's other occurrences.
      if (known === undefined || known === 1) sizes.set(letter, dim);
      counts.set(letter, (counts.get(letter) ?? 0) + 1);
    });
  });
  const ellipsis = broadcastShapes(ellipsisShapes) ?? ctx.fail(`the '...' dims of '${equation}' do not broadcast`);
  let shape: Dim[];
  if (rhs === undefined) {
    const once = [...counts].filter(([, c]) => c === 1).map(([l]) => l).sort();
    shape = [...ellipsis, ...once.map((l) => mapGet(sizes, l, 'einsum letter sizes'))];
  } else {
    const out = parseTerm(ctx, rhs);
    const letterDims = out.letters.map((l) => sizes.get(l) ?? ctx.fail(`output letter '${l}' is not in any input`));
    const at = out.ellipsisAt < 0 ? letterDims.length : out.ellipsisAt;
    shape = [...letterDims.slice(0, at), ...(out.ellipsisAt < 0 ? [] : ellipsis), ...letterDims.slice(at)];
  }
  return [{ dtype: ctx.dtype(0), shape }];
};

/** [*, M, M] -> [*]. */
export const det: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: ctx.shape(0).slice(0, -2) }];

export const EINSUM_OPS: OpRows = {
  Einsum: { shape: einsum, gemm: true, lowering: 'einsum', weightInputs: [0, 1] },
  Det: { shape: det },
};
