/** Reductions on constant tensors: Reduce* over any axes, ArgMax/ArgMin, CumSum. */
import { at, indexOutOfRange, internalError } from '../../errors.js';
import { elementCount } from '../../ir/dim.js';
import { normaliseAxis } from '../tensor-info.js';
import { asDType, stridesOf, unravel } from './tensor.js';
import { type EvalArgs, type Evaluator, firstOutput } from './types.js';

interface Fold {
  init: number;
  step: (acc: number, x: number) => number;
  finish?: (acc: number, count: number) => number;
}

const FOLDS: Record<string, Fold> = {
  ReduceSum: { init: 0, step: (a, x) => a + x },
  ReduceProd: { init: 1, step: (a, x) => a * x },
  ReduceMin: { init: Infinity, step: (a, x) => (Number.isNaN(a) || Number.isNaN(x) ? NaN : Math.min(a, x)) },
  ReduceMax: { init: -Infinity, step: (a, x) => (Number.isNaN(a) || Number.isNaN(x) ? NaN : Math.max(a, x)) },
  ReduceMean: { init: 0, step: (a, x) => a + x, finish: (a, n) => a / n },
  ReduceL1: { init: 0, step: (a, x) => a + Math.abs(x) },
  ReduceL2: { init: 0, step: (a, x) => a + x * x, finish: (a) => Math.sqrt(a) },
  ReduceSumSquare: { init: 0, step: (a, x) => a + x * x },
  ReduceLogSum: { init: 0, step: (a, x) => a + x, finish: (a) => Math.log(a) },
  ReduceLogSumExp: { init: 0, step: (a, x) => a + Math.exp(x), finish: (a) => Math.log(a) },
};

/** ReduceSum took axes as an input at opset 13, the other Reduce ops at opset 18. */
function reduceAxes(args: EvalArgs, rank: number): Set<number> | 'none' {
  const { ctx } = args;
  const fromInput = ctx.node.opType === 'ReduceSum' ? ctx.opset >= 13 : ctx.opset >= 18;
  const axes = fromInput ? args.inputs[1]?.data : ctx.ints('axes');
  if (axes === undefined || axes.length === 0) {
    if (ctx.int('noop_with_empty_axes', 0) === 1) return 'none';
    return new Set([...Array(rank).keys()]);
  }
  return new Set(axes.map((a) => normaliseAxis(a, rank) ?? ctx.fail(`axis ${a} is out of range for rank ${rank}`)));
}

const reduce: Evaluator = (args) => {
  const x = args.inputs[0];
  if (x === undefined) return undefined;
  const fold = FOLDS[args.ctx.node.opType] ?? internalError(`no fold for ${args.ctx.node.opType}`);
  const axes = reduceAxes(args, x.shape.length);
  const dtype = firstOutput(args.outputs).dtype;
  if (axes === 'none') return [x.data.map((v) => asDType(v, dtype))];
  // Accumulate every element into its slot of the keepdims-shaped output (same flat order).
  const kept = x.shape.map((d, i) => (axes.has(i) ? 1 : d));
  const keptStrides = stridesOf(kept);
  const acc = Array<number>(elementCount(kept)).fill(fold.init);
  x.data.forEach((v, flat) => {
    const c = unravel(flat, x.shape);
    let slot = 0;
    for (let d = 0; d < c.length; d++) if (!axes.has(d)) slot += (c[d] ?? indexOutOfRange(d)) * (keptStrides[d] ?? indexOutOfRange(d));
    acc[slot] = fold.step(acc[slot] ?? indexOutOfRange(slot), v);
  });
  const count = x.shape.reduce((n, d, i) => (axes.has(i) ? n * d : n), 1);
  return [acc.map((a) => asDType(fold.finish ? fold.finish(a, count) : a, dtype))];
};

const argReduce: Evaluator = (args) => {
  const x = args.inputs[0];
  if (x === undefined) return undefined;
  const rank = x.shape.length;
  const axis = normaliseAxis(args.ctx.int('axis', 0), rank) ?? args.ctx.fail(`axis is out of range`);
  const last = args.ctx.int('select_last_index', 0) === 1;
  const better = args.ctx.node.opType === 'ArgMax' ? (a: number, b: number) => a > b : (a: number, b: number) => a < b;
  const kept = x.shape.map((d, i) => (i === axis ? 1 : d));
  const strides = stridesOf(x.shape);
  const stride = at(strides, axis);
  const size = at(x.shape, axis);
  const out: number[] = [];
  for (let slot = 0; slot < elementCount(kept); slot++) {
    const base = unravel(slot, kept).reduce((s, c, d) => s + c * (strides[d] ?? indexOutOfRange(d)), 0);
    let best = 0;
    for (let i = 1; i < size; i++) {
      const v = x.data[base + i * stride] ?? indexOutOfRange(base + i * stride);
      const b = x.data[base + best * stride] ?? indexOutOfRange(base + best * stride);
      if (better(v, b) || (last && v === b)) best = i;
    }
    out.push(best);
  }
  return [out];
};

const cumSum: Evaluator = (args) => {
  const [x, axisInput] = args.inputs;
  if (x === undefined || axisInput === undefined) return undefined;
  const axis = normaliseAxis(axisInput.data[0] ?? args.ctx.fail(`axis (input 1) is empty`), x.shape.length) ?? args.ctx.fail(`axis is out of range`);
  const exclusive = args.ctx.int('exclusive', 0) === 1;
  const reverse = args.ctx.int('reverse', 0) === 1;
  const stride = at(stridesOf(x.shape), axis);
  const size = at(x.shape, axis);
  const dtype = firstOutput(args.outputs).dtype;
  const out = [...x.data];
  for (let flat = 0; flat < x.data.length; flat++) {
    const c = unravel(flat, x.shape);
    if (c[axis] !== 0) continue; // one running sum per line along the axis, started at its head
    let sum = 0;
    for (let k = 0; k < size; k++) {
      const i = reverse ? size - 1 - k : k;
      const slot = flat + i * stride;
      const v = x.data[slot] ?? indexOutOfRange(slot);
      if (!exclusive) sum += v;
      out[slot] = asDType(sum, dtype);
      if (exclusive) sum += v;
    }
  }
  return [out];
};

export const REDUCE_EVALUATORS: Record<string, Evaluator> = {
  ...Object.fromEntries(Object.keys(FOLDS).map((op) => [op, reduce])),
  ArgMax: argReduce, ArgMin: argReduce, CumSum: cumSum,
};
