/**
 * The SCALE-sim-exact systolic cost model: a GEMM costs what SCALE-sim v2 reports for it as a
 * "mnk" topology row on the profile's array (same cycles, stalls, utilisations and access counts).
 *
 * - CALC profiles: SCALE-sim never stalls, so cycles are closed-form (systolic/compute.ts). DRAM
 *   traffic is only simulated on request (`dramTraffic`), as it needs the address stream.
 * - USER profiles: the double-buffered SRAM/DRAM walk (access/simulate.ts) gives the stalls.
 * - `arrays > 1`: folds are spread over the arrays; see systolic/multi-array.ts.
 * - `cores > 1` (a GPU, a TPU chip): output tiles are spread over the cores, each tile costed by
 *   this model on one core, with a bandwidth bound; see multicore.ts.
 * Results are memoised per (m, n, k): networks repeat shapes, and a USER-mode walk is O(cycles).
 */
import { innerMap } from '../maps.js';
import { InputError } from '../errors.js';
import { OPTIMIZER_TRAFFIC_FACTOR, type Optimizer } from './choices.js';
import { MIN_SRAM_WORDS, SRAM_SETS } from './access/constants.js';
import { gemmGeometry } from './access/layer.js';
import { type MemoryConfig, simulateLayerMemory } from './access/simulate.js';
import { overallUtilPct, systolicCompute } from './systolic/compute.js';
import type { ArrayShape } from './systolic/mapping.js';
import { splitAcrossArrays } from './systolic/multi-array.js';
import { coreProfileOf, coresOf, multicoreGemmCost } from './multicore.js';
import type { Gemm } from '../layers/types.js';
import type { AccessCounts, CostModel, GemmCost, HardwareProfile } from './types.js';

export { OPTIMIZER_TRAFFIC_FACTOR, type Optimizer } from './choices.js';

export interface ScalesimModelOptions {
  /** Weight-update model (default 'sgd'). */
  optimizer?: Optimizer;
  /** Also simulate DRAM traffic for CALC profiles (slower: walks the address streams). */
  dramTraffic?: boolean;
}

/**
 * What one array sees: a profile's SRAM sizes and DRAM bandwidth are totals for all its arrays,
 * shared evenly; sizes in words (elementBytes each); SCALE-sim moves whole words per cycle, so the
 * bandwidth is an integer >= 1. Profiles read from files are checked on load (hardware.ts); this
 * check catches profiles built in code, whose buffers would otherwise never make progress.
 */
export function memoryConfigFor(profile: HardwareProfile): MemoryConfig {
  const words = (bytes: number, key: string): number => {
    const perArray = Math.floor(bytes / profile.elementBytes / profile.arrays);
    if (!(perArray >= MIN_SRAM_WORDS)) {
      throw new InputError(`${profile.name}: ${key} holds ${perArray} word(s) per array; the SRAM model needs at least ${MIN_SRAM_WORDS}`);
    }
    return perArray;
  };
  return {
    mode: profile.bandwidthMode,
    ifmapSramWords: words(profile.ifmapSramBytes, 'ifmapSram'),
    filterSramWords: words(profile.filterSramBytes, 'filterSram'),
    ofmapSramWords: words(profile.ofmapSramBytes, 'ofmapSram'),
    bandwidthWordsPerCycle: Math.max(1, Math.floor(profile.dramBandwidthWordsPerCycle / profile.arrays)),
    addressOffsets: profile.addressOffsets,
  };
}

/**
 * Largest memory walk run: compute cycles over the words a USER-mode prefetch set holds. A walk
 * takes about one step per set refill; a 1x1 array with 2-byte SRAMs refills every cycle, and 2^27
 * such steps are ~30 s (measured at ~5 M steps/s), so a walk beyond this is refused, not run for hours.
 */
export const MAX_MEMORY_WALK_STEPS = 2 ** 27;

