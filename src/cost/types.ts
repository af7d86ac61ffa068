/**
 * The contract between GEMM lowering and every cost model.
 * Writers take compute times only through `CostModel`, so swapping the ideal model for the
 * SCALE-sim-exact systolic model never touches a writer.
 */

import type { VectorOpClass } from '../ir/op-class.js';
import type { Gemm } from '../layers/types.js';
import type { VectorOpsPerElement } from './vector.js';

export type Dataflow = 'os' | 'ws' | 'is';

/** How DRAM reads are modelled: SCALE-sim's CALC (never stall) or USER (bandwidth-limited). */
export type BandwidthMode = 'calc' | 'user';

export interface HardwareProfile {
  /** Short name (file stem for shipped profiles). */
  name: string;
  /** Where the numbers come from (paper, datasheet, SCALE-sim config). */
  source: string;
  arrayRows: number;
  arrayCols: number;
  /** Independent arrays (cores / MXUs); a layer's GEMM folds are spread over them. */
  arrays: number;
  dataflow: Dataflow;
  ifmapSramBytes: number;
  filterSramBytes: number;
  ofmapSramBytes: number;
  bandwidthMode: BandwidthMode;
  /** DRAM interface bandwidth in elements (words) per cycle, SCALE-sim's `Bandwidth`. */
  dramBandwidthWordsPerCycle: number;
  clockMHz: number;
  /** Bytes per element of the arrays' operands. */
  elementBytes: number;
  /**
   * SCALE-sim's operand base addresses (a .cfg's Ifmap/Filter/OfmapOffset), when one is negative:
   * the element an offset puts at address -1 counts as no element (access/layer.ts).
   */
  addressOffsets?: { ifmap: number; filter: number; ofmap: number };
  /** Vector unit (cost/vector.ts): element operations per cycle; default arrayCols x arrays. */
  vectorLanes?: number;
  /** Vector unit's on-chip memory bandwidth in bytes per cycle; default 12 x vectorLanes. */
  vectorBytesPerCycle?: number;
  /** Overrides of the ops-per-element table, by op class. */
  vectorOpsPerElement?: Partial<Record<VectorOpClass, VectorOpsPerElement>>;
  /**
   * A chip of several identical cores (GPU SMs, TPU TensorCores; cost/multicore.ts). When set,
   * `arrays`, the three SRAMs and the vector unit are per core, and the DRAM (HBM) bandwidth is the
   * chip's. Absent on single-core profiles, which cost as before.
   */
  cores?: number;
  /** The chip's shared L2 (or last-level cache), with `cores` only: size in bytes. */
  l2Bytes?: number;
  /** The L2's bandwidth to all cores together, bytes per (core) clock cycle. */
  l2BytesPerCycle?: number;
}

/** Cost of one GEMM on one profile. Cycles are array clock cycles. */
export interface GemmCost {
  /** Total cycles including stalls (SCALE-sim "Total Cycles"). */
  cycles: number;
  stallCycles: number;
  /** Percentages in [0, 100]. */
  overallUtilPct: number;
  mappingEfficiencyPct: number;
  computeUtilPct: number;
  /** Words the array reads from / writes to its SRAMs (SCALE-sim's "SRAM ..." counts), if known. */
  sram?: AccessCounts;
  /** Words moved between SRAM and DRAM (SCALE-sim's "DRAM ..." counts), if the model simulated them. */
  dram?: AccessCounts;
}

/** Per-operand word counts: ifmap and filter are read, ofmap is written. */
export interface AccessCounts {
  ifmapReads: number;
  filterReads: number;
  ofmapWrites: number;
}

export interface CostModel {
  /** Name shown in reports, e.g. "ideal" or "scalesim". */
  readonly name: string;
  readonly profile: HardwareProfile;
  costGemm(gemm: Gemm): GemmCost;
  /** Cycles of the optimizer step that updates `paramBytes` bytes of parameters. */
  costWeightUpdate(paramBytes: number): number;
}

/** Cycles of one layer for every training pass, plus the optimizer's weight update. */
export interface LayerCost {
  fwd: GemmCost;
  ig: GemmCost;
  wg: GemmCost;
  /** Cycles of the weight-update (optimizer) step for this layer's parameters. */
  updateCycles: number;
}

/** The three training passes of a layer: forward, input gradient, weight gradient. */
export type TrainingPass = 'fwd' | 'ig' | 'wg';
