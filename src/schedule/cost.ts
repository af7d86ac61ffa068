/**
 * The one place a plan's compute is costed: every layer's per-rank share, per micro-batch, on the
 * cost model; and the optimizer step of the parameters a rank updates. Writers, reports and the
 * step graph all read these figures.
 */
import { LayerPassesCosts, costLayerPasses, passWork } from '../cost/training.js';
import type { CostModel, GemmCost, TrainingPass } from '../cost/types.js';
import type { GemmWork, VectorWork } from '../layers/types.js';
import { type VectorUnit, vectorPassBytes, vectorPassOps, vectorUnitOf } from '../cost/vector.js';
import type { LayerPlan, ParallelPlan } from '../plan/types.js';

export interface PassCost {
  cycles: number;
  stallCycles: number;
  macs: number;
  /** Floating-point operations: 2 x MACs for GEMMs, element ops for vector work (roofline num_ops). */
  flops: number;
  /** (M x K + K x N + M x N) x count x element bytes: operands read once, the result written once. */
  tensorBytes: number;
  cost: GemmCost;
}

export interface CostedLayer {
  fwd: PassCost;
  ig: PassCost;
  wg: PassCost;
}

export { passWork };

export function costLayer(plan: ParallelPlan, l: LayerPlan, model: CostModel): CostedLayer {
  const c = costLayerPasses(l.passes, 0, model);
  const vector = l.passes.vector;
  if (vector !== undefined) {
    const unit = vectorUnitOf(model.profile);
    return { fwd: vectorPassCost(vector, 'fwd', c.fwd, unit), ig: vectorPassCost(vector, 'ig', c.ig, unit), wg: vectorPassCost(vector, 'wg', c.wg, unit) };
  }
  return { fwd: gemmPassCost(l.passes.fwd, c.fwd, plan.elementBytes), ig: gemmPassCost(l.passes.ig, c.ig, plan.elementBytes), wg: gemmPassCost(l.passes.wg, c.wg, plan.elementBytes) };
}

/**
 * costLayer of every layer of the plan; layers holding one passes object (the plan shares those
 * of equal GEMM geometry) share one result, which callers only read.
 */
export function costPlanLayers(plan: ParallelPlan, model: CostModel): CostedLayer[] {
  const byPasses = new Map<LayerPlan['passes'], CostedLayer>();
  return plan.layers.map((l) => {
    let c = byPasses.get(l.passes);
    if (c === undefined) {
      c = costLayer(plan, l, model);
      byPasses.set(l.passes, c);
    }
    return c;
  });
}

function vectorPassCost(vector: VectorWork, p: TrainingPass, cost: GemmCost, unit: VectorUnit): PassCost {
  const done = cost.cycles > 0;
  return { cycles: cost.cycles, stallCycles: cost.stallCycles, macs: 0, flops: done ? vectorPassOps(vector, p, unit) : 0, tensorBytes: done ? vectorPassBytes(vector, p) : 0, cost };
}

function gemmPassCost(work: readonly GemmWork[], cost: GemmCost, elementBytes: number): PassCost {
  const { macs, tensorBytes } = passWork(work, elementBytes);
  return { cycles: cost.cycles, stallCycles: cost.stallCycles, macs, tensorBytes, flops: 2 * macs, cost };
}

/** One rank's forward + backward cycles of a layer per micro-batch (what pipeline stages are balanced on). */
export function layerStepCycles(l: LayerPlan, model: CostModel): number {
  const c = costLayerPasses(l.passes, 0, model);
  return c.fwd.cycles + (l.needsInputGrad ? c.ig.cycles : 0) + c.wg.cycles;
}

/** Gradient (and parameter) elements a rank holds for `l`: weights, and biases unless excluded. */
export function gradientParams(plan: ParallelPlan, l: LayerPlan): number {
  return l.weightParamsHeld + (plan.gradientParams === 'weights' ? 0 : l.biasParamsHeld);
}

/** Parameters a rank of pipeline stage `stage` holds: its layers', and the last stage the parameters outside every layer. */
export function heldParams(plan: ParallelPlan, stage: number): number {
  const last = stage === plan.world.pp - 1;
  return plan.layers.reduce((a, l) => a + (l.stage === stage ? gradientParams(plan, l) : 0), 0) + (last ? plan.otherParams : 0);
}

/** Parameters a rank's optimizer updates (of its pipeline stage): all it holds, or its 1/D shard under ZeRO. */
export function updatedParams(plan: ParallelPlan, stage = 0): number {
  const held = heldParams(plan, stage);
  return plan.zero >= 1 ? Math.ceil(held / plan.world.dp) : held;
}

export function costUpdate(plan: ParallelPlan, model: CostModel, stage = 0): number {
  const bytes = updatedParams(plan, stage) * plan.elementBytes;
  return bytes > 0 ? model.costWeightUpdate(bytes) : 0;
}

/** Share of a rank's compute cycles (all passes) spent in vector layers, in [0, 1]. */
export function vectorShareOfPlan(plan: ParallelPlan, model: CostModel): number {
  const costs = new LayerPassesCosts(model);
  let vector = 0;
  let total = 0;
  for (const l of plan.layers) {
    const c = costs.of(l.passes);
    const cycles = c.fwd.cycles + (l.needsInputGrad ? c.ig.cycles : 0) + c.wg.cycles;
    total += cycles;
    if (l.layer.kind === 'vector') vector += cycles;
  }
  return total > 0 ? vector / total : 0;
}
