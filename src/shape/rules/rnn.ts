/**
 * Recurrent ops: LSTM, GRU, RNN. Outputs Y [seq, dirs, batch, hidden] (layout 0) or
 * [batch, seq, dirs, hidden] (layout 1), Y_h and Y_c [dirs, batch, hidden] (or batch-first).
 */
import type { ShapeRule } from '../context.js';
import { sameRow, type OpRows } from '../op-table.js';

export const recurrent: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const w = ctx.shape(1);
  if (x.length !== 3) ctx.fail(`X must be 3-D, got ${ctx.describe(0)}`);
  const layout = ctx.int('layout', 0);
  const hidden = ctx.int('hidden_size') ?? (typeof w[1] === 'number' ? w[1] / ({ LSTM: 4, GRU: 3 }[ctx.node.opType] ?? 1) : ctx.fail(`hidden_size is required`));
  const direction = ctx.string('direction', 'forward');
  const dirs = direction === 'bidirectional' ? 2 : 1;
  const [seq, batch] = layout === 0 ? [ctx.dim(0, 0), ctx.dim(0, 1)] : [ctx.dim(0, 1), ctx.dim(0, 0)];
  const dtype = ctx.dtype(0);
  const y = layout === 0 ? [seq, dirs, batch, hidden] : [batch, seq, dirs, hidden];
  const state = layout === 0 ? [dirs, batch, hidden] : [batch, dirs, hidden];
  return ctx.node.outputs.map((_, i) => ({ dtype, shape: i === 0 ? y : state }));
};

/** Per time step, direction and gate, a GEMM of [x_t, h_{t-1}] by the stacked input and recurrence weights (inputs 1, 2). */
export const RNN_OPS: OpRows = sameRow({ shape: recurrent, gemm: true, lowering: 'recurrent', weightInputs: [1, 2] }, ['LSTM', 'GRU', 'RNN']);