/** Refuses a memory walk of `computeCycles` whose estimated steps exceed MAX_MEMORY_WALK_STEPS. */
export function checkMemoryWalk(computeCycles: number, memory: MemoryConfig, what: string): void {
  if (memory.mode !== 'user') return;
  const setWords = Math.ceil(Math.min(memory.ifmapSramWords, memory.filterSramWords, memory.ofmapSramWords) / SRAM_SETS);
  const steps = computeCycles / setWords;
  if (steps > MAX_MEMORY_WALK_STEPS) {
    throw new InputError(
      `${what}: ${computeCycles} compute cycles with ${setWords}-word SRAM sets need ~${Math.round(steps)} steps of the USER-mode memory walk, ` +
        `more than the limit of ${MAX_MEMORY_WALK_STEPS}; give the profile larger SRAMs (ifmapSram, filterSram, ofmapSram) or a larger array`,
    );
  }
}

const ZERO_COST: GemmCost = { cycles: 0, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 };

export function scalesimCostModel(profile: HardwareProfile, options: ScalesimModelOptions = {}): CostModel {
  // A chip of several cores: each tile runs on one core's model (memoised there too).
  const coreModel = coresOf(profile) > 1 ? scalesimCostModel(coreProfileOf(profile), options) : undefined;
  const array: ArrayShape = { rows: profile.arrayRows, cols: profile.arrayCols };
  const pes = array.rows * array.cols * profile.arrays;
  const simulate = coreModel === undefined && (profile.bandwidthMode === 'user' || options.dramTraffic === true);
  const memory = simulate ? memoryConfigFor(profile) : undefined;
  const trafficFactor = OPTIMIZER_TRAFFIC_FACTOR[options.optimizer ?? 'sgd'];
  const dramBytesPerCycle = profile.dramBandwidthWordsPerCycle * profile.elementBytes;
  // Keyed m -> n -> k: numbers, so a hit builds no key string (a 100k-layer model asks 300k times).
  const memo = new Map<number, Map<number, Map<number, GemmCost>>>();

  function compute(gemm: Gemm): GemmCost {
    if (coreModel !== undefined) return multicoreGemmCost(gemm, profile, (tile) => coreModel.costGemm(tile));
    // Utilisations and SRAM counts are of the whole GEMM; cycles are the busiest array's.
    const whole = systolicCompute(gemm, array, profile.dataflow);
    const split = splitAcrossArrays(gemm, array, profile.dataflow, profile.arrays);
    let cycles = split.busiestFolds * whole.foldLines - 1; // F depends on T only, shared by all arrays
    let stallCycles = 0;
    let dram: AccessCounts | undefined;
    if (memory !== undefined) {
      checkMemoryWalk(cycles, memory, `${profile.name}: GEMM ${gemm.m}x${gemm.n}x${gemm.k}`);
      const sim = simulateLayerMemory(gemmGeometry(split.busiest), array, profile.dataflow, memory);
      cycles = sim.totalCycles;
      stallCycles = sim.stallCycles;
      // Other arrays move at most what the busiest one does: an upper bound when arrays > 1.
      const activeArrays = split.activeArrays;
      dram = {
        ifmapReads: sim.dram.ifmap.dramReads * activeArrays,
        filterReads: sim.dram.filter.dramReads * activeArrays,
        ofmapWrites: sim.dram.ofmap.dramWrites * activeArrays,
      };
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
      const { m, n, k } = gemm;
      if (m <= 0 || n <= 0 || k <= 0) return { ...ZERO_COST };
      // Only valid shapes are stored, so a hit needs no validation.
      const byK = innerMap(innerMap(memo, m), n);
      let cost = byK.get(k);
      if (cost === undefined) {
        if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || !Number.isSafeInteger(k)) {
          throw new Error(`scalesim cost model: GEMM dims must be integers, got ${m}x${n}x${k}`);
        }
        cost = compute(gemm);
        byK.set(k, cost);
      }
      return cost;
    },
    /** Optimizer step: trafficFactor x paramBytes over the DRAM interface (see OPTIMIZER_TRAFFIC_FACTOR). */
    costWeightUpdate(paramBytes: number): number {
      if (paramBytes <= 0) return 0;
      return Math.ceil((trafficFactor * paramBytes) / dramBytesPerCycle);
    },
  };
}
