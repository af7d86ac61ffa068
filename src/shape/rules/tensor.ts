/**
 * Shape-manipulating ops (ONNX "Tensor" category): Shape, Size, Reshape, Flatten, Transpose,
 * Squeeze, Unsqueeze, Concat, Split, Slice, Gather, Expand, Tile, Pad... These carry folded values
 * through, because exporters build Reshape/Expand targets out of them.
 */
import { at, indexOutOfRange, internalError } from '../../errors.js';
import { elementCount, dimAdd, dimCeilDiv, dimFloorDiv, dimMul, dimProduct, dimSub, isStaticShape, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { opRows, shapeRows, type OpRows } from '../op-table.js';
import { batchDimOf, batchPlacements, pinnedBatch } from '../rebatch.js';
import { broadcastShapes, foldable, normaliseAxis, type TensorInfo } from '../tensor-info.js';

export function axisOrFail(ctx: RuleContext, axis: number, rank: number, what = 'axis'): number {
  const a = normaliseAxis(axis, rank);
  if (a === undefined) return ctx.fail(`${what} ${axis} is out of range for rank ${rank}`);
  return a;
}

export function withValue(info: TensorInfo, value: readonly Dim[] | undefined): TensorInfo {
  return value === undefined ? info : { ...info, value };
}

export const shapeOp: ShapeRule = (ctx) => {
  const shape = ctx.shape(0);
  const rank = shape.length;
  // Opset 15 added start/end (clamped, negative from the back).
  const clamp = (x: number): number => Math.min(rank, Math.max(0, x < 0 ? x + rank : x));
  const start = clamp(ctx.int('start', 0));
  const end = clamp(ctx.int('end', rank));
  const value = shape.slice(start, Math.max(start, end));
  return [{ dtype: DType.INT64, shape: [value.length], value }];
};

export const size: ShapeRule = (ctx) => [{ dtype: DType.INT64, shape: [], value: [dimProduct(ctx.shape(0))] }];

/** Reshape target with 0 (copy, unless allowzero) and -1 (inferred) resolved. */
export function resolveReshape(ctx: RuleContext, input: readonly Dim[], target: readonly Dim[], allowZero: boolean): Dim[] {
  const out: Dim[] = [];
  let inferred = -1;
  for (let i = 0; i < target.length; i++) {
    const t = at(target, i);
    if (t === -1) {
      if (inferred >= 0) return ctx.fail(`reshape target ${JSON.stringify(target.map(String))} has more than one -1`);
      inferred = i;
      out.push(1);
    } else if (t === 0 && !allowZero) {
      if (i >= input.length) return ctx.fail(`reshape target copies dim ${i} of a rank-${input.length} input`);
      out.push(at(input, i));
    } else if (typeof t === 'number' && t < -1) return ctx.fail(`reshape target has the invalid dim ${t}`);
    else out.push(t);
  }
  if (inferred >= 0) {
    const total = dimProduct(input);
    const known = dimProduct(out);
    if (known === 0) return ctx.fail(`reshape target [${target.map(String).join(',')}] has a 0 dim beside -1, so -1 is undefined`);
    const missing = dimFloorDiv(total, known);
    if (typeof total === 'number' && typeof known === 'number' && (known === 0 || total % known !== 0)) {
      ctx.fail(`cannot reshape ${ctx.describe(0)} (${total} elements) to [${target.map(String).join(',')}]`);
    }
    out[inferred] = missing;
  } else {
    const a = dimProduct(input);
    const b = dimProduct(out);
    if (typeof a === 'number' && typeof b === 'number' && a !== b) {
      ctx.fail(`cannot reshape ${ctx.describe(0)} (${a} elements) to [${target.map(String).join(',')}] (${b} elements)`);
    }
  }
  return out;
}

/** A constant target of a re-batched static export: the batch goes where the layout puts it. */
function rebatchedReshape(ctx: RuleContext, input: readonly Dim[], target: readonly Dim[]): TensorInfo | undefined {
  const search = ctx.env.rebatch;
  if (search === undefined || !target.every((t): t is number => typeof t === 'number' && t > 0)) return undefined;
  const found = batchDimOf(input);
  if (found === undefined) return undefined;
  const others = input.filter((_, i) => i !== found.dim);
  if (!isStaticShape(others) || elementCount(target) !== found.coefficient * elementCount(others)) return undefined;
  const inner = ctx.input(0).batchInner ?? found.coefficient;
  const options = batchPlacements(input, { ...found, inner }, target);
  if (options.length === 0) ctx.fail(`cannot re-batch the constant reshape target [${target.join(',')}] of this static export; export the model with a dynamic batch dim`);
  const chosen = at(options, options.length === 1 ? 0 : search.choose(ctx.node.name, options.length));
  return { dtype: ctx.dtype(0), shape: chosen.shape, batchInner: chosen.inner };
}

export const reshape: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const target = ctx.opset < 5 ? (ctx.ints('shape') ?? ctx.fail(`attribute 'shape' is required`)) : ctx.dimsValue(1, 'the target shape');
  const rebatched = rebatchedReshape(ctx, input, target);
  if (rebatched !== undefined) return [rebatched];
  const shape = resolveReshape(ctx, input, target, ctx.int('allowzero', 0) === 1);
  return [withValue({ dtype: ctx.dtype(0), shape }, ctx.value(0))];
};

