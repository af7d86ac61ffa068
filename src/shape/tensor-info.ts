/** What shape inference knows of one value: dtype, shape, and (for small tensors) the elements. */
import { dimEquals, dimProduct, type Dim } from '../ir/dim.js';

export interface TensorInfo {
  dtype: number;
  /** undefined = rank unknown (only for values no rule can know, e.g. sequences). */
  shape: readonly Dim[] | undefined;
  /**
   * Row-major elements when known and small: shape arithmetic (Shape -> Gather -> Concat ...)
   * folded at inference time. Symbolic elements are dims flowing through Shape.
   */
  value?: readonly Dim[];
}

/** Outputs larger than this are not folded (their values are never needed for shapes). */
export const MAX_FOLDED_ELEMENTS = 4096;

export function numel(shape: readonly Dim[]): Dim {
  return dimProduct(shape);
}

/** Static element count, or undefined when symbolic. */
export function staticNumel(shape: readonly Dim[]): number | undefined {
  const n = numel(shape);
  return typeof n === 'number' ? n : undefined;
}

export function foldable(shape: readonly Dim[]): boolean {
  const n = staticNumel(shape);
  return n !== undefined && n <= MAX_FOLDED_ELEMENTS;
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
    const outDim = outShape[axis]!;
    const coord = rest % outDim;
    rest = Math.floor(rest / outDim);
    const inAxis = axis - (outShape.length - inShape.length);
    if (inAxis >= 0) {
      const inDim = inShape[inAxis]!;
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
