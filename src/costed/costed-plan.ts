/**
 * The costed plan: a parallel plan with every layer's per-rank passes costed once on a cost
 * model — forward, input gradient, weight gradient, and the forward again where it is recomputed
 * — and each pipeline stage's optimizer step. The step graph (schedule/), the text table, the
 * predictions, `--report`, `inspect` and `compare` read these figures; none of them costs.
 */
import { costLayerPasses, passWork } from '../cost/training.js';
import type { CostModel, GemmCost, HardwareProfile, LayerCost, TrainingPass } from '../cost/types.js';
import { type VectorUnit, vectorPassBytes, vectorPassOps, vectorUnitOf } from '../cost/vector.js';
import { ownParameters } from '../layers/params.js';
import type { GemmWork, Layer, LayerPasses, VectorWork } from '../layers/types.js';
import { gradientParams, updatedParams } from '../plan/held-params.js';
import type { LayerPlan, ParallelPlan } from '../plan/types.js';
import { trainingCycles } from '../passes.js';

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

/** A compute pass of a layer in a training step (recompute: the forward re-run inside the backward). */
export type StepPass = 'fwd' | 'recompute' | 'ig' | 'wg';

export interface CostedPass {
  readonly pass: StepPass;
  readonly cost: PassCost;
}

/** One rank's share of a layer for one micro-batch. */
export interface CostedLayer {
  readonly fwd: PassCost;
  /** Costed even when the layer computes no input gradient (the text format's column shows it). */
  readonly ig: PassCost;
  readonly wg: PassCost;
  /**
   * The passes the step runs, in the order they are issued: in a micro-batch's forward, the
   * forward; in its backward, the recomputed forward (with activation recomputation), the input
   * gradient (when the layer computes one), the weight gradient. The step graph is built from
   * these lists and the one-stage prediction sums them.
   */
  readonly forward: readonly CostedPass[];
  readonly backward: readonly CostedPass[];
  /** fwd + ig (when computed) + wg cycles, without recomputation: what pipeline stages are balanced on. */
  readonly stepCycles: number;
}

export interface CostedStage {
  /** Parameters a rank of the stage updates: all it holds, or its 1/D shard under ZeRO. */
  readonly updatedParams: number;
  /** Cycles of its optimizer step. */
  readonly updateCycles: number;
}

/** A layer whole on one NPU (inspect's report): its passes and the update of the parameters no earlier layer holds. */
export interface WholeLayerCost {
  readonly cost: LayerCost;
  /** Bytes of the parameters no earlier layer holds (a shared tensor is updated once). */
  readonly ownParamBytes: number;
}

/** A model's layers costed whole on one NPU (a report without a plan; every costed plan is one too). */
export interface CostedModel {
  /** The cost model's name ("scalesim", "ideal") and its profile. */
  readonly costModel: string;
  readonly profile: HardwareProfile;
  readonly clockMHz: number;
  readonly modelLayers: readonly Layer[];
  /** Per model layer, whole on one NPU. Costed on first read. */
  readonly wholeLayers: readonly WholeLayerCost[];
}

export interface CostedPlan extends CostedModel {
  readonly plan: ParallelPlan;
  /** Per plan layer (index as plan.layers); layers of one passes object share their entry's pass costs. */
  readonly layers: readonly CostedLayer[];
  /** Per pipeline stage. */
  readonly stages: readonly CostedStage[];
  /** Per layer: the optimizer step of the gradients a rank holds (plan dtype; the text format's update column). Costed on first read. */
  readonly layerUpdateCycles: readonly number[];
  /** Per layer: the optimizer step of the rank's share of the layer's parameter bytes (the model's dtype; compare's). Costed on first read. */
  readonly shareUpdateCycles: readonly number[];
}

/** The plan costed on `model`: each distinct passes object once, the stages' optimizer steps, the rest on first read. */
export function costPlan(plan: ParallelPlan, model: CostModel): CostedPlan {
  const byPasses = new Map<LayerPasses, Pick<CostedLayer, 'fwd' | 'ig' | 'wg'>>();
  const variants = new Map<Pick<CostedLayer, 'fwd' | 'ig' | 'wg'>, (CostedLayer | undefined)[]>();
  const layers = plan.layers.map((l): CostedLayer => {
    let passes = byPasses.get(l.passes);
    if (passes === undefined) {
      passes = passCosts(plan, l, model);
      byPasses.set(l.passes, passes);
    }
    // Five layers at most per passes object: with or without input gradient and recomputation, or absent.
    let shapes = variants.get(passes);
    if (shapes === undefined) {
      shapes = [undefined, undefined, undefined, undefined, undefined];
      variants.set(passes, shapes);
    }
    // An expert another EP rank holds runs nothing here (plan/expert-parallel.ts): variant 4.
    const k = l.expert?.local === false ? 4 : (l.needsInputGrad ? 1 : 0) + (l.recompute ? 2 : 0);
    let costed = shapes[k];
    if (costed === undefined) {
      costed = k === 4 ? { ...passes, forward: [], backward: [], stepCycles: 0 } : costedLayer(passes, l.needsInputGrad, l.recompute);
      shapes[k] = costed;
    }
    return costed;
  });
  const stages = plan.pipeline.stages.map((_, stage): CostedStage => {
    const params = updatedParams(plan, stage);
    const bytes = params * plan.elementBytes;
    return { updatedParams: params, updateCycles: updateCyclesOf(model, bytes) };
  });
  let layerUpdates: number[] | undefined;
  let shareUpdates: number[] | undefined;
  const whole = costModelLayers(plan.layers.map((l) => l.layer), model);
  return {
    plan,
    costModel: whole.costModel,
    profile: whole.profile,
    clockMHz: whole.clockMHz,
    modelLayers: whole.modelLayers,
    get wholeLayers() {
      return whole.wholeLayers;
    },
    layers,
    stages,
    get layerUpdateCycles() {
      layerUpdates ??= plan.layers.map((l) => {
        return updateCyclesOf(model, gradientParams(plan, l) * plan.elementBytes);
      });
      return layerUpdates;
    },
    get shareUpdateCycles() {
      shareUpdates ??= plan.layers.map(({ layer, weightParamsHeld, biasParamsHeld }) => {
        const params = layer.weightParams + layer.biasParams;
        return updateCyclesOf(model, (layer.weightBytes + layer.biasBytes) * (params > 0 ? (weightParamsHeld + biasParamsHeld) / params : 0));
      });
      return shareUpdates;
    },
  };
}

