/**
 * The ideal systolic model: every PE busy every cycle, no fill, drain or stalls.
 * cycles = ceil(MACs / (rows x cols x arrays)). A lower bound for any real mapping.
 */
import type { CostModel, Gemm, GemmCost, HardwareProfile } from './types.js';

export function idealCostModel(profile: HardwareProfile): CostModel {
  const pes = profile.arrayRows * profile.arrayCols * profile.arrays;
  return {
    name: 'ideal',
    profile,
    costGemm(gemm: Gemm): GemmCost {
      const macs = gemm.m * gemm.n * gemm.k;
      const cycles = Math.ceil(macs / pes);
      const util = cycles === 0 ? 0 : (100 * macs) / (cycles * pes);
      return { cycles, stallCycles: 0, overallUtilPct: util, mappingEfficiencyPct: util, computeUtilPct: util };
    },
    costWeightUpdate(paramBytes: number): number {
      // Read weight + gradient, write weight, over the DRAM interface (plain SGD).
      const bytesPerCycle = profile.dramBandwidthWordsPerCycle * profile.elementBytes;
      return Math.ceil((3 * paramBytes) / bytesPerCycle);
    },
  };
}
