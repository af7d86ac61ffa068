/**
 * The SCALE-sim-exact systolic cost model: a GEMM costs what SCALE-sim v2 reports for it as a
 * "mnk" topology row on the profile's array (same cycles, stalls, utilisations and access counts).
 *
 * - CALC profiles: SCALE-sim never stalls, so cycles are closed-form (systolic/compute.ts). DRAM
 *   traffic is only simulated on request (`dramTraffic`), as it needs the address stream.
 * - USER profiles: the double-buffered SRAM/DRAM walk (memory/simulate.ts) gives the stalls.
 * - `arrays > 1`: folds are spread over the arrays; see systolic/multi-array.ts.
 * Results are memoised per (m, n, k): networks repeat shapes.
 */
import { gemmGeometry } from './memory/layer.js';
import { type MemoryConfig, simulateLayerMemory } from './memory/simulate.js';
import type { ArrayShape } from './systolic/mapping.js';
import { overallUtilPct, systolicCompute } from './systolic/compute.js';
import { splitAcrossArrays } from './systolic/multi-array.js';
import type { AccessCounts, CostModel, Gemm, GemmCost, HardwareProfile } from './types.js';

export { OPTIMIZER_TRAFFIC_FACTOR, type Optimizer } from './choices.js';
import { OPTIMIZER_TRAFFIC_FACTOR, type Optimizer } from './choices.js';

export interface ScalesimModelOptions {
  /** Weight-update model (default 'sgd'). */
  optimizer?: Optimizer;
  /** Also simulate DRAM traffic for CALC profiles (slower: walks the address streams). */
  dramTraffic?: boolean;
}

/**
 * What one array sees: a profile's SRAM sizes and DRAM bandwidth are totals for all its arrays,
 * shared evenly; sizes in words (elementBytes each); SCALE-sim moves whole words per cycle, so the
 * bandwidth is an integer >= 1.
 */
export function memoryConfigFor(profile: HardwareProfile): MemoryConfig {
  const words = (bytes: number): number => Math.max(1, Math.floor(bytes / profile.elementBytes / profile.arrays));
  return {
    mode: profile.bandwidthMode,
    ifmapSramWords: words(profile.ifmapSramBytes),
    filterSramWords: words(profile.filterSramBytes),
    ofmapSramWords: words(profile.ofmapSramBytes),
    bandwidthWords: Math.max(1, Math.floor(profile.dramBandwidthWordsPerCycle / profile.arrays)),
  };
}

const ZERO_COST: GemmCost = { cycles: 0, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 };

function scaleCounts(c: AccessCounts, factor: number): AccessCounts {
  return { ifmapReads: c.ifmapReads * factor, filterReads: c.filterReads * factor, ofmapWrites: c.ofmapWrites * factor };
}

export function scalesimCostModel(profile: HardwareProfile, options: ScalesimModelOptions = {}): CostModel {
  const array: ArrayShape = { rows: profile.arrayRows, cols: profile.arrayCols };
  const pes = array.rows * array.cols * profile.arrays;
  const memory = memoryConfigFor(profile);
  const simulate = profile.bandwidthMode === 'user' || options.dramTraffic === true;
  const trafficFactor = OPTIMIZER_TRAFFIC_FACTOR[options.optimizer ?? 'sgd'];
  const memo = new Map<string, GemmCost>();

  function compute(gemm: Gemm): GemmCost {
    const whole = systolicCompute(gemm, array, profile.dataflow);
    const split = splitAcrossArrays(gemm, array, profile.dataflow, profile.arrays);
    let cycles = systolicCompute(split.busiest, array, profile.dataflow).computeCycles;
    let stallCycles = 0;
    let dram: AccessCounts | undefined;
    if (simulate) {
      const sim = simulateLayerMemory(gemmGeometry(split.busiest), array, profile.dataflow, memory);
      cycles = sim.totalCycles;
      stallCycles = sim.stallCycles;
      // Other arrays move at most what the busiest one does: an upper bound when arrays > 1.
      dram = scaleCounts(
        { ifmapReads: sim.dram.ifmap.dramReads, filterReads: sim.dram.filter.dramReads, ofmapWrites: sim.dram.ofmap.dramWrites },
        split.activeArrays,
      );
    }
    return {
      cycles,
      stallCycles,
      overallUtilPct: overallUtilPct(whole.macs, cycles, pes),
      mappingEfficiencyPct: whole.mappingEfficiencyPct,
      computeUtilPct: whole.computeUtilPct,
      sram: whole.sram,
      ...(dram ? { dram } : {}),
    };
  }

  return {
    name: 'scalesim',
    profile,
    costGemm(gemm: Gemm): GemmCost {
      if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0) return { ...ZERO_COST };
      if (![gemm.m, gemm.n, gemm.k].every(Number.isSafeInteger)) {
        throw new Error(`scalesim cost model: GEMM dims must be integers, got ${gemm.m}x${gemm.n}x${gemm.k}`);
      }
      const key = `${gemm.m}x${gemm.n}x${gemm.k}`;
      let cost = memo.get(key);
      if (cost === undefined) {
        cost = compute(gemm);
        memo.set(key, cost);
      }
      return cost;
    },
    /** Optimizer step: trafficFactor x paramBytes over the DRAM interface (see OPTIMIZER_TRAFFIC_FACTOR). */
    costWeightUpdate(paramBytes: number): number {
      if (paramBytes <= 0) return 0;
      const bytesPerCycle = profile.dramBandwidthWordsPerCycle * profile.elementBytes;
      return Math.ceil((trafficFactor * paramBytes) / bytesPerCycle);
    },
  };
}
