/**
 * The pipeline as a library: read -> infer shapes -> lower to layers -> cost -> workload.
 * Each stage is a pure function of the previous one's output; the parsed model is immutable, so
 * one `analyseModel` result can be costed on many hardware profiles.
 */
import type { CostModel, HardwareProfile } from './cost/types.js';
import { idealCostModel } from './cost/ideal.js';
import type { CostModelKind, Optimizer } from './cost/choices.js';
import type { Layer } from './layers/types.js';
import { lowerToLayers, unloweredComputeNodes, type LoweringOptions } from './layers/lower.js';
import { untracedWeightOperands, weightTracerOf } from './layers/weights.js';
import type { Node } from './ir/graph.js';
import { readModel, type LoadedModel, type ReadOptions } from './onnx/reader.js';
import type { DimBindings } from './shape/bind.js';
import { inferShapes, type InferredModel } from './shape/infer.js';
import { buildPlan, type PlanOptions } from './plan/build.js';
import { analyseStructure } from './structure/analyse.js';
import type { ModelStructure } from './structure/types.js';
import type { ParallelPlan } from './plan/types.js';
import { buildStepSchedule, type ScheduleOptions } from './schedule/build.js';
import { costPlan, layerStepCycles, type CostedPlan } from './costed/costed-plan.js';
import { layerTable } from './schedule/layer-table.js';
import type { LayerTable, StepSchedule } from './schedule/types.js';
import { legacyWorld, type ParallelConfig } from './plan/legacy.js';
import { sumOverPasses } from './passes.js';

export { legacyWorld } from './plan/legacy.js';

export interface AnalysedModel {
  loaded: LoadedModel;
  inferred: InferredModel;
  layers: Layer[];
  /** Nodes that compute GEMMs modtrans cannot lower (their compute is not in the layers). */
  unlowered: Node[];
  /** Lowering warnings for stderr (GEMM weight operands that cannot be traced to initializers). */
  warnings?: string[];
  /** The model's structure (blocks, attention, MLPs, embeddings, heads), recognised once from the layers. */
  structure: ModelStructure;
}

export function inferModel(path: string, bindings: Partial<DimBindings> = {}, read: ReadOptions = {}): { loaded: LoadedModel; inferred: InferredModel } {
  const loaded = readModel(path, read);
  return { loaded, inferred: inferShapes(loaded, bindings) };
}

/** `lowering.vectorOps` adds the non-GEMM work as vector layers (the CLI's default; off here, GEMM layers only). */
export function analyseModel(path: string, bindings: Partial<DimBindings> = {}, read: ReadOptions = {}, lowering: LoweringOptions = {}): AnalysedModel {
  return analyseInferred(inferModel(path, bindings, read), lowering);
}

/** Lowering of an already inferred model (so a caller that inferred it once need not again). */
export function analyseInferred({ loaded, inferred }: { loaded: LoadedModel; inferred: InferredModel }, lowering: LoweringOptions = {}): AnalysedModel {
  // One value index and weight tracer: lowering and its warnings ask about the same values.
  const tracer = weightTracerOf(inferred);
  const layers = lowerToLayers(inferred, lowering, tracer);
  return { loaded, inferred, layers, unlowered: unloweredComputeNodes(inferred), warnings: untracedWeightOperands(inferred, tracer), structure: analyseStructure(inferred, layers) };
}

/** Share of the per-NPU compute cycles (all passes) spent in vector layers, in [0, 1]. */
export function vectorComputeShare(analysed: AnalysedModel, workload: LayerTable): number {
  let vector = 0;
  let total = 0;
  workload.layers.forEach((l, i) => {
    const cycles = sumOverPasses({ fwd: l.fwdCycles, ig: l.igCycles, wg: l.wgCycles }, (c) => c);
    total += cycles;
    if (analysed.layers[i]?.kind === 'vector') vector += cycles;
  });
  return total > 0 ? vector / total : 0;
}

