/**
 * Element-wise ops: unary (shape and dtype kept), broadcasting binary and variadic ops,
 * comparisons and logic (BOOL out), Where, Cast. Small integer operands are folded, since
 * exporters compute Reshape targets with them.
 */
import { indexOutOfRange } from '../../errors.js';
import { elementCount, dimAdd, dimFloorDiv, dimMax, dimMin, dimMod, dimMul, dimSub, isStaticShape, type Dim } from '../../ir/dim.js';
import { DType, isIntegerDType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { opRows, sameRow, shapeRows, type OpRows } from '../op-table.js';
import { broadcastIndex, broadcastShapes, foldable } from '../tensor-info.js';

/** Shape and dtype of input 0, no folding (activations and other float math). */
export const sameAsInput: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: ctx.input(0).shape }];

/** Folds element-wise over broadcast inputs when every input value is known and small. */
function foldBroadcast(
  ctx: RuleContext,
  outShape: readonly Dim[],
  inputIndices: readonly number[],
  fn: (xs: Dim[]) => Dim | undefined,
): Dim[] | undefined {
  if (!isStaticShape(outShape) || !foldable(outShape)) return undefined;
  const values = inputIndices.map((i) => ctx.value(i));
  if (!values.every((v): v is readonly Dim[] => v !== undefined)) return undefined;
  const shapes = inputIndices.map((i) => ctx.shape(i));
  if (!shapes.every(isStaticShape)) return undefined;
  const count = elementCount(outShape);
  const out: Dim[] = [];
  for (let flat = 0; flat < count; flat++) {
    const xs = values.map((v, j) => {
      const k = broadcastIndex(flat, outShape, shapes[j] as number[]);
      return v[k] ?? indexOutOfRange(k);
    });
    const r = fn(xs);
    if (r === undefined) return undefined;
    out.push(r);
  }
  return out;
}

function broadcastOrFail(ctx: RuleContext, indices: readonly number[]): Dim[] {
  const shapes = indices.map((i) => ctx.shape(i));
  const out = broadcastShapes(shapes);
  if (out === undefined) return ctx.fail(`inputs cannot be broadcast together: ${indices.map((i) => ctx.describe(i)).join(' and ')}`);
  return out;
}

type DimOp = (a: Dim, b: Dim, integer: boolean) => Dim | undefined;

const num = (f: (a: number, b: number) => number): DimOp => (a, b) =>
  typeof a === 'number' && typeof b === 'number' ? f(a, b) : undefined;

const BINARY_FOLDS: Partial<Record<string, DimOp>> = {
  Add: (a, b) => dimAdd(a, b),
  Sub: (a, b) => dimSub(a, b),
  Mul: (a, b) => dimMul(a, b),
  Div: (a, b, integer) => {
    if (!integer) return num((x, y) => x / y)(a, b, integer);
    if (typeof a === 'number' && typeof b === 'number') return b === 0 ? undefined : Math.trunc(a / b);
    return dimFloorDiv(a, b); // dims are non-negative, so trunc = floor
  },
  Mod: (a, b, integer) => (integer ? dimMod(a, b) : num((x, y) => x % y)(a, b, integer)),
  Pow: num((a, b) => a ** b),
  Max: (a, b) => dimMax(a, b),
  Min: (a, b) => dimMin(a, b),
};

/** Add, Sub, Mul, Div, Pow, Mod, PRelu, BitShift...: broadcast, dtype of input 0. */
export const binaryArithmetic: ShapeRule = (ctx) => {
  const shape = broadcastOrFail(ctx, [0, 1]);
  const dtype = ctx.dtype(0);
  const op = BINARY_FOLDS[ctx.node.opType];
  const integer = isIntegerDType(dtype);
  const value = op && foldBroadcast(ctx, shape, [0, 1], (xs) => op(xs[0] ?? indexOutOfRange(0), xs[1] ?? indexOutOfRange(1), integer));
  return [{ dtype, shape, ...(value ? { value } : {}) }];
};

/** Sum, Mean, Max, Min: any number of broadcast inputs. */
export const variadic: ShapeRule = (ctx) => {
  const indices = [...Array(ctx.inputCount).keys()].filter((i) => ctx.has(i));
  const shape = broadcastOrFail(ctx, indices);
  const op = BINARY_FOLDS[ctx.node.opType === 'Sum' ? 'Add' : ctx.node.opType];
  const integer = isIntegerDType(ctx.dtype(0));
  const value = op && ctx.node.opType !== 'Mean'
    ? foldBroadcast(ctx, shape, indices, (xs) => xs.slice(1).reduce<Dim | undefined>((acc, x) => (acc === undefined ? undefined : op(acc, x, integer)), xs[0]))
    : undefined;
  return [{ dtype: ctx.dtype(0), shape, ...(value ? { value } : {}) }];
};