/** `layers` costed whole on `model` (on first read of `wholeLayers`). */
export function costModelLayers(layers: readonly Layer[], model: CostModel): CostedModel {
  let whole: WholeLayerCost[] | undefined;
  return {
    costModel: model.name,
    profile: model.profile,
    clockMHz: model.profile.clockMHz,
    modelLayers: layers,
    get wholeLayers() {
      whole ??= wholeLayerCosts(layers, model);
      return whole;
    },
  };
}

/** The optimizer step over `bytes` of parameters (none: no step). */
const updateCyclesOf = (model: CostModel, bytes: number): number => (bytes > 0 ? model.costWeightUpdate(bytes) : 0);

function costedLayer(passes: Pick<CostedLayer, 'fwd' | 'ig' | 'wg'>, inputGrad: boolean, recompute: boolean): CostedLayer {
  const backward: CostedPass[] = [];
  if (recompute) backward.push({ pass: 'recompute', cost: passes.fwd });
  if (inputGrad) backward.push({ pass: 'ig', cost: passes.ig });
  backward.push({ pass: 'wg', cost: passes.wg });
  return { ...passes, forward: [{ pass: 'fwd', cost: passes.fwd }], backward, stepCycles: trainingCycles(passes, inputGrad) };
}

function passCosts(plan: ParallelPlan, l: LayerPlan, model: CostModel): Pick<CostedLayer, 'fwd' | 'ig' | 'wg'> {
  const c = costLayerPasses(l.passes, 0, model);
  const vector = l.passes.vector;
  if (vector !== undefined) {
    const unit = vectorUnitOf(model.profile);
    return { fwd: vectorPassCost(vector, 'fwd', c.fwd, unit), ig: vectorPassCost(vector, 'ig', c.ig, unit), wg: vectorPassCost(vector, 'wg', c.wg, unit) };
  }
  return { fwd: gemmPassCost(l.passes.fwd, c.fwd, plan.elementBytes), ig: gemmPassCost(l.passes.ig, c.ig, plan.elementBytes), wg: gemmPassCost(l.passes.wg, c.wg, plan.elementBytes) };
}

function vectorPassCost(vector: VectorWork, p: TrainingPass, cost: GemmCost, unit: VectorUnit): PassCost {
  const done = cost.cycles > 0;
  return { cycles: cost.cycles, stallCycles: cost.stallCycles, macs: 0, flops: done ? vectorPassOps(vector, p, unit) : 0, tensorBytes: done ? vectorPassBytes(vector, p) : 0, cost };
}

function gemmPassCost(work: readonly GemmWork[], cost: GemmCost, elementBytes: number): PassCost {
  const { macs, tensorBytes } = passWork(work, elementBytes);
  return { cycles: cost.cycles, stallCycles: cost.stallCycles, macs, tensorBytes, flops: 2 * macs, cost };
}

function wholeLayerCosts(layers: readonly Layer[], model: CostModel): WholeLayerCost[] {
  const own = ownParameters(layers);
  return layers.map((l, i) => {
    const params = l.weightParams + l.biasParams;
    const owned = own[i] ?? { weightParams: 0, biasParams: 0 };
    const ownParamBytes = params > 0 ? Math.round(((owned.weightParams + owned.biasParams) / params) * (l.weightBytes + l.biasBytes)) : 0;
    return { cost: costLayerPasses(l.passes, ownParamBytes, model), ownParamBytes };
  });
}

/**
 * One rank's forward + backward cycles of a layer per micro-batch, before the plan has its stages
 * (what buildPlan balances them on; the costed plan's `stepCycles` once it has).
 */
export function layerStepCycles(l: LayerPlan, model: CostModel): number {
  return trainingCycles(costLayerPasses(l.passes, 0, model), l.needsInputGrad);
}

/** Share of a rank's compute cycles (all passes) spent in vector layers, in [0, 1]. */
export function vectorShareOfPlan(costed: CostedPlan): number {
  let vector = 0;
  let total = 0;
  costed.plan.layers.forEach((l, i) => {
    const cycles = costed.layers[i]?.stepCycles ?? 0;
    total += cycles;
    if (l.layer.kind === 'vector') vector += cycles;
  });
  return total > 0 ? vector / total : 0;
}
