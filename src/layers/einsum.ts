/**
 * Einsum of two operands as a batched GEMM. Each index letter is classified by where it appears:
 * in both operands and the output -> batch; in A and the output only -> M; in B and the output
 * only -> N; in both operands but not the output -> K (contracted). `...` dims are batch dims.
 * Letters in one operand only and not in the output are summed out before the product; they add
 * no multiply-accumulates of the contraction and are ignored.
 */
import { elementCount } from '../ir/dim.js';
import { mapGet } from '../errors.js';
import { batchedProduct, dimOf, type LayerDraft, type LoweringContext } from './draft.js';


/** Letters of one operand term, with `...` kept as a single '.' marker. */
function letters(term: string): string[] {
  return term.replace('...', '.').split('');
}

/** Size of every letter, from the operand shapes; '.' is the product of the ellipsis dims. */
function letterSizes(c: LoweringContext, terms: [string[], string][]): Map<string, number> {
  const sizes = new Map<string, number>();
  terms.forEach(([term, operand], i) => {
    const shape = c.shape(operand);
    const ellipsisDims = shape.length - (term.length - (term.includes('.') ? 1 : 0));
    let axis = 0;
    for (const letter of term) {
      if (letter === '.') {
        const dims = shape.slice(axis, axis + ellipsisDims);
        sizes.set(`.${i}`, elementCount(dims));
        axis += ellipsisDims;
        continue;
      }
      const size = dimOf(c, shape, axis++, operand);
      // Broadcasting lets a size-1 dim meet a larger one (shape inference checked the rest).
      if ((sizes.get(letter) ?? 1) === 1) sizes.set(letter, size);
    }
  });
  return sizes;
}

export function lowerEinsum(c: LoweringContext): LayerDraft | undefined {
  const equation = c.node.attributes.get('equation');
  const inputs = c.node.inputs.filter((x) => x !== '');
  if (equation?.kind !== 'string' || inputs.length !== 2) return undefined;
  const [lhs, rhs] = equation.value.replace(/\s+/g, '').split('->');
  if (lhs === undefined || rhs === undefined) return undefined; // implicit output: rare, not lowered
  const [termA, termB] = lhs.split(',').map(letters);
  if (termA === undefined || termB === undefined) return undefined;
  const out = letters(rhs);
  const [a, b] = inputs as [string, string];
  const sizes = letterSizes(c, [[termA, a], [termB, b]]);
  const output = c.output();
  const outElements = elementCount(c.shape(output));

  let m = 1;
  let n = 1;
  let k = 1;
  let batch = 1;
  for (const letter of new Set([...termA, ...termB])) {
    if (letter === '.') continue;
    const size = mapGet(sizes, letter, 'einsum letter sizes');
    const inA = termA.includes(letter);
    const inB = termB.includes(letter);
    const inOut = out.includes(letter);
    if (inA && inB && inOut) batch *= size;
    else if (inA && inOut) m *= size;
    else if (inB && inOut) n *= size;
    else if (inA && inB) k *= size;
  }
  // Ellipsis dims are batch dims; their broadcast size is whatever the output has left.
  if (out.includes('.')) batch = outElements / (m * n);

  const weightA = c.isWeight(a);
  const weightB = c.isWeight(b);
  const weights = [a, b].filter((t) => c.isWeight(t));
  if (weights.length === 1) {
    // A shared weight (no batch letters of its own beyond the activation's): fold batch into rows.
    const weight = weightA ? termA : termB;
    const sharedWeight = ![...weight].some((l) => l === '.' || (termA.includes(l) && termB.includes(l) && out.includes(l)));
    if (sharedWeight) {
      const rows = weightB ? m : n;
      const cols = weightB ? n : m;
      return { kind: 'gemm', gemm: { m: batch * rows, n: cols, k }, count: 1, weightTensors: weights, biasTensors: [], activationInputs: [weightA ? b : a], output };
    }
  }
  return batchedProduct(c, [a, b], { m, n, k }, batch, output);
}
