/**
 * `modtrans translate`: MODEL -> parallel plan -> ASTRA-sim text workload, Chakra execution traces
 * (.et per rank + communicator groups, or their JSON dump) or SCALE-sim topologies, plus an
 * optional per-layer report. The pipeline and writers are imported only when the command runs,
 * so main.ts can import `addTranslateOutputOptions` at start-up cheaply.
 */
import { rmSync } from 'node:fs';
import { basename } from 'node:path';
import { Option, type Command } from 'commander';
import { InputError, at } from '../errors.js';
import type { OutputFile } from '../writers/output.js';
import type { TimeUnit } from '../writers/time.js';
import { emit, noteWritten, writeFileAtomic, warn } from './output.js';
import { loadProfile, loweringFrom, positiveInt, type CostModelChoice, withCostOptions } from './options.js';
import type { PlanCliOptions } from './plan-options.js';
import { writeStderr } from './stdio.js';

/** Network dimensions of --chakra-dims: ASTRA-sim's topologies have a handful; each is a mask bit per collective. */
const MAX_CHAKRA_DIMS = 64;
/** --passes: the same bound as the plan's (plan/limits.ts; a constant here keeps start-up free of plan/). */
const MAX_PASSES = 1000;

export const TRANSLATE_FORMATS = ['text', 'chakra', 'chakra-json', 'scalesim'] as const;
export type TranslateFormat = (typeof TRANSLATE_FORMATS)[number];

export interface TranslateOptions extends CostModelChoice, PlanCliOptions {
  output?: string;
  hardware: string;
  timeUnit?: TimeUnit;
  report?: string;
  format?: TranslateFormat;
  passes?: number;
  chakraTiming?: 'replay' | 'roofline';
  chakraDims?: number;
  timeline?: string;
  /** GiB: fail when a rank needs more (translate checks the plan's memory before writing). */
  memoryLimit?: number;
}

/** The output-format options of `translate` (main.ts adds them to the command). */
export function addTranslateOutputOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--format <format>', 'text workload, Chakra .et files (-o PREFIX), their JSON dump, or SCALE-sim topologies (-o DIR)').choices([...TRANSLATE_FORMATS]).default('text'))
    .option('--passes <N>', `chakra: training iterations per trace file (default 1, at most ${MAX_PASSES})`, positiveInt('--passes', MAX_PASSES))
    .addOption(new Option('--chakra-timing <mode>', 'chakra: replay (duration_micros, whole us) or roofline (exact ns via num_ops)').choices(['replay', 'roofline']).default('replay'))
    .option('--timeline <FILE.svg>', 'one training step as a Gantt chart (a row per pipeline stage), predicted with communication free')
    .option('--memory-limit <GiB>', 'fail (exit 2, nothing written) when a rank needs more memory than this (see modtrans memory)', (v: string) => {
      const n = Number(v);
      if (!(n > 0) || !Number.isFinite(n)) throw new InputError(`--memory-limit ${v}: expected a positive number of GiB`);
      return n;
    })
    .option('--chakra-dims <N>', `chakra, legacy -p strategies only: the converter's graph with involved_dim masks over N network dimensions instead of communicator groups (at most ${MAX_CHAKRA_DIMS})`, positiveInt('--chakra-dims', MAX_CHAKRA_DIMS));
}

/** Options that only some formats read are errors elsewhere, never silently ignored. */
function checkFormatOptions(format: TranslateFormat, opts: TranslateOptions): void {
  const chakra = format === 'chakra' || format === 'chakra-json';
  if (opts.timeline !== undefined && !/\.svg$/i.test(opts.timeline)) throw new InputError(`--timeline ${opts.timeline}: the file must end in .svg`);
  if (opts.report !== undefined && !/\.(csv|json)$/i.test(opts.report)) throw new InputError(`--report ${opts.report}: the file must end in .csv or .json`);
  if ((format === 'chakra' || format === 'scalesim') && (opts.output === undefined || opts.output === '-')) {
    throw new InputError(`--format ${format} needs -o ${format === 'chakra' ? 'PREFIX (files PREFIX.<rank>.et)' : 'DIR'}`);
  }
  if (opts.timeUnit !== undefined && format !== 'text') throw new InputError(`--time-unit applies to the text format; Chakra traces hold microseconds (or exact ns with --chakra-timing roofline)`);
  if (!chakra && opts.passes !== undefined) throw new InputError(`--passes applies to --format chakra (the text format describes one iteration; ASTRA-sim 1.0 repeats it with its own --num-passes)`);
  if (!chakra && opts.chakraDims !== undefined) throw new InputError(`--chakra-dims applies to --format chakra`);
}

