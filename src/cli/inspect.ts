/** `modtrans inspect`: the per-layer table of a model on one hardware profile, with tensor-parallel roles. */
import { buildReport } from '../report/layer-report.js';
import { layerReportWriter } from '../writers/layer-report.js';
import { emitOutput, noteWritten, reportFormatOf, warn } from './output.js';
import { writeStderr } from './stdio.js';
import { bindingsFrom, loweringFrom, type CostModelChoice } from './options.js';
import type { PlanCliOptions } from './plan-options.js';
import { type ExitCode, SUCCESS } from './exit-code.js';

export interface InspectOptions extends CostModelChoice, PlanCliOptions {
  format: string;
  output?: string;
  hardware: string;
  structure?: boolean;
}

export async function runInspect(modelArg: string, opts: InspectOptions): Promise<ExitCode> {
  if (opts.structure === true) return runStructure(modelArg, opts);
  // The plan-option set translate and memory take, run through the same stages (plan-run.ts);
  // without plan flags one rank runs every layer whole.
  const { runPlanStages } = await import('./plan-run.js');
  const { usesPlanFlags } = await import('./plan-request.js');
  const planOpts: InspectOptions = opts.parallelism === undefined && opts.npus === undefined && !usesPlanFlags(opts) ? { ...opts, tp: 1 } : opts;
  const planned = await runPlanStages(modelArg, planOpts, { costed: true, stepWarnings: false });
  warn(planned.warnings);
  const { path, profile, invariants } = planned;
  const { costed } = planned;
  if (costed === undefined) throw new Error('internal error: the plan run was asked for its costed plan');
  const report = buildReport(path, costed);
  const wrote = emitOutput(await layerReportWriter(report, { output: opts.output, format: reportFormatOf(opts.format) }));
  if (wrote && opts.output !== undefined) noteWritten(`${report.layers.length} layers on ${profile.name}, ${opts.format} report; ${invariants.summary}`, opts.output);
  else writeStderr(`modtrans: ${report.layers.length} layers on ${profile.name}; ${invariants.summary}\n`);
  return SUCCESS;
}

/** --structure: the model's structure (blocks, attention, MLPs, embeddings, heads); no plan. */
async function runStructure(modelArg: string, opts: InspectOptions): Promise<ExitCode> {
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
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
  const { analyseModel, describeUnlowered } = await import('../pipeline.js');
  const analysed = analyseModel(path, bindings, {}, loweringFrom(opts));
  (await import('../layers/batch-scaling.js')).batchScalingOf(analysed, bindings);
  warn(describeUnlowered(analysed));
  const { structureReport } = await import('../report/structure-report.js');
  const { structureReportWriter } = await import('../writers/structure-report.js');
  const report = structureReport(modelArg, analysed.structure, analysed.layers);
  if (emitOutput(await structureReportWriter(report, { output: opts.output, format: reportFormatOf(opts.format) })) && opts.output !== undefined) noteWritten(`structure of ${report.layers} layers, ${report.blocks.length} blocks, ${opts.format}`, opts.output);
  return SUCCESS;
}