export const flatten: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const axisAttr = ctx.int('axis', 1);
  const axis = axisAttr < 0 ? axisAttr + input.length : axisAttr;
  if (axis < 0 || axis > input.length) return ctx.fail(`axis ${axisAttr} is out of range for rank ${input.length}`);
  const shape = [dimProduct(input.slice(0, axis)), dimProduct(input.slice(axis))];
  return [withValue({ dtype: ctx.dtype(0), shape }, ctx.value(0))];
};

export const transpose: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const perm = ctx.ints('perm') ?? [...input.keys()].reverse();
  if (perm.length !== input.length || new Set(perm.map((p) => normaliseAxis(p, input.length))).size !== input.length || perm.some((p) => normaliseAxis(p, input.length) === undefined)) {
    ctx.fail(`perm ${JSON.stringify(perm)} is not a permutation of ${input.length} axes`);
  }
  const axes = perm.map((p) => normaliseAxis(p, input.length) ?? internalError(`perm ${p} was checked`));
  const shape = axes.map((p) => at(input, p));
  let value: Dim[] | undefined;
  const v = ctx.value(0);
  if (v && isStaticShape(input)) {
    const strides = input.map((_, i) => input.slice(i + 1).reduce<number>((a, b) => a * (b as number), 1));
    const outShape = shape as number[];
    value = [];
    const count = v.length;
    for (let flat = 0; flat < count; flat++) {
      let rest = flat;
      let src = 0;
      for (let d = outShape.length - 1; d >= 0; d--) {
        const size = outShape[d] ?? indexOutOfRange(d);
        const coord = rest % size;
        rest = Math.floor(rest / size);
        src += coord * (strides[axes[d] ?? indexOutOfRange(d)] ?? indexOutOfRange(d));
      }
      value.push(v[src] ?? indexOutOfRange(src));
    }
  }
  return [withValue({ dtype: ctx.dtype(0), shape }, value)];
};

/** Axes from the attribute (older opsets) or input 1 (opset 13 on). */
function axesArg(ctx: RuleContext, sinceOpset: number, inputIndex: number): number[] | undefined {
  if (ctx.opset >= sinceOpset) return ctx.has(inputIndex) ? ctx.intsValue(inputIndex, 'axes') : undefined;
  return ctx.ints('axes');
}

