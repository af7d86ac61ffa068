/**
 * SCALE-sim computes "Mapping Efficiency %" and "Compute Util %" as the float mean of per-fold
 * ratios, summed in fold order (column folds outer, row folds inner). The closed forms in
 * compute.ts equal these to ~1e-15 relative; this module reproduces the float summation itself so
 * that the SCALE-sim-compatible reports match SCALE-sim's output digit for digit. O(folds).
 */
import type { Dataflow } from '../types.js';
import { type ArrayShape, type SpatialMapping, computeUtilFoldCycles, foldCounts, usedInFold } from './mapping.js';

export interface FoldMeans {
  mappingEfficiencyPct: number;
  computeUtilPct: number;
}

export function scalesimFoldMeans(map: SpatialMapping, array: ArrayShape, dataflow: Dataflow): FoldMeans {
  const { rowFolds, colFolds, folds } = foldCounts(map, array);
  const pes = array.rows * array.cols;
  const cycF = computeUtilFoldCycles(dataflow, array, map.t);
  let mappingSum = 0;
  let computeSum = 0;
  for (let fc = 0; fc < colFolds; fc++) {
    const colsUsed = usedInFold(map.sc, array.cols, fc);
    for (let fr = 0; fr < rowFolds; fr++) {
      const macUsed = usedInFold(map.sr, array.rows, fr) * colsUsed;
      // Python divides ints exactly-rounded; so do doubles while the operands stay below 2^53.
      mappingSum += macUsed / pes;
      computeSum += (macUsed * map.t) / (pes * cycF);
    }
  }
  return { mappingEfficiencyPct: (mappingSum / folds) * 100, computeUtilPct: (computeSum / folds) * 100 };
}
