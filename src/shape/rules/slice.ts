/**
 * Slice: ONNX's index clamping for static dims, and the common symbolic cases (a symbolic dim
 * sliced by constants, or constant-width windows at symbolic offsets such as x[i : i + 1] in a
 * Loop body, which are assumed to lie inside the dim).
 */
import { at, indexOutOfRange } from '../../errors.js';
import { dimAdd, dimCeilDiv, dimSub, type Dim } from '../../ir/dim.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { shapeRows, type OpRows } from '../op-table.js';
import { axisOrFail, withValue } from './tensor.js';

/** Indices at or beyond ±INT_MAX (exporters use INT32/INT64 extremes) mean "to the end". */
const INT_MAX = 2 ** 31 - 1;

export interface SliceRange {
  /** Index of the first element taken. */
  first: number;
  length: number;
}

/**
 * ONNX Slice semantics on a static dim: negative indices count from the end, then starts clamp
 * to [0, dim] (positive step) or [0, dim - 1] (negative step), ends to [0, dim] or [-1, dim - 1].
 */
export function staticSlice(dim: number, start: number, end: number, step: number): SliceRange {
  let s = start < 0 ? start + dim : start;
  let e = end < 0 ? end + dim : end;
  if (step > 0) {
    s = Math.min(Math.max(s, 0), dim);
    e = Math.min(Math.max(e, 0), dim);
  } else {
    s = Math.min(Math.max(s, 0), dim - 1);
    e = Math.min(Math.max(e, -1), dim - 1);
  }
  return { first: s, length: Math.max(0, Math.ceil((e - s) / step)) };
}

/**
 * A start or end index on a symbolic dim, clamped as ONNX does where the clamp is certain
 * (±INT_MAX sentinels); other indices are assumed to lie inside the dim, as exporters emit them.
 */
function symbolicIndex(dim: Dim, index: Dim, step: number, isEnd: boolean): Dim {
  if (typeof index !== 'number') return index;
  if (index >= INT_MAX) return step > 0 ? dim : dimSub(dim, 1);
  if (index <= -INT_MAX) return step > 0 || !isEnd ? 0 : -1;
  return index < 0 ? dimAdd(dim, index) : index;
}

/** Length and first index of one sliced axis; symbolic where the dim or the indices are. */
export function sliceAxis(dim: Dim, start: Dim, end: Dim, step: number): { length: Dim; first: Dim } {
  if (typeof dim === 'number' && typeof start === 'number' && typeof end === 'number') return staticSlice(dim, start, end, step);
  const first = symbolicIndex(dim, start, step, false);
  const last = symbolicIndex(dim, end, step, true);
  const span = step > 0 ? dimSub(last, first) : dimSub(first, last);
  let length = dimCeilDiv(span, Math.abs(step));
  if (typeof length === 'number') {
    length = Math.max(0, length);
    if (typeof dim === 'number') length = Math.min(length, dim);
  }
  return { length, first };
}

/** starts/ends/axes/steps: attributes before opset 10, inputs after. */
function sliceArgs(ctx: RuleContext): { starts: readonly Dim[]; ends: readonly Dim[]; axes?: number[]; steps?: number[] } {
  if (ctx.opset < 10) {
    const axes = ctx.ints('axes');
    return {
      starts: ctx.ints('starts') ?? ctx.fail(`attribute 'starts' is required`),
      ends: ctx.ints('ends') ?? ctx.fail(`attribute 'ends' is required`),
      ...(axes ? { axes } : {}),
    };
  }
  return {
    starts: ctx.dimsValue(1, 'starts'),
    ends: ctx.dimsValue(2, 'ends'),
    ...(ctx.has(3) ? { axes: ctx.intsValue(3, 'axes') } : {}),
    ...(ctx.has(4) ? { steps: ctx.intsValue(4, 'steps') } : {}),
  };
}

export const slice: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const { starts, ends, axes = starts.map((_, i) => i), steps = starts.map(() => 1) } = sliceArgs(ctx);
  if (starts.length !== ends.length || axes.length !== starts.length || steps.length !== starts.length) {
    ctx.fail(`starts, ends, axes and steps differ in length`);
  }
  const shape = [...input];
  const ranges = input.map((d) => ({ first: 0 as Dim, step: 1, length: d }));
  axes.forEach((axisRaw, i) => {
    const axis = axisOrFail(ctx, axisRaw, input.length);
    if (steps[i] === 0) ctx.fail(`slice step is 0`);
    // The four lists were checked to be of one length.
    const step = at(steps, i);
    const r = sliceAxis(at(input, axis), at(starts, i), at(ends, i), step);
    shape[axis] = r.length;
    ranges[axis] = { first: r.first, step, length: r.length };
  });
  let value: Dim[] | undefined;
  const v = ctx.value(0);
  const r0 = ranges[0];
  if (v && input.length === 1 && typeof r0?.first === 'number' && typeof r0.length === 'number') {
    const { first, step, length } = r0 as { first: number; step: number; length: number };
    value = Array.from({ length }, (_, i) => v[first + i * step] ?? indexOutOfRange(first + i * step));
  }
  return [withValue({ dtype: ctx.dtype(0), shape }, value)];
};

export const SLICE_OPS: OpRows = shapeRows({ Slice: slice });