const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  Equal: (a, b) => a === b,
  Greater: (a, b) => a > b,
  Less: (a, b) => a < b,
  GreaterOrEqual: (a, b) => a >= b,
  LessOrEqual: (a, b) => a <= b,
  And: (a, b) => a !== 0 && b !== 0,
  Or: (a, b) => a !== 0 || b !== 0,
  Xor: (a, b) => (a !== 0) !== (b !== 0),
};

/** Comparisons and binary logic: broadcast, BOOL out. */
export const comparison: ShapeRule = (ctx) => {
  const shape = broadcastOrFail(ctx, [0, 1]);
  const cmp = COMPARE[ctx.node.opType];
  const value = cmp && foldBroadcast(ctx, shape, [0, 1], ([a, b]) => {
    if (typeof a === 'number' && typeof b === 'number') return cmp(a, b) ? 1 : 0;
    if (ctx.node.opType === 'Equal' && String(a) === String(b)) return 1;
    return undefined;
  });
  return [{ dtype: DType.BOOL, shape, ...(value ? { value } : {}) }];
};

/** Unary predicates: IsNaN, IsInf -> BOOL of the same shape. */
export const unaryPredicate: ShapeRule = (ctx) => [{ dtype: DType.BOOL, shape: ctx.input(0).shape }];

export const not: ShapeRule = (ctx) => {
  const v = ctx.value(0);
  const value = v?.every((x) => typeof x === 'number') ? v.map((x) => (x === 0 ? 1 : 0)) : undefined;
  return [{ dtype: DType.BOOL, shape: ctx.input(0).shape, ...(value ? { value } : {}) }];
};

export const where: ShapeRule = (ctx) => {
  const shape = broadcastOrFail(ctx, [0, 1, 2]);
  const value = foldBroadcast(ctx, shape, [0, 1, 2], ([c, x, y]) => (typeof c === 'number' ? (c !== 0 ? x : y) : undefined));
  return [{ dtype: ctx.dtype(1), shape, ...(value ? { value } : {}) }];
};

/** ONNX Round rounds halves to even (numpy.round); Math.round rounds them up. */
function roundHalfToEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Unary ops that keep integer values meaningful when folded. */
const UNARY_FOLDS: Record<string, (x: number) => number> = {
  Neg: (x) => -x, Abs: Math.abs, Floor: Math.floor, Ceil: Math.ceil, Round: roundHalfToEven,
  Sign: Math.sign, Identity: (x) => x, Sqrt: Math.sqrt, Reciprocal: (x) => 1 / x, Relu: (x) => Math.max(0, x),
  Exp: Math.exp, Log: Math.log,
};

export const unaryMath: ShapeRule = (ctx) => {
  if (ctx.input(0).kind !== undefined) return [ctx.input(0)]; // Identity of a sequence or optional
  const v = ctx.value(0);
  // The fold is looked up by op name only for a value to fold (a data tensor has none).
  const fn = v === undefined ? undefined : UNARY_FOLDS[ctx.node.opType];
  let value: Dim[] | undefined;
  if (fn !== undefined && v !== undefined) {
    if (ctx.node.opType === 'Identity') value = [...v];
    else if (ctx.node.opType === 'Neg') value = v.map((x) => dimSub(0, x));
    else if (v.every((x) => typeof x === 'number')) value = (v as number[]).map(fn);
  }
  const dtype = ctx.dtype(0);
  const shape = ctx.input(0).shape;
  return [value ? { dtype, shape, value } : { dtype, shape }];
};

function castValue(x: Dim, to: number): Dim {
  if (typeof x !== 'number') return x;
  if (to === DType.BOOL) return x !== 0 ? 1 : 0;
  if (isIntegerDType(to)) return Math.trunc(x);
  if (to === DType.FLOAT) return Math.fround(x);
  return x;
}

export const cast: ShapeRule = (ctx) => {
  const to = ctx.int('to') ?? ctx.fail(`attribute 'to' is required`);
  const v = to === DType.STRING ? undefined : ctx.value(0); // strings have no folded elements
  return [{ dtype: to, shape: ctx.input(0).shape, ...(v ? { value: v.map((x) => castValue(x, to)) } : {}) }];
};

export const castLike: ShapeRule = (ctx) => {
  const to = ctx.dtype(1);
  const v = ctx.value(0);
  return [{ dtype: to, shape: ctx.input(0).shape, ...(v ? { value: v.map((x) => castValue(x, to)) } : {}) }];
};

/** Clip: shape of input 0 (min/max are optional scalars or attributes). */
export const clip: ShapeRule = (ctx) => {
  const v = ctx.value(0);
  const lo = ctx.has(1) ? ctx.value(1)?.[0] : ctx.attr('min') ? ctx.float('min', -Infinity) : -Infinity;
  const hi = ctx.has(2) ? ctx.value(2)?.[0] : ctx.attr('max') ? ctx.float('max', Infinity) : Infinity;
  let value: Dim[] | undefined;
  if (v && typeof lo === 'number' && typeof hi === 'number' && v.every((x) => typeof x === 'number')) {
    value = (v as number[]).map((x) => Math.min(hi, Math.max(lo, x)));
  }
  return [{ dtype: ctx.dtype(0), shape: ctx.input(0).shape, ...(value ? { value } : {}) }];
};

