/**
 * The constant evaluator: ops on constant inputs of any rank are computed with their ONNX
 * semantics. Expected elements are worked by hand from the operator specs (docs/Operators.md)
 * or by plain loops that restate the spec's formula for the case.
 */
import { describe, expect, it } from 'vitest';
import { dimToJson, Sym, type Dim } from '../../src/ir/dim.js';
import { DType } from '../../src/ir/dtype.js';
import { EVALUATION_BUDGET_ELEMENTS } from '../../src/shape/evaluate/index.js';
import { inferGraph, int, ints, node, str, type InputSpec } from './graph.js';

const F = DType.FLOAT;
const I64 = DType.INT64;
const I32 = DType.INT32;

/** A constant input of any rank (inputs with known values fold like constants). */
const konst = (name: string, shape: number[], value: number[], dtype: number = I64): InputSpec => ({ name, dtype, shape, value });
const vec = (name: string, value: number[], dtype: number = I64): InputSpec => konst(name, [value.length], value, dtype);
const scalar = (name: string, v: number, dtype: number = I64): InputSpec => konst(name, [], [v], dtype);

function run(nodes: Parameters<typeof inferGraph>[0], inputs: InputSpec[], opset = 18) {
  const values = inferGraph(nodes, inputs, { '': opset }).values;
  return (name: string): { shape: (number | string)[] | undefined; value: readonly Dim[] | undefined } => {
    const info = values.get(name);
    if (info === undefined) throw new Error(`no value '${name}'`);
    return { shape: info.shape?.map(dimToJson), value: info.value };
  };
}

