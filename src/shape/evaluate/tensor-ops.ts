/**
 * Shape-manipulating and generating operators on constant tensors of any rank: Reshape and its
 * kin (data unchanged), Transpose, Slice (any steps), Concat, Split, Gather, GatherElements,
 * Expand, Tile, Pad, Range, ConstantOfShape, NonZero. Output shapes are the rule's; these fill
 * in the elements.
 */
import { indexOutOfRange } from '../../errors.js';
import { elementCount } from '../../ir/dim.js';
import { normaliseAxis } from '../tensor-info.js';
import { staticSlice } from '../rules/slice.js';
import { asDType, broadcastOffset, generate, stridesOf, unravel, type NumTensor } from './tensor.js';
import { type EvalArgs, type Evaluator, firstOutput } from './types.js';

/** Row-major order is unchanged: Reshape, Flatten, Squeeze, Unsqueeze. */
const sameData: Evaluator = ({ inputs }) => (inputs[0] === undefined ? undefined : [inputs[0].data]);

function axisOf(args: EvalArgs, axis: number, rank: number): number {
  return normaliseAxis(axis, rank) ?? args.ctx.fail(`axis ${axis} is out of range for rank ${rank}`);
}

/** Elements of input i as integers, or undefined when absent. */
function intsOf(args: EvalArgs, i: number): number[] | undefined {
  return args.inputs[i]?.data.map(Math.trunc);
}

const transpose: Evaluator = ({ ctx, inputs, outputs }) => {
  const x = inputs[0];
  if (x === undefined) return undefined;
  const rank = x.shape.length;
  const perm = (ctx.ints('perm') ?? [...Array(rank).keys()].reverse()).map((p) => normaliseAxis(p, rank) ?? ctx.fail(`perm ${p} is out of range for rank ${rank}`));
  const strides = stridesOf(x.shape);
  return [generate(firstOutput(outputs).shape, (c) => {
    let src = 0;
    for (let d = 0; d < rank; d++) {
      const axis = perm[d] ?? indexOutOfRange(d);
      src += (c[d] ?? indexOutOfRange(d)) * (strides[axis] ?? indexOutOfRange(axis));
    }
    return (x.data[src] ?? indexOutOfRange(src));
  })];
};

const slice: Evaluator = (args) => {
  const { ctx, inputs, outputs } = args;
  const x = inputs[0];
  if (x === undefined) return undefined;
  const rank = x.shape.length;
  const attrs = ctx.opset < 10;
  const starts = attrs ? ctx.ints('starts') : intsOf(args, 1);
  const ends = attrs ? ctx.ints('ends') : intsOf(args, 2);
  if (starts === undefined || ends === undefined) return undefined;
  const axes = (attrs ? ctx.ints('axes') : intsOf(args, 3)) ?? starts.map((_, i) => i);
  const steps = (attrs ? undefined : intsOf(args, 4)) ?? starts.map(() => 1);
  const first = Array<number>(rank).fill(0);
  const step = Array<number>(rank).fill(1);
  axes.forEach((raw, i) => {
    const axis = axisOf(args, raw, rank);
    if (steps[i] === 0) ctx.fail(`slice step is 0`);
    first[axis] = staticSlice(x.shape[axis] ?? indexOutOfRange(axis), (starts[i] ?? indexOutOfRange(i)), (ends[i] ?? indexOutOfRange(i)), steps[i] ?? indexOutOfRange(i)).first;
    step[axis] = steps[i] ?? indexOutOfRange(i);
  });
  const strides = stridesOf(x.shape);
  return [generate(firstOutput(outputs).shape, (c) => {
    let src = 0;
    for (let d = 0; d < rank; d++) src += ((first[d] ?? indexOutOfRange(d)) + (c[d] ?? indexOutOfRange(d)) * (step[d] ?? indexOutOfRange(d))) * (strides[d] ?? indexOutOfRange(d));
    return (x.data[src] ?? indexOutOfRange(src));
  })];
};

