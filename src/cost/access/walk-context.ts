/** Types shared by the memory walks (simulate.ts, walk-calc.ts, walk-coupled.ts). */
import type { BandwidthMode, Dataflow } from '../types.js';
import type { ArrayShape } from '../systolic/mapping.js';
import type { DemandStreams } from './demand.js';
import type { AddressOffsets, LayerOperands } from './layer.js';
import type { ReadBufferStats } from './read-buffer-user.js';
import type { WriteBufferStats } from './write-buffer.js';

export interface MemoryConfig {
  mode: BandwidthMode;
  ifmapSramWords: number;
  filterSramWords: number;
  ofmapSramWords: number;
  /** USER mode DRAM bandwidth (SCALE-sim's Bandwidth[0]), words per cycle, integer >= 1. */
  bandwidthWordsPerCycle: number;
  /** SCALE-sim's operand base addresses (all 0 when absent); see layer.ts. */
  addressOffsets?: AddressOffsets;
}

/** Service cycles of the first and last demand line that touch an operand's SRAM. */
export interface SramWindow {
  startCycle: number;
  stopCycle: number;
}

export interface MemorySimResult {
  totalCycles: number;
  stallCycles: number;
  sram: { ifmap: SramWindow; filter: SramWindow; ofmap: SramWindow };
  dram: { ifmap: ReadBufferStats; filter: ReadBufferStats; ofmap: WriteBufferStats };
}

/** Everything a walk needs about one layer on one array. */
export interface WalkContext {
  operands: LayerOperands;
  streams: DemandStreams;
  array: ArrayShape;
  dataflow: Dataflow;
  rowFolds: number;
  colFolds: number;
  foldLines: number;
  config: MemoryConfig;
  /** false: walk every word (the reference the shortcuts are tested against). */
  shortcuts: boolean;
}

export interface SimulateOptions {
  /** Use the exact shortcuts (default true); false walks every word of every operand. */
  shortcuts?: boolean;
}

export class WindowTracker implements SramWindow {
  startCycle = -1;
  stopCycle = -1;
  private seen = false;

  note(cycle: number): void {
    if (!this.seen) {
      this.seen = true;
      this.startCycle = cycle;
    }
    this.stopCycle = cycle;
  }
}
