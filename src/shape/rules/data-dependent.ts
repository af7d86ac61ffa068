/**
 * Ops whose output size depends on the data (NonZero, Unique, Compress, NonMaxSuppression,
 * StringNormalizer with stopwords): the size is a run-time dim (`?op:output`) unless the inputs
 * are folded. Also TopK and OneHot, sized by a (usually constant) input.
 */
import { dimProduct, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { shapeRows, type OpRows } from '../op-table.js';
import { normaliseAxis } from '../tensor-info.js';

/** A run-time dim named after the node's first output, or its `--dim` binding. */
function countOf(ctx: RuleContext): Dim {
  return ctx.env.runtimeDim(`${ctx.node.opType}:${ctx.node.outputs[0] ?? ''}`);
}

function staticCount(values: readonly Dim[] | undefined, limit = Infinity): number | undefined {
  if (values === undefined || !values.every((v) => typeof v === 'number')) return undefined;
  return (values as number[]).slice(0, limit).filter((v) => v !== 0).length;
}

/**
 * A folded input's count is exact; a `--dim ?NonZero:...` binding comes next; a mixture-of-experts
 * routing mask (HF Mixtral's `torch.where(expert_mask[e])`) holds its tokens' expected share
 * (shape/routing.ts); anything else stays a run-time dim.
 */
export const nonZero: ShapeRule = (ctx) => {
  const shape = ctx.shape(0);
  const folded = staticCount(ctx.value(0));
  if (folded !== undefined) return [{ dtype: DType.INT64, shape: [shape.length, folded] }];
  const count = countOf(ctx);
  const routed = typeof count === 'number' ? undefined : ctx.env.routedCount?.(ctx.node.inputs[0] ?? '');
  return [{ dtype: DType.INT64, shape: [shape.length, routed ?? count] }];
};

export const unique: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const count = countOf(ctx);
  const axisAttr = ctx.int('axis');
  const index = { dtype: DType.INT64, shape: [count] };
  if (axisAttr === undefined) {
    return [{ dtype: ctx.dtype(0), shape: [count] }, index, { dtype: DType.INT64, shape: [dimProduct(x)] }, index];
  }
  const axis = normaliseAxis(axisAttr, x.length) ?? ctx.fail(`axis ${axisAttr} is out of range`);
  const y = x.map((d, i) => (i === axis ? count : d));
  return [{ dtype: ctx.dtype(0), shape: y }, index, { dtype: DType.INT64, shape: [ctx.dim(0, axis)] }, index];
};

export const compress: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const axisAttr = ctx.int('axis');
  const limit = axisAttr === undefined ? Infinity : x[normaliseAxis(axisAttr, x.length) ?? 0];
  const count = staticCount(ctx.value(1), typeof limit === 'number' ? limit : Infinity) ?? countOf(ctx);
  if (axisAttr === undefined) return [{ dtype: ctx.dtype(0), shape: [count] }];
  const axis = normaliseAxis(axisAttr, x.length) ?? ctx.fail(`axis ${axisAttr} is out of range`);
  return [{ dtype: ctx.dtype(0), shape: x.map((d, i) => (i === axis ? count : d)) }];
};

/** selected_indices [num_selected, 3]: (batch, class, box) triples. */
export const nonMaxSuppression: ShapeRule = (ctx) => [{ dtype: DType.INT64, shape: [countOf(ctx), 3] }];

export const topK: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const axis = normaliseAxis(ctx.int('axis', -1), x.length) ?? ctx.fail(`axis is out of range`);
  const k: Dim = ctx.opset >= 10 ? ctx.firstDim(1, 'K') : ctx.int('k') ?? ctx.fail(`attribute 'k' is required`);
  const shape = x.map((d, i) => (i === axis ? k : d));
  return [{ dtype: ctx.dtype(0), shape }, { dtype: DType.INT64, shape }];
};

export const oneHot: ShapeRule = (ctx) => {
  const indices = ctx.shape(0);
  const rank = indices.length + 1;
  const axis = normaliseAxis(ctx.int('axis', -1), rank) ?? ctx.fail(`axis is out of range`);
  const depthValue = ctx.value(1)?.[0];
  // depth may be a float tensor; its integer part is the size.
  const depth: Dim = depthValue === undefined ? countOf(ctx) : typeof depthValue === 'number' ? Math.trunc(depthValue) : depthValue;
  const shape = [...indices];
  shape.splice(axis, 0, depth);
  return [{ dtype: ctx.dtype(2), shape }];
};

/** Stopwords may remove strings, so the last dim is then data-dependent. */
export const stringNormalizer: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const stopwords = ctx.strings('stopwords') ?? [];
  const shape = stopwords.length === 0 ? [...x] : [...x.slice(0, -1), countOf(ctx)];
  return [{ dtype: DType.STRING, shape }];
};

/** [C] -> [max(ngram_indexes) + 1]; [N, C] -> [N, max + 1]. */
export const tfIdfVectorizer: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const indexes = ctx.ints('ngram_indexes') ?? ctx.fail(`attribute 'ngram_indexes' is required`);
  const width = Math.max(-1, ...indexes) + 1;
  return [{ dtype: DType.FLOAT, shape: x.length === 1 ? [width] : [ctx.dim(0, 0), width] }];
};

/** Y [..., max splits] STRING, Z [...] INT64 (number of pieces per string). */
export const stringSplit: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  return [{ dtype: DType.STRING, shape: [...x, countOf(ctx)] }, { dtype: DType.INT64, shape: [...x] }];
};

export const DATA_DEPENDENT_OPS: OpRows = shapeRows({
  NonZero: nonZero, Unique: unique, Compress: compress, NonMaxSuppression: nonMaxSuppression,
  TopK: topK, OneHot: oneHot, StringNormalizer: stringNormalizer, TfIdfVectorizer: tfIdfVectorizer,
  StringSplit: stringSplit,
});