const concat: Evaluator = (args) => {
  const parts = args.inputs.filter((t): t is NumTensor => t !== undefined);
  if (parts.length !== args.inputs.filter((_, i) => args.ctx.has(i)).length || parts.length === 0) return undefined;
  const rank = (parts[0] ?? indexOutOfRange(0)).shape.length;
  const axis = axisOf(args, args.ctx.int('axis', 1), rank);
  // Blocks: for each index of the axes before `axis`, each part contributes a contiguous run.
  const outer = elementCount((parts[0] ?? indexOutOfRange(0)).shape.slice(0, axis));
  const out: number[] = [];
  for (let o = 0; o < outer; o++) {
    for (const p of parts) {
      const run = elementCount(p.shape.slice(axis));
      for (let k = 0; k < run; k++) out.push(p.data[o * run + k] ?? indexOutOfRange(o * run + k));
    }
  }
  return [out];
};

const split: Evaluator = (args) => {
  const x = args.inputs[0];
  if (x === undefined) return undefined;
  const axis = axisOf(args, args.ctx.int('axis', 0), x.shape.length);
  const strides = stridesOf(x.shape);
  let offset = 0;
  return args.outputs.map((o) => {
    const start = offset;
    offset += o.shape[axis] ?? indexOutOfRange(axis);
    return generate(o.shape, (c) => {
      let src = 0;
      for (let d = 0; d < c.length; d++) src += (d === axis ? start + (c[d] ?? indexOutOfRange(d)) : (c[d] ?? indexOutOfRange(d))) * (strides[d] ?? indexOutOfRange(d));
      return (x.data[src] ?? indexOutOfRange(src));
    });
  });
};

/** An index along a dim of `size`, negative from the end; out of range fails naming the node. */
export function indexIn(args: EvalArgs, i: number, size: number): number {
  if (i < -size || i >= size) return args.ctx.fail(`index ${i} is out of range for a dim of ${size}`);
  return i < 0 ? i + size : i;
}

const gather: Evaluator = (args) => {
  const [data, indices] = args.inputs;
  if (data === undefined || indices === undefined) return undefined;
  const axis = axisOf(args, args.ctx.int('axis', 0), data.shape.length);
  const ri = indices.shape.length;
  const strides = stridesOf(data.shape);
  const indexStrides = stridesOf(indices.shape);
  return [generate(firstOutput(args.outputs).shape, (c) => {
    let at = 0;
    for (let d = 0; d < ri; d++) at += (c[axis + d] ?? indexOutOfRange(axis + d)) * (indexStrides[d] ?? indexOutOfRange(d));
    const index = indexIn(args, Math.trunc(indices.data[at] ?? indexOutOfRange(at)), data.shape[axis] ?? indexOutOfRange(axis));
    let src = index * (strides[axis] ?? indexOutOfRange(axis));
    for (let d = 0; d < axis; d++) src += (c[d] ?? indexOutOfRange(d)) * (strides[d] ?? indexOutOfRange(d));
    for (let d = axis + 1; d < data.shape.length; d++) src += (c[d - 1 + ri] ?? indexOutOfRange(d - 1 + ri)) * (strides[d] ?? indexOutOfRange(d));
    return (data.data[src] ?? indexOutOfRange(src));
  })];
};

const gatherElements: Evaluator = (args) => {
  const [data, indices] = args.inputs;
  if (data === undefined || indices === undefined) return undefined;
  const axis = axisOf(args, args.ctx.int('axis', 0), data.shape.length);
  const strides = stridesOf(data.shape);
  let flat = 0;
  return [generate(indices.shape, (c) => {
    const raw = indices.data[flat] ?? indexOutOfRange(flat);
    flat++;
    const index = indexIn(args, Math.trunc(raw), data.shape[axis] ?? indexOutOfRange(axis));
    let src = 0;
    for (let d = 0; d < c.length; d++) src += (d === axis ? index : (c[d] ?? indexOutOfRange(d))) * (strides[d] ?? indexOutOfRange(d));
    return (data.data[src] ?? indexOutOfRange(src));
  })];
};

const expand: Evaluator = ({ inputs, outputs }) => {
  const x = inputs[0];
  if (x === undefined) return undefined;
  const strides = stridesOf(x.shape);
  return [generate(firstOutput(outputs).shape, (c) => (x.data[broadcastOffset(c, x.shape, strides)] ?? indexOutOfRange(broadcastOffset(c, x.shape, strides))))];
};