export const squeeze: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const axesRaw = axesArg(ctx, 13, 1);
  let keep: boolean[];
  if (axesRaw === undefined) {
    if (input.some((d) => typeof d !== 'number')) return ctx.fail(`squeezing all size-1 dims of ${ctx.describe(0)} needs static dims; give axes`);
    keep = input.map((d) => d !== 1);
  } else {
    const axes = axesRaw.map((a) => axisOrFail(ctx, a, input.length));
    for (const a of axes) if (typeof input[a] === 'number' && input[a] !== 1) return ctx.fail(`cannot squeeze axis ${a} of size ${input[a]}`);
    keep = input.map((_, i) => !axes.includes(i));
  }
  return [withValue({ dtype: ctx.dtype(0), shape: input.filter((_, i) => keep[i]) }, ctx.value(0))];
};

export const unsqueeze: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const axesRaw = axesArg(ctx, 13, 1) ?? ctx.fail(`axes are required`);
  const rank = input.length + axesRaw.length;
  const axes = axesRaw.map((a) => axisOrFail(ctx, a, rank));
  if (new Set(axes).size !== axes.length) return ctx.fail(`axes ${JSON.stringify(axesRaw)} repeat an axis`);
  const shape: Dim[] = [];
  let next = 0;
  for (let i = 0; i < rank; i++) shape.push(axes.includes(i) ? 1 : (input[next++] ?? internalError('unsqueeze ran past the input dims')));
  return [withValue({ dtype: ctx.dtype(0), shape }, ctx.value(0))];
};

export const concat: ShapeRule = (ctx) => {
  const indices = [...Array(ctx.inputCount).keys()].filter((i) => ctx.has(i));
  const firstIndex = indices[0] ?? ctx.fail(`needs at least one input`);
  const first = ctx.shape(firstIndex);
  // Concat-1 defaulted axis to 1; from opset 4 it is required.
  const axis = axisOrFail(ctx, ctx.int('axis') ?? (ctx.opset < 4 ? 1 : ctx.fail(`attribute 'axis' is required`)), first.length);
  const shape = [...first];
  const rebatching = ctx.env.rebatch !== undefined;
  let total: Dim = 0;
  for (const i of indices) {
    const s = ctx.shape(i);
    if (s.length !== first.length) return ctx.fail(`input ${i} has rank ${s.length}, input ${indices[0]} has rank ${first.length}`);
    for (let d = 0; d < s.length; d++) {
      if (d !== axis && typeof s[d] === 'number' && typeof shape[d] === 'number' && s[d] !== shape[d]) {
        ctx.fail(`inputs disagree on dim ${d}: ${ctx.describe(firstIndex)} vs ${ctx.describe(i)}`);
      }
      const sd = at(s, d);
      if (d === axis) continue;
      // Re-batching: c beside c x batch is a batch a constant pinned at export (ViT's class token
      // expanded to [1, 1, E] by a traced batch of 1), and Concat's inputs agree: both are the batch.
      if (rebatching && pinnedBatch(at(shape, d), sd)) continue;
      if (rebatching && pinnedBatch(sd, at(shape, d))) shape[d] = sd;
      else if (typeof shape[d] !== 'number' && typeof sd === 'number') shape[d] = sd;
    }
    total = dimAdd(total, at(s, axis));
  }
  shape[axis] = total;
  let value: Dim[] | undefined;
  // Folding only along the outermost axis of 1-D values: the exporters' shape vectors.
  const values = indices.map((i) => ctx.value(i));
  if (first.length === 1 && values.every((v): v is readonly Dim[] => v !== undefined)) value = values.flatMap((v) => [...v]);
  return [withValue({ dtype: ctx.dtype(firstIndex), shape }, value)];
};

