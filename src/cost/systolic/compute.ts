/**
 * Closed-form compute model of one GEMM on one systolic array, exactly as SCALE-sim v2 reports it
 * when memory never stalls (CALC mode). Derivations: docs/scalesim-model.md §4-6.
 *
 *   cycles              = folds * F - 1            (F = lines per fold; the -1 is SCALE-sim's
 *                                                   "service cycle of the last line")
 *   mapping efficiency  = Sr*Sc / (folds*R*C)
 *   compute util        = Sr*Sc*T / (folds*R*C*cycF) (cycF: the per-fold quirk, see mapping.ts)
 *   overall util        = M*N*K / (cycles*R*C)
 *
 * All values are exact integers below 2^53 for any realistic GEMM; percentages are plain doubles.
 */
import type { Gemm } from '../../layers/types.js';
import type { AccessCounts, Dataflow } from '../types.js';
import {
  type ArrayShape,
  type FoldCounts,
  type SpatialMapping,
  computeUtilFoldCycles,
  foldCounts,
  foldLineCount,
  spatialMapping,
} from './mapping.js';

export interface SystolicCompute {
  mapping: SpatialMapping;
  folds: FoldCounts;
  /** Demand lines per fold. */
  foldLines: number;
  /** Cycles without any memory stall: folds * foldLines - 1. */
  computeCycles: number;
  macs: number;
  mappingEfficiencyPct: number;
  computeUtilPct: number;
  /** SRAM accesses the array makes (SCALE-sim's DETAILED_ACCESS_REPORT "SRAM ..." columns). */
  sram: AccessCounts;
}

export function systolicCompute(gemm: Gemm, array: ArrayShape, dataflow: Dataflow): SystolicCompute {
  const mapping = spatialMapping(gemm, dataflow);
  const folds = foldCounts(mapping, array);
  const foldLines = foldLineCount(dataflow, array, mapping.t);
  const pes = array.rows * array.cols;
  const usedPeFolds = mapping.sr * mapping.sc; // sum over folds of rows_used * cols_used
  const cycF = computeUtilFoldCycles(dataflow, array, mapping.t);
  return {
    mapping,
    folds,
    foldLines,
    computeCycles: folds.folds * foldLines - 1,
    macs: gemm.m * gemm.n * gemm.k,
    mappingEfficiencyPct: (100 * usedPeFolds) / (folds.folds * pes),
    computeUtilPct: (100 * usedPeFolds * mapping.t) / (folds.folds * pes * cycF),
    sram: sramAccessCounts(gemm, array, dataflow, folds),
  };
}

/**
 * SRAM reads/writes per operand (docs/scalesim-model.md §6 table). Operands that are re-streamed per fold are
 * re-read; ws/is write partial sums once per row fold. The os ofmap count keeps SCALE-sim's
 * `+= rows + cols` per fold (a `+` where `*` was meant).
 */
export function sramAccessCounts(gemm: Gemm, array: ArrayShape, dataflow: Dataflow, folds: FoldCounts): AccessCounts {
  const { m, n, k } = gemm;
  switch (dataflow) {
    case 'os':
      return {
        ifmapReads: folds.colFolds * m * k,
        filterReads: folds.rowFolds * k * n,
        ofmapWrites: m * n + folds.folds * (array.rows + array.cols),
      };
    case 'ws':
      return { ifmapReads: folds.colFolds * m * k, filterReads: k * n, ofmapWrites: folds.rowFolds * m * n };
    case 'is':
      return { ifmapReads: k * m, filterReads: folds.colFolds * k * n, ofmapWrites: folds.rowFolds * m * n };
  }
}

/** SCALE-sim's "Overall Util %": MACs over the PE-cycles of the whole run, stalls included. */
export function overallUtilPct(macs: number, totalCycles: number, pes: number): number {
  return totalCycles <= 0 ? 0 : (100 * macs) / (totalCycles * pes);
}
