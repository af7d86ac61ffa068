/**
 * Layers + cost model + parallel configuration -> Workload. Compute comes only through the
 * `CostModel` interface, so the ideal and the SCALE-sim-exact models plug in alike.
 */
import { costLayerPasses } from '../cost/training.js';
import type { CostModel, GemmWork } from '../cost/types.js';
import type { Layer } from '../layers/types.js';
import { collectivesOf, shareOf, splitOf } from './parallelism.js';
import { DTYPE_BYTES, type ParallelConfig, type PassWork, type Workload } from './types.js';

/** MACs and operand traffic of one pass's GEMMs on one NPU. */
export function passWork(work: readonly GemmWork[], elementBytes: number): PassWork {
  let macs = 0;
  let elements = 0;
  for (const { gemm: { m, n, k }, count } of work) {
    macs += count * m * n * k;
    elements += count * (m * k + k * n + m * n);
  }
  return { macs, tensorBytes: elements * elementBytes };
}

export function buildWorkload(layers: readonly Layer[], model: CostModel, config: ParallelConfig): Workload {
  const split = splitOf(config);
  const bytes = DTYPE_BYTES[config.dtype];
  const out = layers.map((layer, index) => {
    const share = shareOf(layer, split);
    const cost = costLayerPasses(share.passes, share.paramsPerNpu * bytes, model);
    // The first layer reads the data, whose gradient nobody needs.
    const comms = collectivesOf(layer, share, split, config, index > 0);
    return {
      name: layer.name,
      fwdCycles: cost.fwd.cycles,
      igCycles: cost.ig.cycles,
      wgCycles: cost.wg.cycles,
      updateCycles: cost.updateCycles,
      fwdComm: comms.fwd,
      igComm: comms.ig,
      wgComm: comms.wg,
      work: { fwd: passWork(share.passes.fwd, bytes), ig: passWork(share.passes.ig, bytes), wg: passWork(share.passes.wg, bytes) },
    };
  });
  return { config, split, clockMHz: model.profile.clockMHz, hardware: model.profile.name, costModel: model.name, layers: out };
}