const tile: Evaluator = ({ inputs, outputs }) => {
  const x = inputs[0];
  if (x === undefined) return undefined;
  const strides = stridesOf(x.shape);
  return [generate(firstOutput(outputs).shape, (c) => {
    let src = 0;
    for (let d = 0; d < c.length; d++) src += ((c[d] ?? indexOutOfRange(d)) % (x.shape[d] ?? indexOutOfRange(d))) * (strides[d] ?? indexOutOfRange(d));
    return (x.data[src] ?? indexOutOfRange(src));
  })];
};

/** Source index of output index `i` along a padded dim, by mode; -1 for the constant. */
function padSource(i: number, size: number, mode: string): number {
  if (i >= 0 && i < size) return i;
  if (mode === 'edge') return Math.min(size - 1, Math.max(0, i));
  if (mode === 'reflect') {
    if (size === 1) return 0;
    const period = 2 * (size - 1);
    const r = ((i % period) + period) % period;
    return r < size ? r : period - r;
  }
  if (mode === 'wrap') return ((i % size) + size) % size;
  return -1;
}

const pad: Evaluator = (args) => {
  const { ctx, inputs, outputs } = args;
  const x = inputs[0];
  if (x === undefined) return undefined;
  const rank = x.shape.length;
  const pads = ctx.opset < 11 ? (ctx.ints('pads') ?? ctx.ints('paddings')) : intsOf(args, 1);
  if (pads === undefined) return undefined;
  const axes = ctx.opset >= 18 && ctx.has(3) ? (intsOf(args, 3) ?? []).map((a) => axisOf(args, a, rank)) : [...Array(rank).keys()];
  const before = Array<number>(rank).fill(0);
  for (const [i, a] of axes.entries()) {
    const pad = pads[i];
    if (pad === undefined) return ctx.fail(`pads [${pads.join(',')}] has no begin pad for each of the ${axes.length} axes`);
    before[a] = pad;
  }
  const fill = ctx.opset < 11 ? ctx.float('value', 0) : ctx.has(2) ? inputs[2]?.data[0] : 0;
  if (fill === undefined) return undefined;
  const mode = ctx.string('mode', 'constant');
  const strides = stridesOf(x.shape);
  return [generate(firstOutput(outputs).shape, (c) => {
    let src = 0;
    for (let d = 0; d < rank; d++) {
      const s = padSource((c[d] ?? indexOutOfRange(d)) - (before[d] ?? indexOutOfRange(d)), (x.shape[d] ?? indexOutOfRange(d)), mode);
      if (s < 0) return fill;
      src += s * (strides[d] ?? indexOutOfRange(d));
    }
    return (x.data[src] ?? indexOutOfRange(src));
  })];
};

const range: Evaluator = ({ inputs, outputs }) => {
  const [start, , delta] = inputs;
  if (start === undefined || delta === undefined) return undefined;
  const { dtype, shape } = firstOutput(outputs);
  return [Array.from({ length: (shape[0] ?? indexOutOfRange(0)) }, (_, i) => asDType((start.data[0] ?? indexOutOfRange(0)) + i * (delta.data[0] ?? indexOutOfRange(0)), dtype))];
};

const constantOfShape: Evaluator = ({ ctx, outputs }) => {
  const attr = ctx.tensorAttr('value');
  const fill = attr === undefined ? 0 : ctx.readTensor(attr)?.[0];
  if (typeof fill !== 'number') return undefined;
  return [Array<number>(elementCount(firstOutput(outputs).shape)).fill(fill)];
};

const nonZero: Evaluator = ({ inputs, outputs }) => {
  const x = inputs[0];
  if (x === undefined) return undefined;
  const hits: number[][] = [];
  x.data.forEach((v, flat) => {
    if (v !== 0) hits.push(unravel(flat, x.shape));
  });
  if (firstOutput(outputs).shape[1] !== hits.length) return undefined;
  // Output [rank, count]: row d lists the d-th coordinate of every non-zero element.
  return [x.shape.flatMap((_, d) => hits.map((h) => (h[d] ?? indexOutOfRange(d))))];
};

export const TENSOR_EVALUATORS: Record<string, Evaluator> = {
  Reshape: sameData, Flatten: sameData, Squeeze: sameData, Unsqueeze: sameData,
  Transpose: transpose, Slice: slice, Concat: concat, Split: split,
  Gather: gather, GatherElements: gatherElements, Expand: expand, Tile: tile, Pad: pad,
  Range: range, ConstantOfShape: constantOfShape, NonZero: nonZero,
};
