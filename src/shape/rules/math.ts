/** Matrix products (ONNX "Math" category): MatMul with numpy batching/broadcasting, and Gemm. */
import { at, indexOutOfRange } from '../../errors.js';
import type { Dim } from '../../ir/dim.js';
import type { RuleContext, ShapeRule } from '../context.js';
import type { OpRows } from '../op-table.js';
import { batchDimsConflict } from '../rebatch.js';
import { broadcastShapes } from '../tensor-info.js';

/** numpy.matmul output shape; 1-D operands are promoted and the promoted dim removed. */
export function matmulShape(ctx: RuleContext, a: readonly Dim[], b: readonly Dim[]): Dim[] {
  if (a.length === 0 || b.length === 0) ctx.fail(`MatMul operands must not be scalars`);
  // Indexed with `?? indexOutOfRange`, not at(): a generic helper called with every kind of
  // array is a call per access that the optimizer does not inline (once per MatMul of a graph).
  const a2 = a.length === 1 ? [1, a[0] ?? indexOutOfRange(0)] : a;
  const b2 = b.length === 1 ? [b[0] ?? indexOutOfRange(0), 1] : b;
  const k1 = a2[a2.length - 1] ?? indexOutOfRange(a2.length - 1);
  const k2 = b2[b2.length - 2] ?? indexOutOfRange(b2.length - 2);
  if ((typeof k1 === 'number' && typeof k2 === 'number' && k1 !== k2) || (ctx.env.rebatch !== undefined && batchDimsConflict(k1, k2))) {
    ctx.fail(`inner dims differ: ${ctx.describe(0)} x ${ctx.describe(1)}`);
  }
  // Two matrices (most MatMuls of a large graph): the output at its exact length, no broadcasting.
  if (a.length === 2 && b.length === 2) return [a[0] ?? indexOutOfRange(0), b[1] ?? indexOutOfRange(1)];
  const batch = broadcastShapes([a2.slice(0, -2), b2.slice(0, -2)]);
  if (batch === undefined) ctx.fail(`batch dims cannot be broadcast: ${ctx.describe(0)} x ${ctx.describe(1)}`);
  const out = [...batch];
  if (a.length > 1) out.push(at(a2, a2.length - 2));
  if (b.length > 1) out.push(at(b2, b2.length - 1));
  return out;
}

export const matmul: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: matmulShape(ctx, ctx.shape(0), ctx.shape(1)) }];

export const matmulInteger: ShapeRule = (ctx) => [{ dtype: 6, shape: matmulShape(ctx, ctx.shape(0), ctx.shape(1)) }];

export const gemm: ShapeRule = (ctx) => {
  const a = ctx.shape(0);
  const b = ctx.shape(1);
  if (a.length !== 2 || b.length !== 2) ctx.fail(`Gemm needs 2-D operands, got ${ctx.describe(0)} and ${ctx.describe(1)}`);
  const transA = ctx.int('transA', 0) === 1;
  const transB = ctx.int('transB', 0) === 1;
  const m = at(a, transA ? 1 : 0);
  const ka = at(a, transA ? 0 : 1);
  const kb = at(b, transB ? 1 : 0);
  const n = at(b, transB ? 0 : 1);
  if ((typeof ka === 'number' && typeof kb === 'number' && ka !== kb) || (ctx.env.rebatch !== undefined && batchDimsConflict(ka, kb))) ctx.fail(`inner dims differ: ${ctx.describe(0)} x ${ctx.describe(1)} (transA=${+transA}, transB=${+transB})`);
  return [{ dtype: ctx.dtype(0), shape: [m, n] }];
};

export const MATH_OPS: OpRows = {
  MatMul: { shape: matmul, gemm: true, lowering: 'matmul', weightInputs: [0, 1] },
  MatMulInteger: { shape: matmulInteger, gemm: true, lowering: 'matmul', weightInputs: [0, 1] },
  Gemm: { shape: gemm, gemm: true, lowering: 'gemm', weightInputs: [0, 1] },
};