export const split: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const axis = axisOrFail(ctx, ctx.int('axis', 0), input.length);
  const outputs = ctx.node.outputs.length;
  let sizes: Dim[] | undefined = ctx.opset >= 13 ? (ctx.has(1) ? [...ctx.dimsValue(1, 'split')] : undefined) : ctx.ints('split');
  const dim = at(input, axis);
  if (sizes === undefined) {
    // Chunks of ceil(dim / n); opset 18's num_outputs allows a smaller last chunk, older opsets
    // require n to divide dim, so a symbolic dim splits into equal parts.
    const numOutputs = ctx.int('num_outputs', outputs);
    if (numOutputs < 1) return ctx.fail(`num_outputs must be positive, got ${numOutputs}`);
    const chunk = dimCeilDiv(dim, numOutputs);
    const unevenLast = ctx.attr('num_outputs') !== undefined;
    sizes = Array.from({ length: numOutputs }, (_, i) => {
      if (typeof dim === 'number') return Math.max(0, Math.min(chunk as number, dim - (chunk as number) * i));
      return unevenLast && i === numOutputs - 1 ? dimSub(dim, dimMul(chunk, numOutputs - 1)) : chunk;
    });
  }
  if (sizes.length !== outputs) return ctx.fail(`split gives ${sizes.length} sizes for ${outputs} outputs`);
  return sizes.map((s) => ({ dtype: ctx.dtype(0), shape: input.map((d, i) => (i === axis ? s : d)) }));
};

export const gather: ShapeRule = (ctx) => {
  const data = ctx.shape(0);
  const indices = ctx.shape(1);
  const axis = axisOrFail(ctx, ctx.int('axis', 0), data.length);
  const shape = [...data.slice(0, axis), ...indices, ...data.slice(axis + 1)];
  let value: Dim[] | undefined;
  const v = ctx.value(0);
  const idx = ctx.value(1);
  if (v && idx && data.length === 1 && typeof data[0] === 'number') {
    const n = data[0];
    value = [];
    for (const i of idx) {
      if (typeof i !== 'number' || i < -n || i >= n) {
        if (typeof i === 'number') return ctx.fail(`index ${i} is out of range for a dim of ${n}`);
        value = undefined;
        break;
      }
      value.push(v[i < 0 ? i + n : i] ?? internalError(`a folded value of ${n} elements is shorter`));
    }
  }
  return [withValue({ dtype: ctx.dtype(0), shape }, value)];
};

export const gatherElements: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: ctx.shape(1) }];

export const gatherND: ShapeRule = (ctx) => {
  const data = ctx.shape(0);
  const indices = ctx.shape(1);
  const batchDims = ctx.int('batch_dims', 0);
  const last = indices[indices.length - 1];
  if (typeof last !== 'number') return ctx.fail(`the last dim of the indices must be static`);
  if (batchDims < 0 || batchDims >= indices.length || batchDims + last > data.length) {
    return ctx.fail(`indices ${ctx.describe(1)} with batch_dims ${batchDims} do not index data ${ctx.describe(0)}`);
  }
  const shape = [...indices.slice(0, -1), ...data.slice(batchDims + last)];
  return [{ dtype: ctx.dtype(0), shape }];
};

/** Scatter* and similar: output = data's shape. */
export const likeData: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: ctx.shape(0) }];

export const expand: ShapeRule = (ctx) => {
  const target = ctx.dimsValue(1, 'the target shape');
  const shape = broadcastShapes([ctx.shape(0), target]);
  if (shape === undefined) return ctx.fail(`cannot expand ${ctx.describe(0)} to [${target.map(String).join(',')}]`);
  let value: Dim[] | undefined;
  const v = ctx.value(0);
  if (v && v.length === 1 && isStaticShape(shape) && foldable(shape)) value = Array(elementCount(shape as number[])).fill(v[0]);
  return [withValue({ dtype: ctx.dtype(0), shape }, value)];
};

export const tile: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const repeats = ctx.dimsValue(1, 'repeats');
  if (repeats.length !== input.length) return ctx.fail(`repeats has ${repeats.length} entries for a rank-${input.length} input`);
  return [{ dtype: ctx.dtype(0), shape: input.map((d, i) => dimMul(d, at(repeats, i))) }];
};

