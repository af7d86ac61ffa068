/**
 * Profiles with several identical arrays (MXUs per TensorCore, cores per chip).
 *
 * SCALE-sim models one array. We spread a GEMM's folds over `arrays` copies of it: column folds
 * are dealt round-robin to the arrays; when there are fewer column folds than arrays, the spare
 * arrays split each column's row folds too (for ws/is a row fold's partial sums already go through
 * the ofmap SRAM in SCALE-sim's model, so splitting them needs no extra reduction step). Every
 * array then runs SCALE-sim's model on its share with its own SRAMs; the GEMM takes as long as the
 * busiest array, whose share is the sub-GEMM returned here (full folds, so its cycles are exact:
 * foldsOnBusiest * F - 1).
 */
import type { Gemm } from '../../layers/types.js';
import type { Dataflow } from '../types.js';
import { type ArrayShape, foldCounts, gemmFromMapping, spatialMapping } from './mapping.js';

export interface ArraySplit {
  /** The GEMM share of the busiest array. */
  busiest: Gemm;
  /** Folds the busiest array runs (the folds of `busiest`). */
  busiestFolds: number;
  /** Arrays that receive at least one fold. */
  activeArrays: number;
}

export function splitAcrossArrays(gemm: Gemm, array: ArrayShape, dataflow: Dataflow, arrays: number): ArraySplit {
  const map = spatialMapping(gemm, dataflow);
  const { rowFolds, colFolds, folds } = foldCounts(map, array);
  if (arrays <= 1) return { busiest: gemm, busiestFolds: folds, activeArrays: 1 };
  const colGroups = Math.min(arrays, colFolds);
  const rowGroups = Math.min(Math.floor(arrays / colGroups), rowFolds);
  const busiestColFolds = Math.ceil(colFolds / colGroups);
  const busiestRowFolds = Math.ceil(rowFolds / rowGroups);
  const busiest = gemmFromMapping(
    {
      sr: Math.min(map.sr, busiestRowFolds * array.rows),
      sc: Math.min(map.sc, busiestColFolds * array.cols),
      t: map.t,
    },
    dataflow,
  );
  return { busiest, busiestFolds: busiestRowFolds * busiestColFolds, activeArrays: colGroups * rowGroups };
}