describe('tensor ops at any rank', () => {
  const m23 = konst('m', [2, 3], [1, 2, 3, 4, 5, 6]);

  it('Transpose of a 3-D tensor', () => {
    // x[i][j][k] = 100i + 10j + k, shape [2,2,3]; perm [2,0,1]: y[k][i][j] = x[i][j][k].
    const x = [0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112];
    const get = run([node('Transpose', ['x'], ['y'], { perm: ints([2, 0, 1]) })], [konst('x', [2, 2, 3], x)]);
    expect(get('y').shape).toEqual([3, 2, 2]);
    expect(get('y').value).toEqual([0, 10, 100, 110, 1, 11, 101, 111, 2, 12, 102, 112]);
  });

  it('Slice of a 2-D tensor with steps 2 and -2 on two axes', () => {
    // x = [[0..4],[5..9],[10..14]]; rows 0:3:2 -> 0, 2; cols -1::-2 (end INT_MIN) -> 4, 2, 0.
    const x = Array.from({ length: 15 }, (_, i) => i);
    const get = run([node('Slice', ['x', 's', 'e', 'a', 'st'], ['y'])], [
      konst('x', [3, 5], x), vec('s', [0, -1]), vec('e', [3, -(2 ** 63)]), vec('a', [0, 1]), vec('st', [2, -2]),
    ]);
    expect(get('y').shape).toEqual([2, 3]);
    expect(get('y').value).toEqual([4, 2, 0, 14, 12, 10]);
  });

  it('Concat along axis 1 of 2-D tensors', () => {
    const get = run([node('Concat', ['m', 'n'], ['y'], { axis: int(1) })], [m23, konst('n', [2, 1], [7, 8])]);
    expect(get('y').value).toEqual([1, 2, 3, 7, 4, 5, 6, 8]);
  });

  it('Gather on axis 1 with 2-D indices (negative index from the end)', () => {
    // out[i][a][b] = m[i][idx[a][b]], idx = [[0, -1], [1, 1]].
    const get = run([node('Gather', ['m', 'idx'], ['y'], { axis: int(1) })], [m23, konst('idx', [2, 2], [0, -1, 1, 1])]);
    expect(get('y').shape).toEqual([2, 2, 2]);
    expect(get('y').value).toEqual([1, 3, 2, 2, 4, 6, 5, 5]);
  });

  it('GatherElements on axis 0', () => {
    // out[i][j] = m[idx[i][j]][j].
    const get = run([node('GatherElements', ['m', 'idx'], ['y'], { axis: int(0) })], [m23, konst('idx', [1, 3], [1, 0, 1])]);
    expect(get('y').value).toEqual([4, 2, 6]);
  });

  it('Squeeze, Unsqueeze, Flatten and Reshape keep the row-major elements', () => {
    const get = run([
      node('Unsqueeze', ['m', 'ax'], ['u']),
      node('Squeeze', ['u', 'ax'], ['s']),
      node('Reshape', ['s', 'shape'], ['r']),
      node('Flatten', ['r'], ['f'], { axis: int(2) }),
    ], [m23, vec('ax', [0]), vec('shape', [3, 1, 2])]);
    expect(get('u').shape).toEqual([1, 2, 3]);
    expect(get('r').shape).toEqual([3, 1, 2]);
    expect(get('f').shape).toEqual([3, 2]);
    expect(get('f').value).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('Expand broadcasts a column; Tile repeats a matrix', () => {
    const get = run([
      node('Expand', ['c', 'to'], ['e']),
      node('Tile', ['m', 'reps'], ['t']),
    ], [konst('c', [2, 1], [5, 9]), vec('to', [2, 3]), m23, vec('reps', [2, 2])]);
    expect(get('e').value).toEqual([5, 5, 5, 9, 9, 9]);
    expect(get('t').shape).toEqual([4, 6]);
    expect(get('t').value).toEqual([1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6]);
  });

  it('Split into uneven parts along axis 1', () => {
    const get = run([node('Split', ['m', 'sp'], ['a', 'b'], { axis: int(1) })], [m23, vec('sp', [1, 2])]);
    expect(get('a').value).toEqual([1, 4]);
    expect(get('b').value).toEqual([2, 3, 5, 6]);
  });

  it('Pad in constant, reflect and edge modes', () => {
    // 1-D [1,2,3] padded by 2 before, 1 after.
    const get = run([
      node('Pad', ['v', 'p', 'c'], ['k']),
      node('Pad', ['v', 'p'], ['r'], { mode: str('reflect') }),
      node('Pad', ['v', 'p'], ['e'], { mode: str('edge') }),
    ], [vec('v', [1, 2, 3]), vec('p', [2, 1]), scalar('c', 9)]);
    expect(get('k').value).toEqual([9, 9, 1, 2, 3, 9]);
    expect(get('r').value).toEqual([3, 2, 1, 2, 3, 2]);
    expect(get('e').value).toEqual([1, 1, 1, 2, 3, 3]);
  });

  it('Range, ConstantOfShape and NonZero', () => {
    const get = run([
      node('Range', ['start', 'limit', 'delta'], ['r']),
      node('ConstantOfShape', ['shape'], ['z']),
      node('NonZero', ['nz'], ['idx']),
    ], [scalar('start', 10), scalar('limit', 1), scalar('delta', -3), vec('shape', [2, 2]), konst('nz', [2, 2], [0, 7, 3, 0])]);
    expect(get('r').value).toEqual([10, 7, 4]);
    expect(get('z').value).toEqual([0, 0, 0, 0]);
    // Non-zero elements at (0,1) and (1,0): rows of coordinates [[0,1],[1,0]].
    expect(get('idx').shape).toEqual([2, 2]);
    expect(get('idx').value).toEqual([0, 1, 1, 0]);
  });

  it('leaves outputs beyond the element budget uncomputed', () => {
    const big = EVALUATION_BUDGET_ELEMENTS + 1;
    const get = run([node('ConstantOfShape', ['shape'], ['z']), node('Neg', ['z'], ['y'])], [vec('shape', [big])]);
    expect(get('y').shape).toEqual([big]);
    expect(get('y').value).toBeUndefined();
  });
});

describe('arithmetic, comparisons and casts with ONNX semantics', () => {
  it('integer Div truncates toward zero; Mod follows the divisor (fmod=0) or the dividend (fmod=1)', () => {
    const get = run([
      node('Div', ['a', 'b'], ['q']),
      node('Mod', ['a', 'b'], ['m']),
      node('Mod', ['a', 'b'], ['f'], { fmod: int(1) }),
    ], [vec('a', [7, -7, 7, -7]), vec('b', [2, 2, -2, -2])]);
    expect(get('q').value).toEqual([3, -3, -3, 3]);
    expect(get('m').value).toEqual([1, 1, -1, -1]);
    expect(get('f').value).toEqual([1, -1, 1, -1]);
  });

  it('float Div, Pow, Sqrt and float32 rounding', () => {
    const get = run([
      node('Div', ['a', 'b'], ['q']),
      node('Pow', ['a', 'b'], ['p']),
    ], [vec('a', [1, 2], F), vec('b', [3, 2], F)]);
    expect(get('q').value).toEqual([Math.fround(1 / 3), 1]);
    expect(get('p').value).toEqual([1, 4]);
  });

  it('broadcast Add of a column and a row gives a matrix; Min/Max are variadic', () => {
    const get = run([
      node('Add', ['col', 'row'], ['s']),
      node('Max', ['col', 'row', 'k'], ['mx']),
      node('Min', ['col', 'row'], ['mn']),
    ], [konst('col', [2, 1], [10, 20]), konst('row', [1, 3], [1, 15, 30]), scalar('k', 12)]);
    expect(get('s').value).toEqual([11, 25, 40, 21, 35, 50]);
    expect(get('mx').value).toEqual([12, 15, 30, 20, 20, 30]);
    expect(get('mn').value).toEqual([1, 10, 10, 1, 15, 20]);
  });

  it('Equal, Less, Greater, Not, And, Or and Where', () => {
    const get = run([
      node('Equal', ['a', 'b'], ['eq']),
      node('Less', ['a', 'b'], ['lt']),
      node('Greater', ['a', 'b'], ['gt']),
      node('Not', ['eq'], ['ne']),
      node('And', ['lt', 'ne'], ['and']),
      node('Or', ['gt', 'eq'], ['or']),
      node('Where', ['lt', 'a', 'b'], ['w']),
    ], [konst('a', [2, 2], [1, 5, 3, 3]), konst('b', [2], [3, 3])]);
    expect(get('eq').value).toEqual([0, 0, 1, 1]);
    expect(get('lt').value).toEqual([1, 0, 0, 0]);
    expect(get('gt').value).toEqual([0, 1, 0, 0]);
    expect(get('ne').value).toEqual([1, 1, 0, 0]);
    expect(get('and').value).toEqual([1, 0, 0, 0]);
    expect(get('or').value).toEqual([0, 1, 1, 1]);
    expect(get('w').value).toEqual([1, 3, 3, 3]); // element-wise min(a, b)
  });

  it('Abs, Neg, Floor, Ceil on floats; Cast truncates toward zero and wraps narrow ints', () => {
    const get = run([
      node('Abs', ['x'], ['abs']),
      node('Neg', ['x'], ['neg']),
      node('Floor', ['x'], ['fl']),
      node('Ceil', ['x'], ['ce']),
      node('Cast', ['x'], ['i'], { to: int(I64) }),
      node('Cast', ['big'], ['i8'], { to: int(DType.INT8) }),
      node('Cast', ['x'], ['bool'], { to: int(DType.BOOL) }),
    ], [vec('x', [-1.5, 2.5, 0], F), vec('big', [200, -129, 127], I32)]);
    expect(get('abs').value).toEqual([1.5, 2.5, 0]);
    expect(get('neg').value).toEqual([1.5, -2.5, -0]);
    expect(get('fl').value).toEqual([-2, 2, 0]);
    expect(get('ce').value).toEqual([-1, 3, 0]);
    expect(get('i').value).toEqual([-1, 2, 0]);
    expect(get('i8').value).toEqual([-56, 127, 127]); // 200 - 256; -129 + 256
    expect(get('bool').value).toEqual([1, 1, 0]);
  });

  it('ReduceProd/Sum/Min/Max over one axis of a matrix, and CumSum exclusive and reverse', () => {
    const m = konst('m', [2, 3], [1, 2, 3, 4, 5, 6]);
    const get = run([
      node('ReduceProd', ['m', 'ax1'], ['prod'], { keepdims: int(0) }),
      node('ReduceSum', ['m', 'ax0'], ['sum']),
      node('ReduceMin', ['m'], ['min'], { keepdims: int(0) }),
      node('ReduceMax', ['m', 'ax1'], ['max']),
      node('CumSum', ['m', 'cax'], ['cs'], { exclusive: int(1) }),
      node('CumSum', ['m', 'cax'], ['rcs'], { reverse: int(1) }),
    ], [m, vec('ax0', [0]), vec('ax1', [1]), scalar('cax', 1)]);
    expect(get('prod').shape).toEqual([2]);
    expect(get('prod').value).toEqual([6, 120]);
    expect(get('sum').shape).toEqual([1, 3]);
    expect(get('sum').value).toEqual([5, 7, 9]);
    expect(get('min').value).toEqual([1]);
    expect(get('max').value).toEqual([3, 6]);
    expect(get('cs').value).toEqual([0, 1, 3, 0, 4, 9]);
    expect(get('rcs').value).toEqual([6, 5, 3, 15, 11, 6]);
  });
});

describe('symbolic values stay on the folding path', () => {
  it('Swin window partition: Shape -> Gather -> Div -> Concat -> Reshape -> Transpose -> Reshape keeps a symbolic batch', () => {
    // x [B, 8, 12, 16] NHWC, window 4: view(B, H/4, 4, W/4, 4, C).permute(0,1,3,2,4,5).reshape(B*nW, 16, C).
    const get = run([
      node('Shape', ['x'], ['s']),
      node('Gather', ['s', 'i0'], ['B']), node('Gather', ['s', 'i1'], ['H']),
      node('Gather', ['s', 'i2'], ['W']), node('Gather', ['s', 'i3'], ['C']),
      node('Div', ['H', 'ws'], ['nh']), node('Div', ['W', 'ws'], ['nw']),
      ...['B', 'nh', 'ws', 'nw', 'C'].map((v) => node('Unsqueeze', [v, 'ax0'], [`${v}_1`])),
      node('Concat', ['B_1', 'nh_1', 'ws_1', 'nw_1', 'ws_1', 'C_1'], ['t1'], { axis: int(0) }),
      node('Reshape', ['x', 't1'], ['x6']),
      node('Transpose', ['x6'], ['xp'], { perm: ints([0, 1, 3, 2, 4, 5]) }),
      node('Mul', ['nh', 'nw'], ['nwin']), node('Mul', ['B', 'nwin'], ['bw']), node('Mul', ['ws', 'ws'], ['area']),
      node('Unsqueeze', ['bw', 'ax0'], ['bw_1']), node('Unsqueeze', ['area', 'ax0'], ['area_1']),
      node('Concat', ['bw_1', 'area_1', 'C_1'], ['t2'], { axis: int(0) }),
      node('Reshape', ['xp', 't2'], ['windows']),
    ], [
      { name: 'x', dtype: F, shape: [Sym.atom('B'), 8, 12, 16] },
      scalar('i0', 0), scalar('i1', 1), scalar('i2', 2), scalar('i3', 3), scalar('ws', 4), vec('ax0', [0]),
    ]);
    expect(get('x6').shape).toEqual(['B', 2, 4, 3, 4, 16]);
    expect(get('xp').shape).toEqual(['B', 2, 3, 4, 4, 16]);
    expect(get('windows').shape).toEqual(['6*B', 16, 16]);
  });
});