export const pad: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  let pads: readonly Dim[];
  let axes: number[] = input.map((_, i) => i);
  // Pad-1 called the attribute 'paddings'; from opset 11 pads is an input (run-time pads give run-time dims).
  if (ctx.opset < 11) pads = ctx.ints('pads') ?? ctx.ints('paddings') ?? ctx.fail(`attribute 'pads' is required`);
  else {
    pads = ctx.dimsValue(1, 'pads');
    if (ctx.has(3)) axes = ctx.intsValue(3, 'axes').map((a) => axisOrFail(ctx, a, input.length));
  }
  if (pads.length !== 2 * axes.length) return ctx.fail(`pads has ${pads.length} entries for ${axes.length} axes`);
  const shape = [...input];
  axes.forEach((a, i) => {
    shape[a] = dimAdd(at(shape, a), dimAdd(at(pads, i), at(pads, i + axes.length)));
  });
  return [{ dtype: ctx.dtype(0), shape }];
};

/** Input 0's [N, C, H, W]; another rank fails naming the node. */
function nchw(ctx: RuleContext): [Dim, Dim, Dim, Dim] {
  const s = ctx.shape(0);
  if (s.length !== 4) return ctx.fail(`input must be 4-D (N, C, H, W), got ${ctx.describe(0)}`);
  return [at(s, 0), at(s, 1), at(s, 2), at(s, 3)];
}

export const depthToSpace: ShapeRule = (ctx) => {
  const [n, c, h, w] = nchw(ctx);
  const b = ctx.int('blocksize') ?? ctx.fail(`attribute 'blocksize' is required`);
  return [{ dtype: ctx.dtype(0), shape: [n, dimFloorDiv(c, b * b), dimMul(h, b), dimMul(w, b)] }];
};

export const spaceToDepth: ShapeRule = (ctx) => {
  const [n, c, h, w] = nchw(ctx);
  const b = ctx.int('blocksize') ?? ctx.fail(`attribute 'blocksize' is required`);
  return [{ dtype: ctx.dtype(0), shape: [n, dimMul(c, b * b), dimFloorDiv(h, b), dimFloorDiv(w, b)] }];
};

export const TENSOR_OPS: OpRows = opRows(
  shapeRows({
    Shape: shapeOp, Size: size,
    Pad: pad,
  }),
  // Writes of updates into a copy of the data (HF Mixtral's index_add_ of each expert's tokens).
  {
    ScatterND: { shape: likeData, flow: 'layout' },
    ScatterElements: { shape: likeData, flow: 'layout' },
    Scatter: { shape: likeData, flow: 'layout' },
  },
  // Copies, selections and rearrangements of their data input's elements.
  {
    Split: { shape: split, flow: 'layout' },
    GatherElements: { shape: gatherElements, flow: 'layout' },
    GatherND: { shape: gatherND, flow: 'layout' },
    Expand: { shape: expand, flow: 'layout' },
    Tile: { shape: tile, flow: 'layout' },
    DepthToSpace: { shape: depthToSpace, flow: 'layout' },
    SpaceToDepth: { shape: spaceToDepth, flow: 'layout' },
  },
  // Views of their data input: a transposed or reshaped weight is still the weight.
  {
    Reshape: { shape: reshape, weightView: 'first', flow: 'layout' },
    Flatten: { shape: flatten, weightView: 'first', flow: 'layout' },
    Transpose: { shape: transpose, weightView: 'first', flow: 'layout' },
    Squeeze: { shape: squeeze, weightView: 'first', flow: 'layout' },
    Unsqueeze: { shape: unsqueeze, weightView: 'first', flow: 'layout' },
    // Packed weights (Q, K and V concatenated) are the parameters of all their pieces.
    Concat: { shape: concat, weightView: 'all', flow: 'layout' },
    // A Gather from a 2-D weight table by activation indices is an embedding lookup.
    Gather: { shape: gather, lowering: 'embedding', flow: 'layout' },
  },
);
