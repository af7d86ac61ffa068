/** `modtrans inspect`: the per-layer table of a model on one hardware profile, with tensor-parallel roles. */
import { at } from '../errors.js';
import { analyseModel, costedPlanOf, createCostModel, describeUnlowered, leadingDim, planOf } from '../pipeline.js';
import { buildReport } from '../report/layer-report.js';
import { layerReportWriter } from '../writers/layer-report.js';
import { withCostProgress } from './cost-progress.js';
import { emitOutput, noteWritten, reportFormatOf, warn } from './output.js';
import { writeStderr } from './stdio.js';
import { bindingsFrom, loadProfile, loweringFrom, type CostModelChoice, withCostOptions } from './options.js';
import { type ExitCode, SUCCESS } from './exit-code.js';

export interface InspectOptions extends CostModelChoice {
  format: string;
  output?: string;
  hardware: string;
  dim?: string[];
  batch?: number;
  tp?: number;
  sp?: boolean;
  tpPlan?: string;
  pp?: number;
  ppStages?: string;
  dtype: string;
  structure?: boolean;
  seq?: number;
}

export async function runInspect(modelArg: string, opts: InspectOptions): Promise<ExitCode> {
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const profile = withCostOptions(await loadProfile(opts.hardware), opts);
  let bindings = bindingsFrom(opts);
  if (opts.seq !== undefined) {
    // --seq binds the token inputs' sequence dim, as translate's does (read from the declared inputs).
    const { readModel } = await import('../onnx/reader.js');
    const { bindSequence } = await import('./plan-request.js');
    const { graph } = readModel(path).model;
    const initializers = new Set(graph.initializers.map((t) => t.name));
    const inputs = graph.inputs.filter((i) => !initializers.has(i.name)).map((i) => ({ name: i.name, info: i.type.kind === 'tensor' ? i.type : undefined }));
    const dims = new Map(bindings.dims);
    bindSequence(path, inputs, opts.seq, dims);
    bindings = { ...bindings, dims };
  }
  const analysed = analyseModel(path, bindings, {}, loweringFrom(opts));
  (await import('../layers/batch-scaling.js')).batchScalingOf(analysed, bindings);
  warn(describeUnlowered(analysed));
  if (opts.structure === true) {
    const { structureReport } = await import('../report/structure-report.js');
    const { structureReportWriter } = await import('../writers/structure-report.js');
    const report = structureReport(modelArg, analysed.structure, analysed.layers);
    if (emitOutput(await structureReportWriter(report, { output: opts.output, format: reportFormatOf(opts.format) })) && opts.output !== undefined) noteWritten(`structure of ${report.layers} layers, ${report.blocks.length} blocks, ${opts.format}`, opts.output);
    return SUCCESS;
  }
  const { planRequestOf } = await import('./plan-request.js');
  const request = planRequestOf({ tp: opts.tp ?? 1, dp: 1, pp: opts.pp, ppStages: opts.ppStages, sp: opts.sp, tpPlan: opts.tpPlan, dtype: opts.dtype, params: 'all' });
  const batch = leadingDim(analysed);
  const costModel = await createCostModel(profile, opts.costModel, { optimizer: opts.optimizer });
  const plan = planOf(analysed, { ...request, batch: { globalBatch: batch, microBatch: batch, microBatches: 1 } }, costModel);
  const invariants = (await import('../plan/invariants.js')).checkPlanInvariants(plan, analysed.inferred, loweringFrom(opts));
  warn(invariants.warnings);
  const progress = withCostProgress([costModel], 3 * analysed.layers.length);
  let report: ReturnType<typeof buildReport>;
  try {
    report = buildReport(path, costedPlanOf(plan, at(progress.models, 0)));
  } finally {
    progress.done(); // a drawn bar holds a timer: an error must still end it
  }
  warn((await import('../cost/refetch.js')).refetchWarningsFor(analysed.layers, costModel));
  const wrote = emitOutput(await layerReportWriter(report, { output: opts.output, format: reportFormatOf(opts.format) }));
  if (wrote && opts.output !== undefined) noteWritten(`${report.layers.length} layers on ${profile.name}, ${opts.format} report; ${invariants.summary}`, opts.output);
  else writeStderr(`modtrans: ${report.layers.length} layers on ${profile.name}; ${invariants.summary}\n`);
  return SUCCESS;
}
