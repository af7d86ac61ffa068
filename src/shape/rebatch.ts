/**
 * Re-batching a static export. A model exported at batch 1 spells its batch in constant Reshape
 * targets ([1,128,12,64]); run at `--batch N` it must give exactly the shapes of the same model
 * exported at batch N. Inference then runs with the batch as a symbol, and a constant Reshape
 * target gets the batch factor where the input's flat layout puts it: the batch index moves in
 * steps of S elements (its stride, which a reshape keeps), so it sits in the target dim whose
 * strides straddle S. Where S falls on the boundary of two target dims the layout alone cannot
 * tell (PyTorch's MultiheadAttention writes view(seq, batch*heads, hd) and view(seq*batch, E) on
 * such boundaries); the choice is replayed with the alternative when it leads to an inconsistent
 * graph (a GEMM whose K no longer matches, a broadcast that fails), as a small backtracking search.
 */
import { at } from '../errors.js';
import { Sym, dimMul, type Dim } from '../ir/dim.js';

export const BATCH_SYMBOL = 'batch';

/** The decisions of one inference run, replayed and extended across retries. */
export class RebatchSearch {
  private readonly decisions: { node: string; options: number; pick: number }[] = [];
  private cursor = 0;
  runs = 0;

  constructor(readonly from: number, readonly to: number) {}

  startRun(): void {
    this.cursor = 0;
    this.runs++;
  }

  /** Option index for the next ambiguous reshape of this run (0 = preferred). */
  choose(node: string, options: number): number {
    const known = this.decisions[this.cursor];
    this.cursor++;
    if (known !== undefined && known.node === node) return known.pick;
    this.decisions.length = this.cursor - 1;
    this.decisions.push({ node, options, pick: 0 });
    return 0;
  }

  /** After a failed run: switch the latest decision that has an untried option; false if none. */
  backtrack(): boolean {
    for (let k = Math.min(this.cursor, this.decisions.length) - 1; k >= 0; k--) {
      const d = at(this.decisions, k);
      if (d.pick + 1 < d.options) {
        d.pick++;
        this.decisions.length = k + 1;
        return true;
      }
    }
    return false;
  }
}

/** Where a value's batch factor sits: dim index, its coefficient, and the extent inside it below the batch. */
export interface BatchPosition {
  dim: number;
  coefficient: number;
  inner: number;
}

/** The batch-carrying dim of a shape (c x batch, exactly one), or undefined. */
export function batchDimOf(shape: readonly Dim[]): { dim: number; coefficient: number } | undefined {
  let found: { dim: number; coefficient: number } | undefined;
  for (let i = 0; i < shape.length; i++) {
    const d = at(shape, i);
    if (typeof d === 'number') continue;
    if (!d.atoms().includes(BATCH_SYMBOL)) continue;
    const terms = [...d.terms];
    const term = terms[0];
    if (found !== undefined || terms.length !== 1 || term === undefined || term[0] !== BATCH_SYMBOL) return undefined;
    found = { dim: i, coefficient: term[1] };
  }
  return found;
}

export interface RebatchedTarget {
  shape: Dim[];
  /** Extent below the batch factor inside its dim (1: batch innermost). */
  inner: number;
}

/**
 * The candidate placements of the batch in a constant target, preferred first: a target dim of
 * extent 1 exactly at the batch's stride (the batch spelled out); the dim whose range holds the
 * stride; on a boundary, the outer factor of the dim below it, then the inner factor of the dim
 * above it. `input` holds the batch symbol once; `inner` is its position inside that dim.
 */
export function batchPlacements(input: readonly Dim[], position: BatchPosition, target: readonly number[]): RebatchedTarget[] {
  let stride = position.inner;
  for (let i = position.dim + 1; i < input.length; i++) {
    const d = at(input, i);
    if (typeof d !== 'number') return [];
    stride *= d;
  }
  const strides = target.map((_, j) => target.slice(j + 1).reduce((a, b) => a * b, 1));
  const batch = Sym.atom(BATCH_SYMBOL);
  const out: RebatchedTarget[] = [];
  const seen = new Set<string>();
  const add = (j: number, inner: number): void => {
    const shape: Dim[] = [...target];
    shape[j] = dimMul(at(target, j), batch);
    const key = `${j}:${inner}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push({ shape, inner });
    }
  };
  target.forEach((t, j) => {
    if (t === 1 && strides[j] === stride) add(j, 1);
  });
  target.forEach((t, j) => {
    const st = at(strides, j);
    if (st < stride && stride < st * t && stride % st === 0 && t % (stride / st) === 0) add(j, stride / st);
  });
  target.forEach((t, j) => {
    if (t === 1 || st(j) * t !== stride) return;
    add(j, t);
    // The dim above (skipping extent-1 dims, which carry nothing) may take the batch innermost.
    let above = j - 1;
    while (above >= 0 && target[above] === 1) above--;
    if (above >= 0) add(above, 1);
  });
  function st(j: number): number {
    return at(strides, j);
  }
  return out;
}

/**
 * Whether two dims cannot be equal in a re-batched run: both are numbers or multiples of the batch
 * symbol (the batch is never 1 there, since re-batching from 1 to 1 does nothing) and they differ.
 */
export function batchDimsConflict(a: Dim, b: Dim): boolean {
  const coefficient = (d: Dim): { c: number; batch: boolean } | undefined => {
    if (typeof d === 'number') return { c: d, batch: false };
    const terms = [...d.terms];
    const term = terms[0];
    return terms.length === 1 && term !== undefined && term[0] === BATCH_SYMBOL ? { c: term[1], batch: true } : undefined;
  };
  const x = coefficient(a);
  const y = coefficient(b);
  return x !== undefined && y !== undefined && (x.c !== y.c || x.batch !== y.batch);
}

/**
 * Whether `batched` is c x batch and `pinned` the number c: in a re-batched run (from batch 1) the
 * same extent, spelt as a constant by the export (an Expand or Reshape target traced at batch 1).
 */
export function pinnedBatch(batched: Dim, pinned: Dim): boolean {
  if (typeof pinned !== 'number' || typeof batched === 'number') return false;
  const terms = [...batched.terms];
  const term = terms[0];
  return terms.length === 1 && term !== undefined && term[0] === BATCH_SYMBOL && term[1] === pinned;
}
