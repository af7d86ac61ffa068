/** What shape inference knows of one value: dtype, shape, and (for small tensors) the elements. */
import type { ValueType } from '../ir/graph.js';
import { at, indexOutOfRange } from '../errors.js';
import { dimEquals, dimProduct, runtimeDim, type Dim } from '../ir/dim.js';

export interface TensorInfo {
  dtype: number;
  /** undefined = rank unknown (only for values no rule can know, e.g. sequences). */
  shape: readonly Dim[] | undefined;
  /**
   * Row-major elements when known and small: shape arithmetic (Shape -> Gather -> Concat ...)
   * folded at inference time. Symbolic elements are dims flowing through Shape.
   */
  value?: readonly Dim[];
  /** Re-batching only: extent below the batch factor inside the dim that holds it (default: batch outermost). */
  batchInner?: number;
  /** Why the shape is unknown, for the error of a rule that needs it (an If whose branches differ in rank). */
  unknownBecause?: string;
  /** Absent for tensors. Sequences and optionals describe their element in `element`. */
  kind?: 'sequence' | 'optional';
  element?: TensorInfo;
  /** Number of elements of a sequence, when known. */
  length?: Dim;
}

/** An unknown tensor (rank unknown, dtype undefined). */
export const UNKNOWN_TENSOR: TensorInfo = { dtype: 0, shape: undefined };

export function sequenceOf(element: TensorInfo): TensorInfo {
  return { dtype: 0, shape: undefined, kind: 'sequence', element };
}

export function optionalOf(element: TensorInfo): TensorInfo {
  return { dtype: 0, shape: undefined, kind: 'optional', element };
}

/**
 * Values larger than this (64 Ki elements) are not folded or evaluated: shape arithmetic never
 * needs them, and computing them would cost time and memory for nothing.
 */
export const MAX_FOLDED_ELEMENTS = 64 * 1024;

export function numel(shape: readonly Dim[]): Dim {
  return dimProduct(shape);
}

/** Static element count, or undefined when symbolic. */
export function staticNumel(shape: readonly Dim[]): number | undefined {
  const n = numel(shape);
  return typeof n === 'number' ? n : undefined;
}

/** Whether a value of this shape is small enough to fold (and valid: a negative dim is not). */
export function foldable(shape: readonly Dim[]): boolean {
  const n = staticNumel(shape);
  return n !== undefined && n >= 0 && n <= MAX_FOLDED_ELEMENTS && shape.every((d) => (d as number) >= 0);
}

/** Numpy broadcasting; undefined when the shapes are incompatible. */
export function broadcastShapes(shapes: readonly (readonly Dim[])[]): Dim[] | undefined {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out: Dim[] = [];
  for (let i = 0; i < rank; i++) {
    let dim: Dim = 1;
    for (const s of shapes) {
      const d = s[s.length - rank + i];
      if (d === undefined || d === 1) continue;
      if (dim === 1) dim = d;
      else if (!dimEquals(dim, d)) {
        // Symbolic vs number: numpy would require equality at run time; keep the static one.
        if (typeof dim !== 'number' && typeof d === 'number') dim = d;
        else if (typeof dim === 'number' && typeof d === 'number') return undefined;
      }
    }
    out.push(dim);
  }
  return out;
}

/** Index of element `flat` of `outShape` in a tensor of `inShape` broadcast to it. */
export function broadcastIndex(flat: number, outShape: readonly number[], inShape: readonly number[]): number {
  let index = 0;
  let stride = 1;
  let rest = flat;
  for (let axis = outShape.length - 1; axis >= 0; axis--) {
    const outDim = outShape[axis] ?? indexOutOfRange(axis);
    const coord = rest % outDim;
    rest = Math.floor(rest / outDim);
    const inAxis = axis - (outShape.length - inShape.length);
    if (inAxis >= 0) {
      const inDim = inShape[inAxis] ?? indexOutOfRange(inAxis);
      if (inDim !== 1) index += coord * stride;
      stride *= inDim;
    }
  }
  return index;
}

export function normaliseAxis(axis: number, rank: number): number | undefined {
  const a = axis < 0 ? axis + rank : axis;
  return a >= 0 && a < rank ? a : undefined;
}

/**
 * One description covering two possible values (If branches, Loop iterations, sequence
 * elements): equal dims stay, differing dims become run-time dims named by `label`.
 */
export function unifyInfo(a: TensorInfo, b: TensorInfo, label: string): TensorInfo {
  if (a.kind !== b.kind) return UNKNOWN_TENSOR;
  if (a.kind === 'sequence') {
    // An empty sequence constrains nothing: its element type is the other side's.
    if (a.length === 0 && b.length !== 0) return { ...b, length: undefined };
    if (b.length === 0 && a.length !== 0) return { ...a, length: undefined };
  }
  if (a.kind !== undefined) {
    const element = unifyInfo(a.element ?? UNKNOWN_TENSOR, b.element ?? UNKNOWN_TENSOR, label);
    const length = a.length !== undefined && b.length !== undefined && dimEquals(a.length, b.length) ? { length: a.length } : {};
    return { dtype: 0, shape: undefined, kind: a.kind, element, ...length };
  }
  const dtype = a.dtype === b.dtype || b.dtype === 0 ? a.dtype : a.dtype === 0 ? b.dtype : 0;
  if (a.shape === undefined || b.shape === undefined || a.shape.length !== b.shape.length) return { dtype, shape: undefined };
  const other = b.shape;
  const shape = a.shape.map((d, i) => (dimEquals(d, at(other, i)) ? d : runtimeDim(`${label}[${i}]`)));
  const otherValue = b.value;
  const sameValue = a.value !== undefined && otherValue !== undefined && a.value.length === otherValue.length && a.value.every((v, i) => dimEquals(v, at(otherValue, i)));
  return { dtype, shape, ...(sameValue ? { value: a.value } : {}) };
}

/** The same description without folded elements (values that change, e.g. loop-carried). */
export function withoutValue(info: TensorInfo): TensorInfo {
  if (info.value === undefined) return info;
  const { value: _dropped, ...rest } = info;
  return rest;
}

/** What a declared value type says, as a TensorInfo (sequences and optionals with their element). */
export function declaredInfo(type: ValueType): TensorInfo {
  if (type.kind === 'tensor') return { dtype: type.dtype, shape: type.shape };
  if (type.kind === 'sequence') return sequenceOf(declaredInfo(type.element));
  if (type.kind === 'optional') return optionalOf(declaredInfo(type.element));
  return UNKNOWN_TENSOR;
}
