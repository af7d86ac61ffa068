/** Quantisation ops: (De)QuantizeLinear, DynamicQuantizeLinear, QLinear* and *Integer products. */
import { DType } from '../../ir/dtype.js';
import type { ShapeRule } from '../context.js';
import type { OpRows } from '../op-table.js';
import { matmulShape } from './math.js';
import { convShape } from './nn.js';

/** Output dtype: output_dtype (opset 21), else the zero point's, else UINT8. */
export const quantizeLinear: ShapeRule = (ctx) => {
  const dtype = ctx.int('output_dtype', 0) || (ctx.has(2) ? ctx.dtype(2) : DType.UINT8);
  return [{ dtype, shape: ctx.input(0).shape }];
};

export const dequantizeLinear: ShapeRule = (ctx) => [{ dtype: ctx.dtype(1), shape: ctx.input(0).shape }];

export const dynamicQuantizeLinear: ShapeRule = (ctx) => [
  { dtype: DType.UINT8, shape: ctx.input(0).shape },
  { dtype: DType.FLOAT, shape: [] },
  { dtype: DType.UINT8, shape: [] },
];

/** a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point. */
export const qLinearMatMul: ShapeRule = (ctx) => [{ dtype: ctx.dtype(7), shape: matmulShape(ctx, ctx.shape(0), ctx.shape(3)) }];

/** x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B. */
export const qLinearConv: ShapeRule = (ctx) => [{ dtype: ctx.dtype(7), shape: convShape(ctx, 0, 3) }];

export const convInteger: ShapeRule = (ctx) => [{ dtype: DType.INT32, shape: convShape(ctx, 0, 1) }];

export const QUANTIZE_OPS: OpRows = {
  // A QDQ-quantized weight is the quantized initializer, not its scale or zero point (input 0 only).
  QuantizeLinear: { shape: quantizeLinear, weightView: 'first' },
  DequantizeLinear: { shape: dequantizeLinear, weightView: 'first' },
  DynamicQuantizeLinear: { shape: dynamicQuantizeLinear },
  // Operands interleave with their scales and zero points: QLinearMatMul (a 0, b 3), QLinearConv (x 0, w 3, bias 8).
  QLinearMatMul: { shape: qLinearMatMul, gemm: true, lowering: 'qlinear-matmul', weightInputs: [0, 3] },
  QLinearConv: { shape: qLinearConv, gemm: true, lowering: 'qlinear-conv', weightInputs: [3] },
  ConvInteger: { shape: convInteger, gemm: true, lowering: 'conv-integer', weightInputs: [1] },
};
