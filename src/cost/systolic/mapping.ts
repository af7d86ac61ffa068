/**
 * SCALE-sim v2's dataflow mapping of one GEMM onto an R x C systolic array
 * (`compute/systolic_compute_{os,ws,is}.py`, `set_params`).
 *
 * Sr dims are laid on the array rows, Sc dims on the array columns and T is streamed in time.
 * Every fold (one Sr x Sc tile of at most R x C) is a separate pass with its own fill and drain:
 * SCALE-sim never overlaps folds.
 */
import type { Gemm } from '../../layers/types.js';
import type { Dataflow } from '../types.js';

export interface ArrayShape {
  rows: number;
  cols: number;
}

/** Spatial-row, spatial-column and temporal extents of a GEMM under one dataflow. */
export interface SpatialMapping {
  sr: number;
  sc: number;
  t: number;
}

/** os: outputs stay; ws: weights stay (K on rows); is: inputs stay (K on rows, M on columns). */
export function spatialMapping(gemm: Gemm, dataflow: Dataflow): SpatialMapping {
  switch (dataflow) {
    case 'os':
      return { sr: gemm.m, sc: gemm.n, t: gemm.k };
    case 'ws':
      return { sr: gemm.k, sc: gemm.n, t: gemm.m };
    case 'is':
      return { sr: gemm.k, sc: gemm.m, t: gemm.n };
  }
}

/** Inverse of `spatialMapping`: the GEMM whose mapping is (sr, sc, t). */
export function gemmFromMapping(map: SpatialMapping, dataflow: Dataflow): Gemm {
  switch (dataflow) {
    case 'os':
      return { m: map.sr, n: map.sc, k: map.t };
    case 'ws':
      return { m: map.t, n: map.sc, k: map.sr };
    case 'is':
      return { m: map.sc, n: map.t, k: map.sr };
  }
}

export interface FoldCounts {
  rowFolds: number;
  colFolds: number;
  folds: number;
}

export function foldCounts(map: SpatialMapping, array: ArrayShape): FoldCounts {
  const rowFolds = Math.ceil(map.sr / array.rows);
  const colFolds = Math.ceil(map.sc / array.cols);
  return { rowFolds, colFolds, folds: rowFolds * colFolds };
}

/**
 * Demand-matrix lines (cycles) per fold. os: T operands + (R-1) + (C-1) skew/drain;
 * ws/is: an extra R cycles to load the stationary operand.
 */
export function foldLineCount(dataflow: Dataflow, array: ArrayShape, t: number): number {
  const { rows, cols } = array;
  return dataflow === 'os' ? rows + cols + t - 2 : 2 * rows + cols + t - 2;
}

/**
 * The per-fold cycle count SCALE-sim divides by in "Compute Util %". A quirk: for ws and is it
 * is taken from the unskewed filter/ifmap demand matrix and is C-1 larger than the fold's lines.
 */
export function computeUtilFoldCycles(dataflow: Dataflow, array: ArrayShape, t: number): number {
  const { rows, cols } = array;
  return dataflow === 'os' ? rows + cols + t - 2 : 2 * rows + 2 * cols + t - 3;
}

/** Rows (or columns) of the array used by fold `index` when `total` items are cut in `size`s. */
export function usedInFold(total: number, size: number, index: number): number {
  return Math.min(size, total - index * size);
}
