/**
 * Element-wise operators on constant tensors, with ONNX's semantics: numpy broadcasting, integer
 * division truncating toward zero, Mod by its `fmod` attribute, Cast with the target dtype's
 * rounding and wrap-around, comparisons and logic giving BOOL (0/1).
 */
import { indexOutOfRange, internalError } from '../../errors.js';
import { DType, isIntegerDType } from '../../ir/dtype.js';
import { asDType, broadcastOffset, generate, stridesOf, type NumTensor } from './tensor.js';
import { type EvalArgs, type Evaluator, firstOutput } from './types.js';

/** Element-wise map over inputs broadcast to the output's shape; undefined from fn aborts. */
function broadcastMap(args: EvalArgs, indices: readonly number[], fn: (xs: number[]) => number | undefined): number[] | undefined {
  const tensors = indices.map((i) => args.inputs[i]);
  if (tensors.some((t) => t === undefined)) return undefined;
  const present = tensors as NumTensor[];
  const strides = present.map((t) => stridesOf(t.shape));
  const dtype = firstOutput(args.outputs).dtype;
  let failed = false;
  const out = generate(firstOutput(args.outputs).shape, (coords) => {
    const r = fn(present.map((t, j) => {
      const k = broadcastOffset(coords, t.shape, strides[j] ?? indexOutOfRange(j));
      return t.data[k] ?? indexOutOfRange(k);
    }));
    if (r === undefined) failed = true;
    return asDType(r ?? 0, dtype);
  });
  return failed ? undefined : out;
}

type Binary = (a: number, b: number, integer: boolean, fmod: boolean) => number | undefined;

const ARITHMETIC: Record<string, Binary> = {
  Add: (a, b) => a + b,
  Sub: (a, b) => a - b,
  Mul: (a, b) => a * b,
  // Integer division truncates toward zero (C and onnxruntime); by zero it is undefined.
  Div: (a, b, integer) => (integer ? (b === 0 ? undefined : Math.trunc(a / b)) : a / b),
  // fmod=0: the result takes the divisor's sign (Python's %); fmod=1: the dividend's (C fmod).
  Mod: (a, b, integer, fmod) => {
    if (b === 0) return integer ? undefined : NaN;
    return fmod ? a % b : a - b * Math.floor(a / b);
  },
  Pow: (a, b) => a ** b,
  BitwiseAnd: (a, b) => Number(BigInt(a) & BigInt(b)),
  BitwiseOr: (a, b) => Number(BigInt(a) | BigInt(b)),
  BitwiseXor: (a, b) => Number(BigInt(a) ^ BigInt(b)),
  Equal: (a, b) => +(a === b),
  Greater: (a, b) => +(a > b),
  Less: (a, b) => +(a < b),
  GreaterOrEqual: (a, b) => +(a >= b),
  LessOrEqual: (a, b) => +(a <= b),
  And: (a, b) => +(a !== 0 && b !== 0),
  Or: (a, b) => +(a !== 0 || b !== 0),
  Xor: (a, b) => +((a !== 0) !== (b !== 0)),
};

/** broadcastMap over inputs 0 and 1. */
function broadcastMap2(args: EvalArgs, fn: (a: number, b: number) => number | undefined): number[] | undefined {
  return broadcastMap(args, [0, 1], (xs) => fn(xs[0] ?? indexOutOfRange(0), xs[1] ?? indexOutOfRange(1)));
}

const binary: Evaluator = (args) => {
  const op = ARITHMETIC[args.ctx.node.opType] ?? internalError(`no arithmetic evaluator for ${args.ctx.node.opType}`);
  const integer = isIntegerDType(args.ctx.dtype(0));
  const fmod = args.ctx.int('fmod', 0) === 1;
  if (args.ctx.node.opType.startsWith('Bitwise') && !integer) return undefined;
  return [broadcastMap2(args, (a, b) => op(a, b, integer, fmod))];
};

