/**
 * Index-driven operators on constant tensors: GatherND, ScatterND, ScatterElements (with their
 * reductions), Trilu, OneHot and EyeLike. Exporters emit them for index_put and masks.
 */
import { indexOutOfRange } from '../../errors.js';
import { elementCount } from '../../ir/dim.js';
import { normaliseAxis } from '../tensor-info.js';
import { indexIn } from './tensor-ops.js';
import { asDType, generate, stridesOf, unravel } from './tensor.js';
import { type EvalArgs, type Evaluator, firstOutput } from './types.js';

const REDUCTIONS: Record<string, (old: number, update: number) => number> = {
  none: (_, u) => u,
  add: (o, u) => o + u,
  mul: (o, u) => o * u,
  max: (o, u) => Math.max(o, u),
  min: (o, u) => Math.min(o, u),
};

function reductionOf(args: EvalArgs): ((old: number, update: number) => number) | undefined {
  return REDUCTIONS[args.ctx.string('reduction', 'none')];
}

const gatherND: Evaluator = (args) => {
  const [data, indices] = args.inputs;
  if (data === undefined || indices === undefined) return undefined;
  const batchDims = args.ctx.int('batch_dims', 0);
  const depth = indices.shape[indices.shape.length - 1] ?? indexOutOfRange(indices.shape.length - 1);
  const strides = stridesOf(data.shape);
  const sliceSize = elementCount(data.shape.slice(batchDims + depth));
  const batchSize = elementCount(data.shape.slice(batchDims));
  const tuples = elementCount(indices.shape.slice(0, -1));
  const perBatch = tuples / Math.max(1, elementCount(indices.shape.slice(0, batchDims)));
  const out: number[] = [];
  for (let t = 0; t < tuples; t++) {
    let src = Math.floor(t / perBatch) * batchSize;
    for (let d = 0; d < depth; d++) {
      const axis = batchDims + d;
      src += indexIn(args, Math.trunc(indices.data[t * depth + d] ?? indexOutOfRange(t * depth + d)), data.shape[axis] ?? indexOutOfRange(axis)) * (strides[axis] ?? indexOutOfRange(axis));
    }
    for (let k = 0; k < sliceSize; k++) out.push(data.data[src + k] ?? indexOutOfRange(src + k));
  }
  return [out];
};

const scatterND: Evaluator = (args) => {
  const [data, indices, updates] = args.inputs;
  const reduce = reductionOf(args);
  if (data === undefined || indices === undefined || updates === undefined || reduce === undefined) return undefined;
  const depth = indices.shape[indices.shape.length - 1] ?? indexOutOfRange(indices.shape.length - 1);
  const strides = stridesOf(data.shape);
  const sliceSize = elementCount(data.shape.slice(depth));
  const out = [...data.data];
  const tuples = elementCount(indices.shape.slice(0, -1));
  for (let t = 0; t < tuples; t++) {
    let dst = 0;
    for (let d = 0; d < depth; d++) dst += indexIn(args, Math.trunc(indices.data[t * depth + d] ?? indexOutOfRange(t * depth + d)), data.shape[d] ?? indexOutOfRange(d)) * (strides[d] ?? indexOutOfRange(d));
    for (let k = 0; k < sliceSize; k++) out[dst + k] = reduce(out[dst + k] ?? indexOutOfRange(dst + k), updates.data[t * sliceSize + k] ?? indexOutOfRange(t * sliceSize + k));
  }
  return [out];
};

const scatterElements: Evaluator = (args) => {
  const [data, indices, updates] = args.inputs;
  const reduce = reductionOf(args);
  if (data === undefined || indices === undefined || updates === undefined || reduce === undefined) return undefined;
  const axis = normaliseAxis(args.ctx.int('axis', 0), data.shape.length) ?? args.ctx.fail(`axis is out of range`);
  const strides = stridesOf(data.shape);
  const out = [...data.data];
  indices.data.forEach((raw, flat) => {
    const c = unravel(flat, indices.shape);
    c[axis] = indexIn(args, Math.trunc(raw), data.shape[axis] ?? indexOutOfRange(axis));
    const dst = c.reduce((s, x, d) => s + x * (strides[d] ?? indexOutOfRange(d)), 0);
    out[dst] = reduce(out[dst] ?? indexOutOfRange(dst), updates.data[flat] ?? indexOutOfRange(flat));
  });
  return [out];
};

/** Keeps the upper (default) or lower triangle of the last two dims, shifted by k. */
const trilu: Evaluator = ({ ctx, inputs, outputs }) => {
  const x = inputs[0];
  if (x === undefined) return undefined;
  const k = ctx.has(1) ? inputs[1]?.data[0] : 0;
  if (k === undefined) return undefined;
  const upper = ctx.int('upper', 1) === 1;
  const rank = x.shape.length;
  let flat = 0;
  return [generate(firstOutput(outputs).shape, (c) => {
    const v = x.data[flat] ?? indexOutOfRange(flat);
    flat++;
    const row = c[rank - 2] ?? indexOutOfRange(rank - 2);
    const col = c[rank - 1] ?? indexOutOfRange(rank - 1);
    return (upper ? col - row >= k : col - row <= k) ? v : 0;
  })];
};

const oneHot: Evaluator = ({ ctx, inputs, outputs }) => {
  const [indices, depthInput, values] = inputs;
  if (indices === undefined || depthInput === undefined || values === undefined) return undefined;
  const depth = Math.trunc(depthInput.data[0] ?? ctx.fail(`depth (input 1) is empty`));
  const shape = firstOutput(outputs).shape;
  const axis = normaliseAxis(ctx.int('axis', -1), shape.length) ?? ctx.fail(`axis is out of range`);
  const [off, on] = values.data;
  if (off === undefined || on === undefined) return ctx.fail(`values (input 2) must hold [off_value, on_value], got ${values.data.length} elements`);
  const inStrides = stridesOf(indices.shape);
  return [generate(shape, (c) => {
    let src = 0;
    for (let d = 0, j = 0; d < c.length; d++) {
      if (d === axis) continue;
      src += (c[d] ?? indexOutOfRange(d)) * (inStrides[j] ?? indexOutOfRange(j));
      j++;
    }
    const raw = Math.trunc(indices.data[src] ?? indexOutOfRange(src));
    const index = raw < 0 ? raw + depth : raw;
    return c[axis] === index ? on : off;
  })];
};

const eyeLike: Evaluator = ({ ctx, outputs }) => {
  const k = ctx.int('k', 0);
  const { shape, dtype } = firstOutput(outputs);
  return [generate(shape, (c) => asDType((c[1] ?? indexOutOfRange(1)) - (c[0] ?? indexOutOfRange(0)) === k ? 1 : 0, dtype))];
};

export const INDEXING_EVALUATORS: Record<string, Evaluator> = {
  GatherND: gatherND, ScatterND: scatterND, ScatterElements: scatterElements, Scatter: scatterElements,
  Trilu: trilu, OneHot: oneHot, EyeLike: eyeLike,
};