const ELEMENTWISE = 'elementwise';
const TRANSCENDENTAL = 'transcendental';

export const ELEMENTWISE_OPS: OpRows = opRows(
  // One operation per element: arithmetic, selection, clipping, casts, ReLU and its relatives.
  // Linear in each operand (a product of two activations is bilinear: structure/ tells it apart).
  sameRow({ shape: binaryArithmetic, vectorClass: ELEMENTWISE, flow: 'linear', keeps: 'nothing' }, ['Add', 'Sub']),
  sameRow({ shape: binaryArithmetic, vectorClass: ELEMENTWISE, flow: 'linear', keeps: 'operands' }, ['Mul', 'Div']),
  sameRow({ shape: variadic, vectorClass: ELEMENTWISE, flow: 'linear', keeps: 'nothing' }, ['Sum', 'Mean']),
  { Neg: { shape: unaryMath, vectorClass: ELEMENTWISE, flow: 'linear', keeps: 'nothing' }, Mod: { shape: binaryArithmetic, vectorClass: ELEMENTWISE } },
  sameRow({ shape: variadic, vectorClass: ELEMENTWISE }, ['Max', 'Min']),
  // Piecewise constant: a zero gradient almost everywhere needs no activation.
  sameRow({ shape: unaryMath, vectorClass: ELEMENTWISE, keeps: 'nothing' }, ['Floor', 'Ceil', 'Round', 'Sign']),
  sameRow({ shape: unaryMath, vectorClass: ELEMENTWISE }, ['Abs', 'Reciprocal', 'Relu']),
  sameRow({ shape: sameAsInput, vectorClass: ELEMENTWISE }, ['LeakyRelu', 'ThresholdedRelu', 'Shrink']),
  {
    // The slope (input 1) is trained.
    PRelu: { shape: binaryArithmetic, vectorClass: ELEMENTWISE, parameterInputs: { scale: [1], shift: [] } },
    // Selects elements of its data operands (a mask on attention scores).
    Where: { shape: where, vectorClass: ELEMENTWISE, flow: 'linear', keeps: 'nothing' },
    Clip: { shape: clip, vectorClass: ELEMENTWISE },
    // A precision conversion of an activation (mixed precision); casts of shape tensors are not float work.
    Cast: { shape: cast, vectorClass: ELEMENTWISE, weightView: 'first', flow: 'layout', keeps: 'nothing' },
    CastLike: { shape: castLike, vectorClass: ELEMENTWISE, weightView: 'first', flow: 'layout', keeps: 'nothing' },
    Pow: { shape: binaryArithmetic, vectorClass: TRANSCENDENTAL },
  },
  sameRow({ shape: unaryMath, vectorClass: TRANSCENDENTAL }, ['Sqrt', 'Exp', 'Log']),
  sameRow({ shape: sameAsInput, vectorClass: TRANSCENDENTAL }, [
    'Sigmoid', 'Tanh', 'Erf', 'Sin', 'Cos', 'Tan', 'Asin', 'Acos', 'Atan', 'Sinh', 'Cosh', 'Asinh', 'Acosh', 'Atanh',
    'Elu', 'Selu', 'Celu', 'HardSigmoid', 'HardSwish', 'Softplus', 'Softsign', 'Mish',
    // Swish (opset 24): x * sigmoid(alpha * x).
    'Swish',
  ]),
  sameRow({ shape: sameAsInput, vectorClass: 'gelu' }, ['Gelu']),
  sameRow({ shape: sameAsInput, vectorClass: 'softmax' }, ['Softmax', 'LogSoftmax']),
  // Normalisations without trained parameters.
  sameRow({ shape: sameAsInput, vectorClass: 'layernorm' }, ['LpNormalization', 'MeanVarianceNormalization', 'LRN']),
  // A running sum, and a one-hot of the row maximum: each reads every input element once.
  sameRow({ shape: sameAsInput, vectorClass: 'reduce' }, ['CumSum', 'Hardmax']),
  { Identity: { shape: unaryMath, weightView: 'first', flow: 'layout' } },
  // Integer, boolean and string ops: index and mask arithmetic, not float work.
  shapeRows({
    BitShift: binaryArithmetic, BitwiseAnd: binaryArithmetic, BitwiseOr: binaryArithmetic, BitwiseXor: binaryArithmetic,
    Equal: comparison, Greater: comparison, Less: comparison, GreaterOrEqual: comparison,
    LessOrEqual: comparison, And: comparison, Or: comparison, Xor: comparison,
    Not: not, IsNaN: unaryPredicate, IsInf: unaryPredicate, BitwiseNot: sameAsInput,
    RegexFullMatch: unaryPredicate,
    StringConcat: (ctx) => [{ dtype: DType.STRING, shape: broadcastOrFail(ctx, [0, 1]) }],
    Trilu: sameAsInput, ReverseSequence: sameAsInput, Binarizer: sameAsInput, TensorScatter: sameAsInput,
  }),
);

