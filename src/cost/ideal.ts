/**
 * The ideal systolic model: every PE busy every cycle, no fill, drain or stalls.
 * cycles = ceil(MACs / (rows x cols x arrays x cores)). A lower bound for any real mapping.
 */
import { OPTIMIZER_TRAFFIC_FACTOR, type Optimizer } from './choices.js';
import type { Gemm } from '../layers/types.js';
import { processingElementsOf } from './multicore.js';
import type { CostModel, GemmCost, HardwareProfile } from './types.js';

export interface IdealModelOptions {
  /** Weight-update model (default 'sgd'), as for the SCALE-sim model. */
  optimizer?: Optimizer;
}

export function idealCostModel(profile: HardwareProfile, options: IdealModelOptions = {}): CostModel {
  const pes = processingElementsOf(profile);
  const trafficFactor = OPTIMIZER_TRAFFIC_FACTOR[options.optimizer ?? 'sgd'];
  const dramBytesPerCycle = profile.dramBandwidthWordsPerCycle * profile.elementBytes;
  return {
    name: 'ideal',
    profile,
    costGemm(gemm: Gemm): GemmCost {
      const macs = gemm.m * gemm.n * gemm.k;
      if (!(macs > 0)) return { cycles: 0, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 };
      const cycles = Math.ceil(macs / pes);
      const util = (100 * macs) / (cycles * pes);
      return { cycles, stallCycles: 0, overallUtilPct: util, mappingEfficiencyPct: util, computeUtilPct: util };
    },
    /** The optimizer step is DRAM-bound: trafficFactor x paramBytes (see OPTIMIZER_TRAFFIC_FACTOR). */
    costWeightUpdate(paramBytes: number): number {
      if (paramBytes <= 0) return 0;
      return Math.ceil((trafficFactor * paramBytes) / dramBytesPerCycle);
    },
  };
}
