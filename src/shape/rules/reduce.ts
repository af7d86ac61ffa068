/** Reductions: Reduce* (axes as attribute, or as input from opset 13/18), ArgMax/ArgMin. */
import { DType } from '../../ir/dtype.js';
import { dimAdd, dimMax, dimMin, dimMul, type Dim } from '../../ir/dim.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { opRows, sameRow, type OpRows } from '../op-table.js';
import { normaliseAxis } from '../tensor-info.js';

/** ReduceSum took axes as an input at opset 13, the other Reduce ops at opset 18. */
function axesFromInput(ctx: RuleContext): boolean {
  return ctx.node.opType === 'ReduceSum' ? ctx.opset >= 13 : ctx.opset >= 18;
}

function reducedShape(ctx: RuleContext, input: readonly Dim[], axes: number[] | undefined, keepDims: boolean): Dim[] {
  const noopWhenEmpty = ctx.int('noop_with_empty_axes', 0) === 1;
  if ((axes === undefined || axes.length === 0) && noopWhenEmpty) return [...input];
  const set = new Set((axes ?? []).map((a) => normaliseAxis(a, input.length) ?? ctx.fail(`axis ${a} is out of range for rank ${input.length}`)));
  const all = axes === undefined || axes.length === 0;
  const out: Dim[] = [];
  input.forEach((d, i) => {
    if (all || set.has(i)) {
      if (keepDims) out.push(1);
    } else out.push(d);
  });
  return out;
}

const FOLDS: Partial<Record<string, (a: Dim, b: Dim) => Dim>> = {
  ReduceSum: dimAdd, ReduceProd: dimMul, ReduceMax: dimMax, ReduceMin: dimMin,
};

export const reduce: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const axes = axesFromInput(ctx) ? (ctx.has(1) ? ctx.intsValue(1, 'axes') : undefined) : ctx.ints('axes');
  const keepDims = ctx.int('keepdims', 1) === 1;
  const shape = reducedShape(ctx, input, axes, keepDims);
  const v = ctx.value(0);
  const fold = FOLDS[ctx.node.opType];
  // Folds the common "whole 1-D vector" reduction (e.g. ReduceProd of a shape); a no-op reduction
  // (noop_with_empty_axes) keeps the vector, so it is not folded to one element.
  const reducesVector = input.length === 1 && (shape.length === 0 || shape[0] === 1) && v !== undefined && v.length > 0;
  const value = fold && reducesVector ? [v.reduce(fold)] : undefined;
  return [{ dtype: ctx.dtype(0), shape, ...(value ? { value } : {}) }];
};

export const argReduce: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const axis = ctx.int('axis', 0);
  const shape = reducedShape(ctx, input, [axis], ctx.int('keepdims', 1) === 1);
  return [{ dtype: DType.INT64, shape }];
};

export const REDUCE_OPS: OpRows = opRows(
  // Sums and means spread their gradient evenly (nothing kept); the others need their input.
  sameRow({ shape: reduce, vectorClass: 'reduce', flow: 'linear', keeps: 'nothing' }, ['ReduceSum', 'ReduceMean']),
  sameRow({ shape: reduce, vectorClass: 'reduce' }, ['ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2',
    'ReduceLogSum', 'ReduceLogSumExp', 'ReduceSumSquare']),
  sameRow({ shape: argReduce, vectorClass: 'reduce', keeps: 'nothing' }, ['ArgMax', 'ArgMin']),
);
