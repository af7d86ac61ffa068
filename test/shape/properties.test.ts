/** Property tests: symbolic dim algebra, broadcasting, Reshape round trips, Slice clamping. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dimAdd, dimEquals, dimFloorDiv, dimMul, dimSub, substituteDim, Sym, type Dim } from '../../src/ir/dim.js';
import { DType } from '../../src/ir/dtype.js';
import { sliceAxis, staticSlice } from '../../src/shape/rules/slice.js';
import { broadcastShapes } from '../../src/shape/tensor-info.js';
import { inferGraph, int, node } from './graph.js';
import { present } from '../helpers/present.js';

const ATOMS = ['batch', 'sequence', 'heads'];

/** Random polynomials over three named dims with small integer coefficients. */
const dimArb: fc.Arbitrary<Dim> = fc.letrec<{ dim: Dim }>((tie) => ({
  dim: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: -6, max: 6 }),
    fc.constantFrom(...ATOMS).map((a) => Sym.atom(a)),
    fc.tuple(tie('dim'), tie('dim')).map(([a, b]) => dimAdd(a, b)),
    fc.tuple(tie('dim'), tie('dim')).map(([a, b]) => dimMul(a, b)),
  ),
})).dim;

const bindingsArb = fc.tuple(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 }))
  .map((vs) => new Map(ATOMS.map((a, i) => [a, present(vs[i], `value of ${a}`)])));

const same = (a: Dim, b: Dim): boolean => dimEquals(a, b);

describe('Dim polynomial algebra', () => {
  it('is a commutative ring: distributivity, commutativity, associativity, inverses', () => {
    fc.assert(fc.property(dimArb, dimArb, dimArb, (a, b, c) => {
      expect(same(dimMul(dimAdd(a, b), c), dimAdd(dimMul(a, c), dimMul(b, c)))).toBe(true);
      expect(same(dimAdd(a, b), dimAdd(b, a))).toBe(true);
      expect(same(dimMul(a, b), dimMul(b, a))).toBe(true);
      expect(same(dimMul(dimMul(a, b), c), dimMul(a, dimMul(b, c)))).toBe(true);
      expect(same(dimSub(a, a), 0)).toBe(true);
      expect(same(dimAdd(dimSub(a, b), b), a)).toBe(true);
    }));
  });

  it('evaluates like numbers (substitution is a ring homomorphism)', () => {
    fc.assert(fc.property(dimArb, dimArb, bindingsArb, (a, b, env) => {
      const at = (d: Dim): Dim => substituteDim(d, env);
      const num = (x: number): number => x + 0; // -0 -> 0
      expect(num(at(dimAdd(a, b)) as number)).toBe(num((at(a) as number) + (at(b) as number)));
      expect(num(at(dimMul(a, b)) as number)).toBe(num((at(a) as number) * (at(b) as number)));
      expect(num(at(dimSub(a, b)) as number)).toBe(num((at(a) as number) - (at(b) as number)));
    }));
  });

  it('divides exactly by a monomial factor, and floor-divides numbers like Math.floor', () => {
    const monomial = fc.tuple(fc.integer({ min: 1, max: 5 }), fc.subarray(ATOMS)).map(([c, atoms]) => atoms.reduce<Dim>((p, a) => dimMul(p, Sym.atom(a)), c));
    fc.assert(fc.property(dimArb, monomial, bindingsArb, (a, m, env) => {
      expect(same(dimFloorDiv(dimMul(a, m), m), a)).toBe(true);
      const n = substituteDim(a, env) as number;
      const d = substituteDim(m, env) as number;
      expect(dimFloorDiv(n, d)).toBe(Math.floor(n / d));
    }));
  });

  it('prints canonically: equal polynomials print the same', () => {
    fc.assert(fc.property(dimArb, dimArb, (a, b) => {
      expect(String(dimAdd(a, b))).toBe(String(dimAdd(b, a)));
    }));
  });
});

const staticShape = fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 4 });

/** numpy's rule, one aligned axis at a time. */
function numpyBroadcast(a: readonly number[], b: readonly number[]): number[] | undefined {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const x = a[a.length - rank + i] ?? 1;
    const y = b[b.length - rank + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) return undefined;
    out.push(x === 1 ? y : x);
  }
  return out;
}

describe('broadcasting', () => {
  it('is commutative and matches numpy', () => {
    // Shapes built from a common shape with some axes set to 1 or dropped, so most pairs broadcast.
    const pair = staticShape.chain((base) => fc.tuple(
      fc.tuple(...base.map((d) => fc.constantFrom(d, 1))).chain((s) => fc.nat(s.length).map((k) => s.slice(k))),
      fc.oneof(fc.tuple(...base.map((d) => fc.constantFrom(d, 1))), staticShape),
    ));
    fc.assert(fc.property(pair, ([a, b]) => {
      expect(broadcastShapes([a, b])).toEqual(numpyBroadcast(a, b));
      expect(broadcastShapes([a, b])).toEqual(broadcastShapes([b, a]));
    }));
  });

  it('is associative over three shapes', () => {
    fc.assert(fc.property(staticShape, staticShape, staticShape, (a, b, c) => {
      const ab = broadcastShapes([a, b]);
      const bc = broadcastShapes([b, c]);
      const left = ab && broadcastShapes([ab, c]);
      const right = bc && broadcastShapes([a, bc]);
      if (left !== undefined && right !== undefined) expect(left).toEqual(right);
      if (left !== undefined && right !== undefined) expect(broadcastShapes([a, b, c])).toEqual(left);
    }));
  });
});

