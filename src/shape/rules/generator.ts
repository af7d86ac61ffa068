/** Ops that create tensors: Constant, ConstantOfShape, Range, EyeLike. */
import { elementCount, dimCeilDiv, dimMax, dimSub, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { ShapeRule } from '../context.js';
import { shapeRows, type OpRows } from '../op-table.js';
import { foldable, MAX_FOLDED_ELEMENTS } from '../tensor-info.js';

/**
 * Constant nodes up to this size are read: shape arguments and the small tables exporters
 * compute them from. Larger ones (causal masks, embedded weights) would cost reading time for
 * values no shape needs.
 */
const CONSTANT_READ_ELEMENTS = 4096;

export const constant: ShapeRule = (ctx) => {
  const tensor = ctx.tensorAttr('value');
  if (tensor !== undefined) {
    const count = elementCount(tensor.dims);
    const value = count <= CONSTANT_READ_ELEMENTS && tensor.dtype !== DType.STRING ? ctx.readTensor(tensor) : undefined;
    return [{ dtype: tensor.dtype, shape: tensor.dims, ...(value ? { value } : {}) }];
  }
  const a = ctx.attr('sparse_value');
  if (a) {
    if (a.kind !== 'sparse_tensor') return ctx.fail(`attribute 'sparse_value' must be a sparse tensor`);
    return [{ dtype: a.value.values.dtype, shape: a.value.dims }];
  }
  const scalar = (dtype: number, v: number): { dtype: number; shape: Dim[]; value: Dim[] } => ({ dtype, shape: [], value: [v] });
  const list = (dtype: number, v: number[]): { dtype: number; shape: Dim[]; value: Dim[] } => ({ dtype, shape: [v.length], value: v });
  if (ctx.attr('value_int')) return [scalar(DType.INT64, ctx.int('value_int', 0))];
  if (ctx.attr('value_float')) return [scalar(DType.FLOAT, ctx.float('value_float', 0))];
  const ints = ctx.ints('value_ints');
  if (ints) return [list(DType.INT64, ints)];
  const floats = ctx.floats('value_floats');
  if (floats) return [list(DType.FLOAT, floats)];
  if (ctx.attr('value_string')) return [{ dtype: DType.STRING, shape: [] }];
  const strings = ctx.strings('value_strings');
  if (strings) return [{ dtype: DType.STRING, shape: [strings.length] }];
  return ctx.fail(`Constant has no value attribute`);
};

export const constantOfShape: ShapeRule = (ctx) => {
  const shape = ctx.dimsValue(0, 'the shape');
  const valueAttr = ctx.tensorAttr('value');
  const dtype = valueAttr?.dtype ?? DType.FLOAT;
  const fill = valueAttr ? ctx.readTensor(valueAttr)?.[0] ?? 0 : 0;
  const value = foldable(shape) ? Array<Dim>(elementCount(shape as number[])).fill(fill) : undefined;
  return [{ dtype, shape, ...(value ? { value } : {}) }];
};

export const range: ShapeRule = (ctx) => {
  const start = ctx.firstDim(0, 'start');
  const limit = ctx.firstDim(1, 'limit');
  const delta = ctx.firstDim(2, 'delta');
  if (typeof delta !== 'number' || delta === 0) return ctx.fail(`delta must be a non-zero constant`);
  const count: Dim = typeof start === 'number' && typeof limit === 'number'
    ? Math.max(Math.ceil((limit - start) / delta), 0)
    : dimMax(0, dimCeilDiv(dimSub(limit, start), delta));
  let value: Dim[] | undefined;
  if (typeof count === 'number' && typeof start === 'number' && count <= MAX_FOLDED_ELEMENTS) {
    value = Array.from({ length: count }, (_, i) => start + i * delta);
  }
  return [{ dtype: ctx.dtype(0), shape: [count], ...(value ? { value } : {}) }];
};

export const eyeLike: ShapeRule = (ctx) => [{ dtype: ctx.int('dtype', ctx.dtype(0)), shape: ctx.shape(0) }];

export const GENERATOR_OPS: OpRows = shapeRows({
  Constant: constant, ConstantOfShape: constantOfShape, Range: range, EyeLike: eyeLike,
});
