/**
 * Dense numeric tensors for the constant evaluator: a static shape and row-major elements, plus
 * the index arithmetic the operators share (strides, broadcasting, per-dtype rounding).
 */
import { indexOutOfRange } from '../../errors.js';
import { elementCount } from '../../ir/dim.js';
import { DType, isIntegerDType } from '../../ir/dtype.js';

export interface NumTensor {
  shape: readonly number[];
  data: readonly number[];
}

/** Row-major strides of a static shape. */
export function stridesOf(shape: readonly number[]): number[] {
  const strides = Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) strides[i] = (strides[i + 1] ?? indexOutOfRange(i + 1)) * (shape[i + 1] ?? indexOutOfRange(i + 1));
  return strides;
}

/** Coordinates of element `flat` in a tensor of `shape`. */
export function unravel(flat: number, shape: readonly number[]): number[] {
  const coords = Array<number>(shape.length).fill(0);
  let rest = flat;
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    const d = shape[axis] ?? indexOutOfRange(axis);
    coords[axis] = d === 0 ? 0 : rest % d;
    rest = Math.floor(rest / d);
  }
  return coords;
}

/** Builds a tensor of `shape` whose element at coordinates c is `at(c)`. */
export function generate(shape: readonly number[], at: (coords: number[]) => number): number[] {
  const count = elementCount(shape);
  const out = new Array<number>(count);
  const coords = Array<number>(shape.length).fill(0);
  for (let flat = 0; flat < count; flat++) {
    out[flat] = at(coords);
    // Odometer increment of the coordinates (cheaper than unravelling every element).
    for (let axis = shape.length - 1; axis >= 0; axis--) {
      const next = (coords[axis] ?? indexOutOfRange(axis)) + 1;
      coords[axis] = next;
      if (next < (shape[axis] ?? indexOutOfRange(axis))) break;
      coords[axis] = 0;
    }
  }
  return out;
}

/** Flat index in `shape` of the broadcast coordinates `coords` of a rank-`outRank` output. */
export function broadcastOffset(coords: readonly number[], shape: readonly number[], strides: readonly number[]): number {
  const lead = coords.length - shape.length;
  let index = 0;
  for (let axis = 0; axis < shape.length; axis++) if (shape[axis] !== 1) index += (coords[lead + axis] ?? indexOutOfRange(lead + axis)) * (strides[axis] ?? indexOutOfRange(axis));
  return index;
}

const WRAP_BITS: Partial<Record<number, { bits: number; signed: boolean }>> = {
  [DType.INT8]: { bits: 8, signed: true }, [DType.UINT8]: { bits: 8, signed: false },
  [DType.INT16]: { bits: 16, signed: true }, [DType.UINT16]: { bits: 16, signed: false },
  [DType.INT32]: { bits: 32, signed: true }, [DType.UINT32]: { bits: 32, signed: false },
};

/**
 * A computed number as an element of `dtype` holds it: float32 rounding, integer truncation with
 * two's-complement wrap-around for the narrow types, 0/1 for BOOL. INT64 and DOUBLE are kept as
 * JavaScript numbers (exact up to 2^53, far beyond any shape arithmetic).
 */
export function asDType(x: number, dtype: number): number {
  if (dtype === DType.BOOL) return x !== 0 && !Number.isNaN(x) ? 1 : 0;
  if (dtype === DType.FLOAT) return Math.fround(x);
  if (dtype === DType.FLOAT16) return toFloat16(x);
  if (dtype === DType.BFLOAT16) return toBFloat16(x);
  if (!isIntegerDType(dtype)) return x;
  if (!Number.isFinite(x)) return x;
  const t = Math.trunc(x);
  const wrap = WRAP_BITS[dtype];
  if (wrap === undefined) return t;
  const range = 2 ** wrap.bits;
  let r = ((t % range) + range) % range;
  if (wrap.signed && r >= range / 2) r -= range;
  return r;
}

/** Rounds to the nearest IEEE half-precision value (ties to even), subnormals and overflow included. */
function toFloat16(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const sign = Math.sign(x);
  const a = Math.abs(x);
  if (a >= 65520) return sign * Infinity; // past the largest half (65504) by half an ulp or more
  const exponent = Math.max(-14, Math.floor(Math.log2(a)));
  const ulp = 2 ** (exponent - 10);
  const q = a / ulp;
  let r = Math.round(q);
  if (q % 1 === 0.5 && r % 2 !== 0) r -= 1; // Math.round sends ties up; IEEE sends them to even
  return sign * r * ulp;
}

/** Rounds to bfloat16 (the upper half of a float32, ties to even). */
function toBFloat16(x: number): number {
  if (!Number.isFinite(x)) return x;
  const bits = new Uint32Array(new Float32Array([x]).buffer);
  bits[0] = ((bits[0] ?? indexOutOfRange(0)) + 0x7fff + (((bits[0] ?? indexOutOfRange(0)) >>> 16) & 1)) & 0xffff0000;
  return new Float32Array(bits.buffer)[0] ?? indexOutOfRange(0);
}