export { COST_MODELS, type CostModelKind } from './cost/choices.js';

export interface CostModelOptions {
  /** Optimizer whose step the weight-update column models (SCALE-sim model only). */
  optimizer?: Optimizer;
}

/** The SCALE-sim-exact model by default; `ideal` is the ceil(MACs / PEs) lower bound. */
export async function createCostModel(profile: HardwareProfile, kind: CostModelKind = 'scalesim', options: CostModelOptions = {}): Promise<CostModel> {
  if (kind === 'ideal') return idealCostModel(profile, { optimizer: options.optimizer ?? 'sgd' });
  const { scalesimCostModel } = await import('./cost/scalesim-model.js');
  return scalesimCostModel(profile, { optimizer: options.optimizer ?? 'sgd' });
}

/** The parallel plan of an analysed model (its shapes are one micro-batch's); pipeline stages are balanced on `model`'s cycles. */
export function planOf(analysed: AnalysedModel, options: PlanOptions, model?: CostModel): ParallelPlan {
  return buildPlan(analysed, model === undefined ? options : { ...options, layerCycles: (l) => layerStepCycles(l, model) });
}

/** The plan with every layer's per-rank passes and each stage's optimizer step costed on `model` (what every output reads). */
export function costedPlanOf(plan: ParallelPlan, model: CostModel): CostedPlan {
  return costPlan(plan, model);
}

/** Each rank's step graph of a plan, costed on `model`. */
export function scheduleOf(plan: ParallelPlan, model: CostModel, options: ScheduleOptions = {}): StepSchedule {
  return buildStepSchedule(costPlan(plan, model), options);
}

/**
 * A legacy strategy's per-layer table (the text format): the plan of `legacyWorld`, each replica
 * running the model's own batch as one micro-batch (DATA over P NPUs is a global batch of P x the
 * exported batch; no replica splits an image). What `translate -p ... --format text` writes, bar
 * the CLI's defaults (vector layers, folded into the GEMM rows); `buildWorkload` is this function.
 */
export function workloadOf(analysed: AnalysedModel, model: CostModel, config: ParallelConfig): LayerTable {
  const world = legacyWorld(config);
  const batch = leadingDim(analysed);
  const plan = planOf(analysed, {
    world,
    batch: { globalBatch: batch * world.dp, microBatch: batch, microBatches: 1 },
    sequenceParallel: false,
    zero: 0,
    dtype: config.dtype,
    ddp: 'torch',
    dpBucketMiB: 25,
    gradientParams: config.params,
    // The legacy strategies reduce gradients in the parameters' width, as ASTRA-sim's own workloads,
    // and split the vocabulary as it is (no Megatron padding).
    gradReduce: 'param',
    vocabDivisibleBy: 1,
  });
  return layerTable(costPlan(plan, model), config.parallelism);
}

/** The batch the analysed shapes are for: the leading dim of the first graph input. */
export function leadingDim(analysed: AnalysedModel): number {
  const { model, values, initializerNames } = analysed.inferred;
  const input = model.graph.inputs.find((i) => !initializerNames.has(i.name));
  const lead = input === undefined ? undefined : values.get(input.name)?.shape?.[0];
  return typeof lead === 'number' && lead > 0 ? lead : 1;
}

/** One line per op type of `unlowered`, then the lowering's own warnings, for stderr. */
export function describeUnlowered(analysed: AnalysedModel): string[] {
  const counts = new Map<string, number>();
  for (const node of analysed.unlowered) {
    const op = node.domain === '' ? node.opType : `${node.domain}::${node.opType}`;
    counts.set(op, (counts.get(op) ?? 0) + 1);
  }
  const lines = [...counts].map(([op, n]) => `${n} ${op} node${n > 1 ? 's' : ''} not lowered to GEMM layers: their compute is missing from the workload`);
  return [...lines, ...(analysed.warnings ?? [])];
}
