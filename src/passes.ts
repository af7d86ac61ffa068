/**
 * A layer's training passes — forward (fwd), input gradient (ig), weight gradient (wg) — and
 * their sum, written once: every total of a layer's training compute (cycles, ns, stalls, MACs)
 * is `sumOverPasses`. Here at src/'s root because the cost model, the costed plan, reports,
 * `compare` and the writers' total columns all sum them.
 */

export interface PassTrio<T> {
  readonly fwd: T;
  readonly ig: T;
  readonly wg: T;
}

/** `value` over fwd + ig (unless `inputGrad` is false: the layer computes none) + wg, in that order. */
export function sumOverPasses<T>(passes: PassTrio<T>, value: (pass: T) => number, inputGrad = true): number {
  return value(passes.fwd) + (inputGrad ? value(passes.ig) : 0) + value(passes.wg);
}

/** A layer's training compute in cycles (fwd + ig when computed + wg): what pipeline stages are balanced on. */
export function trainingCycles(cost: PassTrio<{ readonly cycles: number }>, inputGrad = true): number {
  return sumOverPasses(cost, (p) => p.cycles, inputGrad);
}