const bitShift: Evaluator = (args) => {
  const left = args.ctx.string('direction', '') === 'LEFT';
  return [broadcastMap2(args, (a, b) => (left ? a * 2 ** b : Math.floor(a / 2 ** b)))];
};

const VARIADIC: Record<string, (xs: number[]) => number> = {
  Sum: (xs) => xs.reduce((a, b) => a + b, 0),
  Mean: (xs) => xs.reduce((a, b) => a + b, 0) / xs.length,
  Max: (xs) => (xs.some(Number.isNaN) ? NaN : Math.max(...xs)),
  Min: (xs) => (xs.some(Number.isNaN) ? NaN : Math.min(...xs)),
};

const variadic: Evaluator = (args) => {
  const indices = args.inputs.map((_, i) => i).filter((i) => args.ctx.has(i));
  return [broadcastMap(args, indices, VARIADIC[args.ctx.node.opType] ?? internalError(`no variadic evaluator for ${args.ctx.node.opType}`))];
};

const where: Evaluator = (args) => [broadcastMap(args, [0, 1, 2], ([c, x, y]) => (c !== 0 ? x : y))];

/** ONNX Round rounds halves to even (numpy.round). */
function roundHalfToEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

const UNARY: Record<string, (x: number) => number> = {
  Identity: (x) => x, Neg: (x) => -x, Abs: Math.abs, Floor: Math.floor, Ceil: Math.ceil,
  Round: roundHalfToEven, Sign: Math.sign, Sqrt: Math.sqrt, Reciprocal: (x) => 1 / x,
  Relu: (x) => Math.max(0, x), Exp: Math.exp, Log: Math.log, Sin: Math.sin, Cos: Math.cos,
  Tan: Math.tan, Tanh: Math.tanh, Sigmoid: (x) => 1 / (1 + Math.exp(-x)),
  Not: (x) => +(x === 0), IsNaN: (x) => +Number.isNaN(x),
};

const unary: Evaluator = (args) => {
  const x = args.inputs[0];
  if (x === undefined) return undefined;
  const fn = UNARY[args.ctx.node.opType] ?? internalError(`no unary evaluator for ${args.ctx.node.opType}`);
  const dtype = firstOutput(args.outputs).dtype;
  return [x.data.map((v) => asDType(fn(v), dtype))];
};

const isInf: Evaluator = (args) => {
  const x = args.inputs[0];
  if (x === undefined) return undefined;
  const positive = args.ctx.int('detect_positive', 1) === 1;
  const negative = args.ctx.int('detect_negative', 1) === 1;
  return [x.data.map((v) => +((v === Infinity && positive) || (v === -Infinity && negative)))];
};

const cast: Evaluator = (args) => {
  const x = args.inputs[0];
  const to = firstOutput(args.outputs).dtype;
  if (x === undefined || to === DType.STRING) return undefined;
  return [x.data.map((v) => asDType(v, to))];
};

const clip: Evaluator = (args) => {
  const x = args.inputs[0];
  if (x === undefined) return undefined;
  const { ctx } = args;
  const bound = (i: number, attr: string, fallback: number): number | undefined => {
    if (ctx.opset < 11) return ctx.float(attr, fallback);
    if (!ctx.has(i)) return fallback;
    return args.inputs[i]?.data[0];
  };
  const lo = bound(1, 'min', -Infinity);
  const hi = bound(2, 'max', Infinity);
  if (lo === undefined || hi === undefined) return undefined;
  return [x.data.map((v) => Math.min(hi, Math.max(lo, v)))];
};

export const ELEMENTWISE_EVALUATORS: Record<string, Evaluator> = {
  ...Object.fromEntries(Object.keys(ARITHMETIC).map((op) => [op, binary])),
  BitShift: bitShift,
  ...Object.fromEntries(Object.keys(VARIADIC).map((op) => [op, variadic])),
  ...Object.fromEntries(Object.keys(UNARY).map((op) => [op, unary])),
  IsInf: isInf, Where: where, Cast: cast, CastLike: cast, Clip: clip,
};
