/**
 * One SCALE-sim v2 run, reproduced: every topology layer through the compute model and the
 * SRAM/DRAM walk, giving the figures of SCALE-sim's three reports.
 */
import { InputError } from '../errors.js';
import { type SramWindow, simulateLayerMemory } from '../cost/access/simulate.js';
import { checkMemoryWalk, memoryConfigFor } from '../cost/scalesim-model.js';
import { overallUtilPct, systolicCompute } from '../cost/systolic/compute.js';
import { scalesimFoldMeans } from '../cost/systolic/fold-means.js';
import type { HardwareProfile } from '../cost/types.js';
import type { Gemm } from '../layers/types.js';
import type { TopologyLayer } from './topology.js';

/** First and last cycle of an operand's accesses and how many words they moved. */
export interface AccessWindow {
  startCycle: number;
  stopCycle: number;
  words: number;
}

export interface ScaleSimLayerResult {
  name: string;
  gemm: Gemm;
  totalCycles: number;
  stallCycles: number;
  overallUtilPct: number;
  mappingEfficiencyPct: number;
  computeUtilPct: number;
  sram: { ifmap: AccessWindow; filter: AccessWindow; ofmap: AccessWindow };
  dram: { ifmap: AccessWindow; filter: AccessWindow; ofmap: AccessWindow };
}

/** The figures of a layer's geometry (its name aside); networks repeat blocks of identical layers. */
type LayerFigures = Omit<ScaleSimLayerResult, 'name'>;

function simulateScaleSimLayer(layer: TopologyLayer, profile: HardwareProfile): LayerFigures {
  if (profile.arrays !== 1) {
    throw new InputError(`${profile.name}: SCALE-sim models one array; this profile has ${profile.arrays} (key 'arrays')`);
  }
  if ((profile.cores ?? 1) !== 1) {
    throw new InputError(`${profile.name}: SCALE-sim models one array; this profile is a chip of ${profile.cores} cores (key 'cores')`);
  }
  const array = { rows: profile.arrayRows, cols: profile.arrayCols };
  const { gemm } = layer.geometry;
  const compute = systolicCompute(gemm, array, profile.dataflow);
  const means = scalesimFoldMeans(compute.mapping, array, profile.dataflow);
  const memory = memoryConfigFor(profile);
  checkMemoryWalk(compute.computeCycles, memory, `${profile.name}: layer ${layer.name}`);
  const sim = simulateLayerMemory(layer.geometry, array, profile.dataflow, memory);
  const { sram, dram } = sim;
  return {
    gemm,
    totalCycles: sim.totalCycles,
    stallCycles: sim.stallCycles,
    overallUtilPct: overallUtilPct(compute.macs, sim.totalCycles, array.rows * array.cols),
    mappingEfficiencyPct: means.mappingEfficiencyPct,
    computeUtilPct: means.computeUtilPct,
    sram: {
      ifmap: accessWindow(sram.ifmap, compute.sram.ifmapReads),
      filter: accessWindow(sram.filter, compute.sram.filterReads),
      ofmap: accessWindow(sram.ofmap, compute.sram.ofmapWrites),
    },
    dram: {
      ifmap: accessWindow({ startCycle: dram.ifmap.dramStartCycle, stopCycle: dram.ifmap.dramStopCycle }, dram.ifmap.dramReads),
      filter: accessWindow({ startCycle: dram.filter.dramStartCycle, stopCycle: dram.filter.dramStopCycle }, dram.filter.dramReads),
      ofmap: accessWindow({ startCycle: dram.ofmap.dramStartCycle, stopCycle: dram.ofmap.dramStopCycle }, dram.ofmap.dramWrites),
    },
  };
}

/** A plain copy (the memory walk's windows are live trackers). */
function accessWindow(window: SramWindow, words: number): AccessWindow {
  return { startCycle: window.startCycle, stopCycle: window.stopCycle, words };
}

/** `onLayerDone` is told after each layer (for a progress bar). */
export function simulateScaleSim(layers: readonly TopologyLayer[], profile: HardwareProfile, onLayerDone?: () => void): ScaleSimLayerResult[] {
  // Each layer is simulated from empty buffers (as SCALE-sim does), so a layer of the same
  // geometry as an earlier one has the same figures: ResNet-18's 21 layers are 12 geometries.
  const byGeometry = new Map<string, LayerFigures>();
  return layers.map((layer) => {
    const key = JSON.stringify(layer.geometry);
    let figures = byGeometry.get(key);
    if (figures === undefined) {
      figures = simulateScaleSimLayer(layer, profile);
      byGeometry.set(key, figures);
    }
    onLayerDone?.();
    return { name: layer.name, ...figures };
  });
}
