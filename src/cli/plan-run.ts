/**
 * The run the plan-based commands share, one request through a flat list of stages: resolve the
 * model -> the request (the plan-option set, validated by planRequestOf) -> the hardware profile
 * -> analyse (parse, shapes, layers, structure; analyseForPlan) -> the cost model -> the plan
 * (stages balanced on costed time) -> its invariants -> the costed plan. `translate` and
 * `memory` are this list with their own tail (formats, prediction, report; the memory report).
 * Imported when a command runs.
 */
import type { CostModel, HardwareProfile } from '../cost/types.js';
import type { CostedPlan } from '../costed/costed-plan.js';
import { at, InputError } from '../errors.js';
import type { InvariantReport } from '../plan/invariants.js';
import type { ParallelPlan } from '../plan/types.js';
import { loadProfile, loweringFrom, type CostModelChoice, withCostOptions } from './options.js';
import type { PlanCliOptions } from './plan-options.js';
import { analyseForPlan, planRequestOf, type AnalysedRun, type PlanRequest } from './plan-request.js';
import { warn } from './output.js';

export interface PlanRunOptions extends CostModelChoice, PlanCliOptions {
  hardware: string;
}

/** A command's hooks into the list: its checks of the request and of the plan, its notes on the analysis. */
export interface PlanRunTail {
  /** After the request is known, before the model is read (a format that cannot write the plan). */
  checkRequest?(request: PlanRequest): void | Promise<void>;
  /** Lines for stderr after the lowering's own, before the model is checked for GEMM layers. */
  analysisNotes?: string[];
  /** After the plan and its invariants, before it is costed (a memory limit). */
  checkPlan?(plan: ParallelPlan): void | Promise<void>;
  /** Whether the tail reads the costed plan (memory does not). */
  costed: boolean;
  /** Whether a pipeline of one micro-batch per step is worth a warning (not for inspect's per-layer table). */
  stepWarnings?: boolean;
}

export interface PlanRun {
  path: string;
  request: PlanRequest;
  profile: HardwareProfile;
  analysed: AnalysedRun;
  costModel: CostModel;
  plan: ParallelPlan;
  invariants: InvariantReport;
  /** With `tail.costed`. */
  costed?: CostedPlan;
  /** For stderr, in this order, once the tail's own checks passed: the pipeline's batch, SRAM refetches, the invariants' warnings. */
  warnings: string[];
}

export async function runPlanStages(modelArg: string, opts: PlanRunOptions, tail: PlanRunTail): Promise<PlanRun> {
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const request = planRequestOf(opts);
  await tail.checkRequest?.(request);
  const { describeUnlowered, costedPlanOf, createCostModel, planOf } = await import('../pipeline.js');
  const profile = withCostOptions(await loadProfile(opts.hardware), opts);
  const analysed = await analyseForPlan(path, opts, request.world.dp, loweringFrom(opts));
  const layers = analysed.analysed.layers;
  warn(describeUnlowered(analysed.analysed));
  warn(tail.analysisNotes ?? []);
  if (layers.length === 0) throw new InputError(`${path}: the model has no GEMM-like layer (Conv, Gemm, MatMul, LSTM, ...)`);
  const costModel = await createCostModel(profile, opts.costModel, { optimizer: opts.optimizer });
  // Costing every GEMM (USER mode walks SCALE-sim's buffers) gets the bar inspect shows.
  const { withCostProgress } = await import('./cost-progress.js');
  const { sumOverPasses } = await import('../passes.js');
  const progress = withCostProgress([costModel], () => layers.reduce((sum, l) => sum + sumOverPasses(l.passes, (p) => p.length), 0));
  const counted = at(progress.models, 0);
  try {
    const plan = planOf(analysed.analysed, { ...request, batch: analysed.batch }, counted);
    const invariants = (await import('../plan/invariants.js')).checkPlanInvariants(plan, analysed.analysed.inferred, loweringFrom(opts));
    await tail.checkPlan?.(plan);
    const costed = tail.costed ? costedPlanOf(plan, counted) : undefined;
    const refetch = tail.costed ? (await import('../cost/refetch.js')).refetchWarningsFor(layers, counted) : [];
    const { pipelineBatchWarnings } = await import('./plan-request.js');
    // After the plan: an error (a pipeline too long for the model) comes alone.
    const warnings = [...(tail.stepWarnings === false ? [] : pipelineBatchWarnings(request.world, analysed.batch)), ...refetch, ...invariants.warnings];
    return { path, request, profile, analysed, costModel, plan, invariants, ...(costed === undefined ? {} : { costed }), warnings };
  } finally {
    progress.done();
  }
}
