/**
 * SCALE-sim v2's three report files (`simulator.generate_reports`), byte for byte: the same column
 * headers, ", " separators, trailing comma on every line and Python number formatting. Cycle
 * start/stop columns are floats in SCALE-sim (they come out of numpy float arrays), counts are
 * ints; average bandwidths are words per cycle.
 */
import { pyFloat, pyInt } from './python-format.js';
import type { AccessWindow, ScaleSimLayerResult } from './run.js';

const COMPUTE_REPORT_HEADER =
  'LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,';

const BANDWIDTH_REPORT_HEADER =
  'LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, ' +
  'Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,';

export const DETAILED_ACCESS_REPORT_HEADER =
  'LayerID, ' +
  'SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, ' +
  'SRAM Filter Start Cycle, SRAM Filter Stop Cycle, SRAM Filter Reads, ' +
  'SRAM OFMAP Start Cycle, SRAM OFMAP Stop Cycle, SRAM OFMAP Writes, ' +
  'DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM IFMAP Reads, ' +
  'DRAM Filter Start Cycle, DRAM Filter Stop Cycle, DRAM Filter Reads, ' +
  'DRAM OFMAP Start Cycle, DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,';

export interface ScaleSimReports {
  'COMPUTE_REPORT.csv': string;
  'BANDWIDTH_REPORT.csv': string;
  'DETAILED_ACCESS_REPORT.csv': string;
}

function table(header: string, layers: readonly ScaleSimLayerResult[], row: (l: ScaleSimLayerResult) => string[]): string {
  const lines = layers.map((layer, id) => `${id}, ${row(layer).join(', ')},`);
  return `${[header, ...lines].join('\n')}\n`;
}

/** SCALE-sim: DRAM words / (stop - start + 1). */
function dramBandwidth(w: AccessWindow): number {
  return w.words / (w.stopCycle - w.startCycle + 1);
}

function windowCells(w: AccessWindow): string[] {
  return [pyFloat(w.startCycle), pyFloat(w.stopCycle), pyInt(w.words)];
}

function computeReport(layers: readonly ScaleSimLayerResult[]): string {
  return table(COMPUTE_REPORT_HEADER, layers, (l) => [
    pyInt(l.totalCycles),
    pyInt(l.stallCycles),
    pyFloat(l.overallUtilPct),
    pyFloat(l.mappingEfficiencyPct),
    pyFloat(l.computeUtilPct),
  ]);
}

function bandwidthReport(layers: readonly ScaleSimLayerResult[]): string {
  return table(BANDWIDTH_REPORT_HEADER, layers, (l) => [
    pyFloat(l.sram.ifmap.words / l.totalCycles),
    pyFloat(l.sram.filter.words / l.totalCycles),
    pyFloat(l.sram.ofmap.words / l.totalCycles),
    pyFloat(dramBandwidth(l.dram.ifmap)),
    pyFloat(dramBandwidth(l.dram.filter)),
    pyFloat(dramBandwidth(l.dram.ofmap)),
  ]);
}

function detailedAccessReport(layers: readonly ScaleSimLayerResult[]): string {
  return table(DETAILED_ACCESS_REPORT_HEADER, layers, (l) => [
    ...windowCells(l.sram.ifmap),
    ...windowCells(l.sram.filter),
    ...windowCells(l.sram.ofmap),
    ...windowCells(l.dram.ifmap),
    ...windowCells(l.dram.filter),
    ...windowCells(l.dram.ofmap),
  ]);
}

export function scaleSimReports(layers: readonly ScaleSimLayerResult[]): ScaleSimReports {
  return {
    'COMPUTE_REPORT.csv': computeReport(layers),
    'BANDWIDTH_REPORT.csv': bandwidthReport(layers),
    'DETAILED_ACCESS_REPORT.csv': detailedAccessReport(layers),
  };
}