export async function runTranslate(modelArg: string, opts: TranslateOptions): Promise<void> {
  const format = opts.format ?? 'text';
  checkFormatOptions(format, opts);
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const { planRequestOf, analyseForPlan } = await import('./plan-request.js');
  const request = planRequestOf(opts);
  if (request.world.pp > 1 && format !== 'chakra' && format !== 'chakra-json') throw new InputError(`--pp ${request.world.pp}: pipeline stages need --format chakra or chakra-json (the ${format} format has no point-to-point transfers)`);
  const { describeUnlowered, createCostModel, planOf } = await import('../pipeline.js');
  const profile = withCostOptions(await loadProfile(opts.hardware), opts);
  const run = await analyseForPlan(path, opts, request.world.dp, loweringFrom(opts));
  const { analysed } = run;
  warn(describeUnlowered(analysed));
  if (analysed.layers.length === 0) throw new InputError(`${path}: the model has no GEMM-like layer (Conv, Gemm, MatMul, LSTM, ...)`);
  const costModel = await createCostModel(profile, opts.costModel, { optimizer: opts.optimizer });
  // Costing every GEMM (USER mode walks SCALE-sim's buffers) gets the bar inspect shows.
  const { withCostProgress } = await import('./cost-progress.js');
  const gemms = (): number => analysed.layers.reduce((sum, l) => sum + l.passes.fwd.length + l.passes.ig.length + l.passes.wg.length, 0);
  const progress = withCostProgress([costModel], gemms);
  const counted = at(progress.models, 0);
  let plan: ReturnType<typeof planOf>;
  let refetchLines: string[];
  try {
    plan = planOf(analysed, { ...request, batch: run.batch }, counted);
    if (opts.memoryLimit !== undefined) {
      const { planMemory, checkMemoryLimit } = await import('../memory/report.js');
      checkMemoryLimit(planMemory(plan, opts.optimizer ?? 'sgd'), opts.memoryLimit);
    }
    refetchLines = (await import('../cost/refetch.js')).refetchWarningsFor(analysed.layers, counted);
  } finally {
    progress.done();
  }
  warn(refetchLines);

  // Every output is produced before any is written, so a failure leaves no partial set; the
  // per-rank traces are encoded one at a time and written as they come (bounded memory).
  const { TRANSLATE_WRITERS } = await import('./translate-formats.js');
  const formatRun = await TRANSLATE_WRITERS[format]({ path, opts, request, analysed, plan, costModel, profile });
  const { output } = formatRun;
  const files = [...output.files];
  // One step if the network were free: the compute floor ASTRA-sim's result adds the network to.
  // Without pipeline stages and a timeline to draw, the figures come from the plan, not a step graph.
  const { predictFreeNetwork, predictionSummary } = await import('../predict/free-network.js');
  let prediction = formatRun.schedule === undefined && opts.timeline === undefined ? (await import('../predict/one-stage.js')).oneStageStepSummary(plan, costModel) : undefined;
  if (prediction === undefined) {
    const stepSchedule = formatRun.schedule ?? (await import('../pipeline.js')).scheduleOf(plan, costModel);
    const full = predictFreeNetwork(stepSchedule);
    prediction = predictionSummary(full);
    if (opts.timeline !== undefined) {
      const { timelineTitles, timelineWriter } = await import('../writers/timeline-svg.js');
      const titles = timelineTitles(basename(path, '.onnx'), request.legacy, plan, full);
      files.push(...(await timelineWriter({ ...titles, schedule: stepSchedule, prediction: full }, { output: opts.timeline })).files);
    }
  }
  if (opts.report !== undefined) {
    const { buildReport } = await import('../report/layer-report.js');
    const { layerReportWriter } = await import('../writers/layer-report.js');
    const { reportFormatOfPath } = await import('../writers/output.js');
    const report = { ...buildReport(path, analysed.layers, costModel, plan), prediction };
    files.push(...(await layerReportWriter(report, { output: opts.report, format: reportFormatOfPath(opts.report) })).files);
  }
  if (output.stdout !== undefined) emit(output.stdout, undefined);
  writeAll(files, output.stream);
  const what = output.what ?? opts.output ?? 'standard output';
  const { world, batch } = plan;
  const layout = `TP ${world.tp} x DP ${world.dp}${world.pp > 1 ? ` x PP ${world.pp}` : ''} = ${world.tp * world.dp * world.pp} ranks${plan.sequenceParallel ? ', SP' : ''}${plan.zero > 0 ? `, ZeRO-${plan.zero}` : ''}`;
  const batches = `global batch ${batch.globalBatch} = ${world.dp} replica${world.dp > 1 ? 's' : ''} x ${batch.microBatches} micro-batch${batch.microBatches > 1 ? 'es' : ''} x ${batch.microBatch} sample${batch.microBatch > 1 ? 's' : ''}${run.batchDefaulted ? " (the model's exported batch per replica; set --global-batch/--micro-batch)" : ''}`;
  const vectorLayers = analysed.layers.filter((l) => l.kind === 'vector').length;
  const { vectorShareOfPlan } = await import('../schedule/cost.js');
  const vector = vectorLayers > 0 ? `; vector ops ${(100 * vectorShareOfPlan(plan, costModel)).toFixed(1)}% of a rank's compute (${vectorLayers} layer${vectorLayers === 1 ? '' : 's'})` : '';
  writeStderr(`modtrans: ${analysed.layers.length} layers; ${request.legacy ?? 'plan'}: ${layout}; ${batches}; ${profile.name} (${costModel.name}, ${profile.clockMHz} MHz), ${formatRun.unit}${vector} -> ${what}\n`);
  if (world.pp > 1) {
    const { stageReports } = await import('../report/layer-report.js');
    const stages = stageReports(plan, profile.clockMHz).map((s) => `stage ${s.stage} ${s.chunks.map((c) => `${c.first} .. ${c.last}`).join(' + ')} (${s.layers} layers, ${(s.ns / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 })} us)`);
    const recompute = plan.recompute === 'none' ? '' : `, ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers`;
    writeStderr(`modtrans: pipeline ${plan.pipeline.schedule}${plan.pipeline.virtualStages > 1 ? ` (${plan.pipeline.virtualStages} chunks per rank)` : ''}${recompute}, fwd + bwd per micro-batch: ${stages.join('; ')}\n`);
  } else if (plan.recompute !== 'none') writeStderr(`modtrans: ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers\n`);
  for (const note of output.notes) writeStderr(`modtrans: ${note}\n`);
  const bubble = world.pp > 1 ? `; pipeline bubble ${(100 * prediction.bubbleFraction).toFixed(1)}% of ${world.pp} stages' time` : '';
  writeStderr(`modtrans: predicted step if the network were free: ${(prediction.stepNs / 1e6).toPrecision(4)} ms${bubble} (ASTRA-sim adds the network time)\n`);
  if (opts.timeline !== undefined) noteWritten('timeline', opts.timeline);
  if (opts.report !== undefined) noteWritten('per-layer report', opts.report);
}

/** Writes every file; if one fails, the ones already written are removed again. */
function writeAll(files: readonly OutputFile[], stream: Iterable<OutputFile> | undefined): void {
  const written: string[] = [];
  try {
    // The stream is iterated, never collected: its files are encoded one at a time.
    for (const list of [files, stream ?? []]) {
      for (const f of list) {
        writeFileAtomic(f.path, f.bytes);
        written.push(f.path);
      }
    }
  } catch (e) {
    for (const f of written) rmSync(f, { force: true });
    throw e;
  }
}
