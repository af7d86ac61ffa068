/**
 * SCALE-sim's memory walk (`double_buffered_scratchpad_mem.service_memory_requests`, docs/scalesim-model.md §7):
 * demand line i is served at cycle i + stalls-so-far; the ifmap and filter read buffers and the
 * ofmap write buffer each report a stall for the line and the array stops for the largest
 * (max, not sum). Total cycles = the cycle the last line's ofmap words are accepted.
 *
 * CALC mode never stalls on reads, so each operand is walked on its own (walk-calc.ts); USER mode
 * walks the three demand streams line by line together (walk-coupled.ts).
 */
import type { Dataflow } from '../types.js';
import { type ArrayShape, foldCounts, foldLineCount } from '../systolic/mapping.js';
import { DemandStreams } from './demand.js';
import { type LayerGeometry, hasHoles, layerOperands } from './layer.js';
import { walkCalc } from './walk-calc.js';
import type { MemoryConfig, MemorySimResult, SimulateOptions, WalkContext } from './walk-context.js';
import { walkCoupled } from './walk-coupled.js';

export type { MemoryConfig, MemorySimResult, SimulateOptions, SramWindow } from './walk-context.js';

export function simulateLayerMemory(
  geometry: LayerGeometry,
  array: ArrayShape,
  dataflow: Dataflow,
  config: MemoryConfig,
  options: SimulateOptions = {},
): MemorySimResult {
  const operands = layerOperands(geometry, config.addressOffsets);
  const streams = new DemandStreams(operands, array, dataflow);
  const { rowFolds, colFolds } = foldCounts(streams.mapping, array);
  const foldLines = foldLineCount(dataflow, array, streams.mapping.t);
  // The shortcuts count every element as real; an offset that removes one needs the full walk.
  const shortcuts = (options.shortcuts ?? true) && !hasHoles(operands);
  const ctx: WalkContext = { operands, streams, array, dataflow, rowFolds, colFolds, foldLines, config, shortcuts };
  // A CALC run whose ofmap buffer stalls (tiny ofmap SRAMs only) needs the coupled walk.
  return (config.mode === 'calc' ? walkCalc(ctx) : undefined) ?? walkCoupled(ctx);
}
