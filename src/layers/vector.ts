/**
 * Non-GEMM work as 'vector' layers: norms, softmax, activations, element-wise ops, pooling and
 * reductions, each with its op class, element count and bytes moved (costed by cost/vector.ts).
 * Not work: ops without a vector class in the op table (shape ops), ops on integer or boolean values (index and shape
 * arithmetic, masks), ops whose inputs are all constants or weights (foldable), folded values and
 * tiny tensors. Norms and GELU exported as their element-wise pieces become one layer each
 * (fusions.ts): a 'layernorm' layer owning its scale and shift, a 'gelu' layer reading one input.
 */
import { isFloatDType } from '../ir/dtype.js';
import { elementCount, isStaticShape, RUNTIME_DIM_PREFIX, unboundSymbols, type Dim } from '../ir/dim.js';
import { opRowOf } from '../shape/rules/index.js';
import type { VectorOpClass } from '../ir/op-class.js';
import { NO_NAMES, type LayerDraft, type LoweringContext } from './draft.js';
import type { VectorFusions } from './fusions.js';

export { VectorFusions } from './fusions.js';

/** Values with at most this many elements (in and out) are shape arithmetic, not work. */
export const TINY_VECTOR_ELEMENTS = 64;

/**
 * Static element count of a value; undefined for non-tensors and for sizes known only at run time
 * (NonZero's count: no --dim binds them, so the op is left out). Other unbound symbols are the
 * usual error naming the flag.
 */
function elementsOf(c: LoweringContext, name: string): number | undefined {
  const info = c.knownInfo(name);
  if (info === undefined || info.kind !== undefined || info.shape === undefined) return undefined;
  if (!isStaticShape(info.shape) && unboundSymbols(info.shape as Dim[]).some((s) => s.startsWith(RUNTIME_DIM_PREFIX))) return undefined;
  return elementCount(c.shape(name));
}

/** The vector layer of a node, or undefined when the node is not vector work. */
export function lowerVectorOp(c: LoweringContext, fusions: VectorFusions): LayerDraft | undefined {
  const node = c.node;
  if (fusions.absorbed.has(node)) return undefined;
  const fused = fusions.fused.get(node);
  const row = opRowOf(node);
  const opClass = fused !== undefined ? fused.opClass : row?.vectorClass;
  const output = node.outputs[0];
  if (opClass === undefined || output === undefined || output === '') return undefined;
  const info = c.knownInfo(output);
  if (info === undefined || !isFloatDType(info.dtype) || info.value !== undefined) return undefined;
  // A cast to the dtype its input has moves nothing (torch exports `.to(float32)` of an fp32 tensor).
  if (fused === undefined && (node.opType === 'Cast' || node.opType === 'CastLike') && node.domain === '' && c.knownInfo(node.inputs[0] ?? '')?.dtype === info.dtype) return undefined;
  const inputs = fused !== undefined ? [fused.input, ...fused.scale, ...fused.shift] : node.inputs.includes('') ? node.inputs.filter((i) => i !== '') : node.inputs;
  // The layer keeps the list: the node's own inputs when they are all activations (lists are never
  // changed), else an exact-length copy of those that are.
  const activations = fused === undefined && allActivations(c, node.inputs) ? (node.inputs as string[]) : inputs.filter((i) => c.origin(i) === 'activation').slice();
  if (activations.length === 0) return undefined;
  const outElements = elementsOf(c, output);
  // Every input's count first (one may be an error naming an unbound dim), then whether all are known.
  let largestIn = -Infinity;
  let unknownIn = false;
  for (const i of activations) {
    const n = elementsOf(c, i);
    if (n === undefined) unknownIn = true;
    else largestIn = Math.max(largestIn, n);
  }
  if (outElements === undefined || unknownIn) return undefined;
  if (Math.max(outElements, largestIn) <= TINY_VECTOR_ELEMENTS) return undefined;

  const weightTensors = fused !== undefined ? fused.scale : parameters(c, row?.parameterInputs?.scale);
  const biasTensors = fused !== undefined ? fused.shift : parameters(c, row?.parameterInputs?.shift);
  // Every operand is read: activations, but also weight-derived tensors (a position embedding) and parameters.
  let bytesIn = 0;
  for (const i of inputs) bytesIn += bytes(c, i);
  return {
    kind: 'vector',
    op: fused?.op,
    gemm: NO_GEMM,
    count: 0,
    weightTensors,
    biasTensors,
    activationInputs: activations,
    output,
    vector: {
      opClass,
      elements: workElements(c, opClass, largestIn, outElements),
      bytesIn,
      bytesOut: bytes(c, output),
      hasParams: weightTensors.length + biasTensors.length > 0,
    },
  };
}

/** A vector layer's GEMM: none (one object for every draft; finishing a layer reads it). */
const NO_GEMM = Object.freeze({ m: 0, n: 0, k: 0 });


/** Whether every input of a node is an activation ('' is none). */
function allActivations(c: LoweringContext, inputs: readonly string[]): boolean {
  for (const i of inputs) if (i === '' || c.origin(i) !== 'activation') return false;
  return true;
}

/** The node's inputs at `positions` that are weights (its norm's scale or shift). */
function parameters(c: LoweringContext, positions: readonly number[] | undefined): string[] {
  if (positions === undefined || positions.length === 0) return NO_NAMES;
  return positions.map((p) => c.node.inputs[p]).filter((t): t is string => t !== undefined && t !== '' && c.isWeight(t));
}

/** Bytes a value holds (0 when its size is not static). */
function bytes(c: LoweringContext, name: string): number {
  return c.elementBytes(name) * (elementsOf(c, name) ?? 0);
}

/** Reductions and global pools touch every input element; a windowed pool every window element. */
function workElements(c: LoweringContext, opClass: VectorOpClass, inElements: number, outElements: number): number {
  if (opClass === 'reduce' || c.node.opType.startsWith('Global')) return inElements;
  if (opClass === 'pool') return outElements * elementCount(c.intsAttr('kernel_shape') ?? []);
  return outElements;
}
