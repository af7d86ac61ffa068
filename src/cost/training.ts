/**
 * Cost of one layer's training step: forward, input-gradient and weight-gradient passes plus the
 * optimizer's weight update. A pass is a list of `count x GEMM`; its cost sums the GEMM costs:
 * - cycles and stall cycles: sum of count x cycles;
 * - overall util: recomputed from the sums, 100 * sum(MACs) / (sum(cycles) * PEs) (SCALE-sim's own
 *   definition applied to the whole pass, i.e. the cycle-weighted mean);
 * - mapping efficiency and compute util: MAC-weighted means of the per-GEMM figures;
 * - SRAM/DRAM counts: summed when every GEMM has them.
 */
import type { GemmWork, LayerPasses } from '../layers/types.js';
import type { AccessCounts, CostModel, GemmCost, LayerCost } from './types.js';
import { costVectorPass, vectorUnitOf } from './vector.js';

/** Access counts summed over a pass's GEMMs (count x each); absent as soon as one GEMM lacks them. */
class CountSum {
  present = true;
  ifmapReads = 0;
  filterReads = 0;
  ofmapWrites = 0;

  add(counts: AccessCounts | undefined, count: number): void {
    if (!this.present) return;
    if (counts === undefined) {
      this.present = false;
      return;
    }
    this.ifmapReads += count * counts.ifmapReads;
    this.filterReads += count * counts.filterReads;
    this.ofmapWrites += count * counts.ofmapWrites;
  }

  result(): AccessCounts {
    return { ifmapReads: this.ifmapReads, filterReads: this.filterReads, ofmapWrites: this.ofmapWrites };
  }
}

export function costPass(work: readonly GemmWork[], model: CostModel): GemmCost {
  const { arrayRows, arrayCols, arrays } = model.profile;
  const pes = arrayRows * arrayCols * arrays;
  let cycles = 0;
  let stallCycles = 0;
  let macs = 0;
  let mappingMacs = 0;
  let computeMacs = 0;
  const sram = new CountSum();
  const dram = new CountSum();
  for (const { gemm, count } of work) {
    const gemmMacs = count * gemm.m * gemm.n * gemm.k;
    // An empty GEMM costs nothing; asking the model would also drop the pass's access counts.
    if (!(gemmMacs > 0)) continue;
    const cost = model.costGemm(gemm);
    cycles += count * cost.cycles;
    stallCycles += count * cost.stallCycles;
    macs += gemmMacs;
    mappingMacs += gemmMacs * cost.mappingEfficiencyPct;
    computeMacs += gemmMacs * cost.computeUtilPct;
    sram.add(cost.sram, count);
    dram.add(cost.dram, count);
  }
  const result: GemmCost = {
    cycles,
    stallCycles,
    overallUtilPct: cycles > 0 ? (100 * macs) / (cycles * pes) : 0,
    mappingEfficiencyPct: macs > 0 ? mappingMacs / macs : 0,
    computeUtilPct: macs > 0 ? computeMacs / macs : 0,
  };
  if (macs > 0 && sram.present) result.sram = sram.result();
  if (macs > 0 && dram.present) result.dram = dram.result();
  return result;
}

export function costLayerPasses(passes: LayerPasses, paramBytes: number, model: CostModel): LayerCost {
  const { vector } = passes;
  if (vector !== undefined) {
    const unit = vectorUnitOf(model.profile);
    return {
      fwd: costVectorPass(vector, 'fwd', model.profile, unit),
      ig: costVectorPass(vector, 'ig', model.profile, unit),
      wg: costVectorPass(vector, 'wg', model.profile, unit),
      updateCycles: paramBytes > 0 ? model.costWeightUpdate(paramBytes) : 0,
    };
  }
  return {
    fwd: costPass(passes.fwd, model),
    ig: costPass(passes.ig, model),
    wg: costPass(passes.wg, model),
    updateCycles: paramBytes > 0 ? model.costWeightUpdate(paramBytes) : 0,
  };
}

/** MACs and operand traffic of one pass's GEMMs: (M x K + K x N + M x N) x count elements, read once and written once. */
export function passWork(work: readonly GemmWork[], elementBytes: number): { macs: number; tensorBytes: number } {
  let macs = 0;
  let elements = 0;
  for (const { gemm: { m, n, k }, count } of work) {
    macs += count * m * n * k;
    elements += count * (m * k + k * n + m * n);
  }
  return { macs, tensorBytes: elements * elementBytes };
}