describe('Reshape', () => {
  /** A shape and a refactoring of its element count, one dim of which is given as -1. */
  const reshapeCase = fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 4 }).chain((shape) => {
    const total = shape.reduce((a, b) => a * b, 1);
    const divisors = Array.from({ length: total }, (_, i) => i + 1).filter((d) => total % d === 0);
    return fc.tuple(fc.constant(shape), fc.constantFrom(...divisors), fc.boolean());
  });

  it('round-trips through a -1 target, statically and with a symbolic batch', () => {
    fc.assert(fc.property(reshapeCase, ([shape, first, symbolic]) => {
      const input: Dim[] = symbolic ? [Sym.atom('batch'), ...shape] : shape;
      const there = symbolic ? [0, first, -1] : [first, -1];
      const back = symbolic ? [0, ...shape] : shape;
      const inferred = inferGraph(
        [node('Reshape', ['x', 'there'], ['y']), node('Reshape', ['y', 'back'], ['z'])],
        [
          { name: 'x', dtype: DType.FLOAT, shape: input },
          { name: 'there', dtype: DType.INT64, shape: [there.length], value: there },
          { name: 'back', dtype: DType.INT64, shape: [back.length], value: back },
        ],
      );
      const total = shape.reduce((a, b) => a * b, 1);
      const y = present(inferred.values.get('y')?.shape, 'shape of y');
      expect(y.map(String)).toEqual((symbolic ? [Sym.atom('batch'), first, total / first] : [first, total / first]).map(String));
      expect(inferred.values.get('z')?.shape?.map(String)).toEqual(input.map(String));
    }));
  });
});

/**
 * Slicing element by element as the ONNX spec words it. Unlike CPython, a negative step clamps the
 * start to [0, dim - 1] (not [-1, dim - 1]): x[-10:-100:-1] on 5 elements takes element 0.
 */
function bruteSlice(dim: number, start: number, end: number, step: number): number[] {
  const norm = (i: number, low: number, high: number): number => {
    const j = i < 0 ? i + dim : i;
    return Math.min(Math.max(j, low), high);
  };
  const s = step > 0 ? norm(start, 0, dim) : norm(start, 0, dim - 1);
  const e = step > 0 ? norm(end, 0, dim) : norm(end, -1, dim - 1);
  const out: number[] = [];
  for (let i = s; step > 0 ? i < e : i > e; i += step) out.push(i);
  return out;
}

describe('Slice', () => {
  const index = fc.oneof(fc.integer({ min: -12, max: 12 }), fc.constantFrom(2 ** 31 - 1, -(2 ** 31), 2 ** 53 - 1));
  const step = fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: -4, max: -1 }));

  it('clamps like element-by-element slicing', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 10 }), index, index, step, (dim, start, end, st) => {
      const picked = bruteSlice(dim, start, end, st);
      const r = staticSlice(dim, start, end, st);
      expect(r.length).toBe(picked.length);
      if (picked.length > 0) expect(r.first).toBe(picked[0]);
    }));
  });

  it('on a symbolic dim agrees with the static slice once the dim is bound (indices inside the dim)', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 8 }), fc.integer({ min: 8, max: 30 }), fc.boolean(), (a, b, n, toEnd) => {
      const [start, end] = toEnd ? [a, 2 ** 31 - 1] : [Math.min(a, b), Math.max(a, b)];
      const symbolic = sliceAxis(Sym.atom('n'), start, end, 1);
      expect(substituteDim(symbolic.length, new Map([['n', n]]))).toBe(staticSlice(n, start, end, 1).length);
    }));
  });

  it('takes a constant-width window at a symbolic offset (Loop bodies: x[i : i + 1])', () => {
    const i = Sym.atom('i');
    expect(sliceAxis(5, i, dimAdd(i, 1), 1).length).toBe(1);
    expect(sliceAxis(Sym.atom('n'), i, dimAdd(i, 3), 1).length).toBe(3);
  });
});

describe('Flatten of a symbolic batch', () => {
  it('keeps the product symbolic', () => {
    const inferred = inferGraph([node('Flatten', ['x'], ['y'], { axis: int(2) })], [{ name: 'x', dtype: DType.FLOAT, shape: [Sym.atom('batch'), 3, 4, 5] }]);
    expect(inferred.values.get('y')?.shape?.map(String)).toEqual(['3*batch', '20']);
  });
});
