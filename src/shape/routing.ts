/**
 * The size of a mixture-of-experts dispatch, which the graph leaves to run time. HF Mixtral's
 * sparse MoE block (and Switch/Qwen-MoE written the same way) picks each expert's tokens with
 * `torch.where(expert_mask[e])`: a NonZero of a mask computed from the router's TopK indices
 * alone (one-hot of the choices, or `choices == e`). Under uniform routing, which is what
 * modtrans assumes for MoE everywhere (Megatron-core's token dispatcher sends each token to k of
 * E experts), the share of true elements in such a mask is known from its construction: 1/E for
 * a one-hot or an equality, times the size of a reduction over the top-k axis. The expected
 * count is then that share of the mask's elements, rounded up; it follows `--batch` and
 * `--micro-batch` like any other dim, where a `--dim ?NonZero:...` binding would not.
 */
import { dimCeilDiv, dimFloorDiv, dimMul, dimProduct, type Dim } from '../ir/dim.js';
import type { Node } from '../ir/graph.js';
import { flowOf, opKey } from './op-table.js';
import { OP_TABLE } from './rules/index.js';
import { normaliseAxis, type TensorInfo } from './tensor-info.js';

/** What the walk reads of the graph inferred so far. */
export interface RoutingLookup {
  producer(value: string): Node | undefined;
  get(value: string): TensorInfo | undefined;
}

/** A share of true elements as a fraction (numerator, denominator), kept exact. */
interface Share {
  numerator: number;
  denominator: number;
}

/** Ops a walk may take (the mask stays a function of the top-k choice alone); bounds odd graphs. */
const MAX_HOPS = 24;

/**
 * Expected true elements of `mask` when it is a routing mask built from a TopK's indices;
 * undefined for any other value (NonZero then keeps its run-time dim).
 */
export function routedCount(mask: string, lookup: RoutingLookup): Dim | undefined {
  const share = maskShare(mask, lookup, 0);
  const shape = lookup.get(mask)?.shape;
  if (share === undefined || shape === undefined) return undefined;
  return dimCeilDiv(dimMul(dimProduct(shape), share.numerator), share.denominator);
}

function layoutOf(node: Node): boolean {
  return flowOf(OP_TABLE.get(opKey(node))) === 'layout';
}

function maskShare(value: string, lookup: RoutingLookup, hops: number): Share | undefined {
  if (hops > MAX_HOPS) return undefined;
  const node = lookup.producer(value);
  if (node === undefined || node.domain !== '') return undefined;
  const data = node.inputs[0] ?? '';
  switch (node.opType) {
    case 'OneHot': {
      // One hot position per index: a share of 1/depth, when the indices are the experts chosen.
      const depth = lookup.get(node.inputs[1] ?? '')?.value?.[0];
      if (topKOfIndices(data, lookup, hops + 1) === undefined || typeof depth !== 'number' || depth < 1) return undefined;
      return { numerator: 1, denominator: Math.trunc(depth) };
    }
    case 'Equal': {
      // choices == e: each choice names one of E experts.
      const [a, b] = [node.inputs[0] ?? '', node.inputs[1] ?? ''];
      const [indices, other] = topKOfIndices(a, lookup, hops + 1) !== undefined ? [a, b] : [b, a];
      const experts = expertsOf(indices, lookup, hops + 1);
      if (experts === undefined || !isScalarConstant(other, lookup)) return undefined;
      return { numerator: 1, denominator: experts };
    }
    case 'Mul':
    case 'And': {
      // A routing mask cut by another mask (Switch Transformers' capacity: cumsum <= capacity)
      // keeps its expected share while the capacity holds the uniform share.
      const shares = [node.inputs[0] ?? '', node.inputs[1] ?? ''].map((i) => maskShare(i, lookup, hops + 1));
      return shares[0] ?? shares[1];
    }
    case 'Greater':
    case 'NotEqual': {
      // mask > 0, mask != 0: the same elements are true.
      if (!isZero(node.inputs[1] ?? '', lookup)) return undefined;
      return maskShare(data, lookup, hops + 1);
    }
    case 'ReduceSum':
    case 'ReduceMax': {
      // Over the top-k axis, the hits are exclusive (k distinct experts per token): shares add up.
      const inner = maskShare(data, lookup, hops + 1);
      const before = lookup.get(data)?.shape;
      const after = lookup.get(value)?.shape;
      if (inner === undefined || before === undefined || after === undefined) return undefined;
      const reduced = dimFloorDiv(dimProduct(before), dimProduct(after));
      if (typeof reduced !== 'number') return undefined;
      const numerator = Math.min(inner.numerator * reduced, inner.denominator);
      return { numerator, denominator: inner.denominator };
    }
    default:
      // Views, casts and selections of a mask keep its share (uniform routing favours no token).
      return layoutOf(node) ? maskShare(data, lookup, hops + 1) : undefined;
  }
}

/** The TopK (or top-1 ArgMax, Switch Transformers') whose indices output `value` is (through views and casts), if any. */
function topKOfIndices(value: string, lookup: RoutingLookup, hops: number): Node | undefined {
  for (let v = value, h = hops; h <= MAX_HOPS; h++) {
    const node = lookup.producer(v);
    if (node === undefined || node.domain !== '') return undefined;
    if (node.opType === 'TopK') return node.outputs[1] === v ? node : undefined;
    if (node.opType === 'ArgMax') return node;
    if (!layoutOf(node)) return undefined;
    v = node.inputs[0] ?? '';
  }
  return undefined;
}

/** E: the size of the axis a TopK chooses along (the router's expert scores). */
function expertsOf(indices: string, lookup: RoutingLookup, hops: number): number | undefined {
  const topK = topKOfIndices(indices, lookup, hops);
  const scores = lookup.get(topK?.inputs[0] ?? '')?.shape;
  if (topK === undefined || scores === undefined) return undefined;
  const axisAttribute = topK.attributes.get('axis')?.value;
  // TopK's axis defaults to the last, ArgMax's to the first.
  const axis = normaliseAxis(typeof axisAttribute === 'number' ? axisAttribute : topK.opType === 'ArgMax' ? 0 : -1, scores.length);
  const experts = axis === undefined ? undefined : scores[axis];
  return typeof experts === 'number' && experts >= 1 ? experts : undefined;
}

function isScalarConstant(value: string, lookup: RoutingLookup): boolean {
  const v = lookup.get(value)?.value;
  return v !== undefined && v.length === 1;
}

function isZero(value: string, lookup: RoutingLookup): boolean {
  const v = lookup.get(value)?.value;
  return v !== undefined && v.length === 1 && v[0] === 0;
}
