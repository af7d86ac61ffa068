/**
 * The former library entry: layers + cost model + legacy strategy -> the per-layer table, split
 * by the legacy formulas (plan/legacy.ts) without a parallel plan. The CLI builds its table from
 * the plan (layer-table.ts); this stays for library callers (src/index.ts). Compute comes only
 * through the `CostModel` interface, so the ideal and the SCALE-sim-exact models plug in alike.
 */
import { costLayerPasses, passWork } from '../cost/training.js';
import { at } from '../errors.js';
import type { CostModel, TrainingPass } from '../cost/types.js';
import { vectorPassBytes } from '../cost/vector.js';
import { ownParameters } from '../layers/params.js';
import type { Layer, LayerPasses } from '../layers/types.js';
import { collectivesOf, type ParallelConfig, shareOf, splitOf } from '../plan/legacy.js';
import { DTYPE_BYTES } from '../plan/types.js';
import type { LayerTable, PassWork } from './types.js';

/** A vector layer's pass moves its roofline bytes (in the model's dtype) and does no MACs. */
function workOf(passes: LayerPasses, pass: TrainingPass, elementBytes: number): PassWork {
  return passes.vector ? { macs: 0, tensorBytes: vectorPassBytes(passes.vector, pass) } : passWork(passes[pass], elementBytes);
}

export function buildWorkload(layers: readonly Layer[], model: CostModel, config: ParallelConfig): LayerTable {
  const split = splitOf(config);
  const bytes = DTYPE_BYTES[config.dtype];
  // A tensor held by several layers is all-reduced and updated once, by the first of them.
  const own = ownParameters(layers);
  const firstCompute = Math.max(0, layers.findIndex((l) => l.kind !== 'vector'));
  const out = layers.map((layer, index) => {
    const share = shareOf({ ...layer, ...at(own, index) }, split);
    const cost = costLayerPasses(share.passes, share.paramsPerNpu * bytes, model);
    // The first GEMM layer reads the data, whose gradient nobody needs.
    const comms = collectivesOf(layer, share, split, config, index > firstCompute);
    return {
      name: layer.name,
      fwdCycles: cost.fwd.cycles,
      igCycles: cost.ig.cycles,
      wgCycles: cost.wg.cycles,
      updateCycles: cost.updateCycles,
      fwdComm: comms.fwd,
      igComm: comms.ig,
      wgComm: comms.wg,
      work: { fwd: workOf(share.passes, 'fwd', bytes), ig: workOf(share.passes, 'ig', bytes), wg: workOf(share.passes, 'wg', bytes) },
    };
  });
  return { config, split, clockMHz: model.profile.clockMHz, hardware: model.profile.name, costModel: model.name, layers: out };
}
