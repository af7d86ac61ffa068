/**
 * `modtrans translate`: MODEL -> parallel plan -> ASTRA-sim text workload, Chakra execution traces
 * (.et per rank + communicator groups, or their JSON dump) or SCALE-sim topologies, plus an
 * optional per-layer report. The pipeline and writers are imported only when the command runs,
 * so main.ts can import `addTranslateOutputOptions` at start-up cheaply.
 */
import { basename, join } from 'node:path';
import { Option, type Command } from 'commander';
import { InputError, at, internalError } from '../errors.js';
import { formatDurationNs, type TimeUnit } from '../writers/time.js';
import { emit, noteWritten, warn, writeFilesAtomic } from './output.js';
import { memoryLimitGiB, positiveInt, type CostModelChoice } from './options.js';
import type { PlanCliOptions } from './plan-options.js';
import { writeStderr } from './stdio.js';
import type { CostedPlan } from '../costed/costed-plan.js';
import type { PredictionSummary } from '../predict/free-network.js';
import type { StepSchedule } from '../schedule/types.js';
import type { WorldShape } from '../plan/types.js';
import type { OutputFile } from '../writers/output.js';
import type { PlanRun } from './plan-run.js';
import { type ExitCode, SUCCESS } from './exit-code.js';
import { MAX_ITERATIONS } from '../plan/limits.js';
import { FORMAT_SUPPORT, type FormatSupport, TRANSLATE_FORMATS, type TranslateFormat, formatsWith } from './format-support.js';

/** Network dimensions of --chakra-dims: ASTRA-sim's topologies have a handful; each is a mask bit per collective. */
const MAX_CHAKRA_DIMS = 64;


export interface TranslateOptions extends CostModelChoice, PlanCliOptions {
  output?: string;
  hardware: string;
  timeUnit?: TimeUnit;
  report?: string;
  format?: TranslateFormat;
  /** Training iterations per trace file (chakra formats). */
  iterations?: number;
  /** --passes, the former name of --iterations (read as it, with a note on stderr). */
  passes?: number;
  chakraTiming?: 'replay' | 'roofline';
  chakraDims?: number;
  timeline?: string;
  /** GiB: fail when a rank needs more (translate checks the plan's memory before writing). */
  memoryLimit?: number;
  /** With pipeline stages: a line per stage on stderr after the summary. */
  stageTable?: boolean;
  /** Text format: vector layers folded into the GEMM-like layer before them (default), or a line each. */
  textVectorLayers?: 'fold' | 'separate';
  /** chakra: a cluster (clusters/NAME.json or a file) whose ASTRA-sim network, system and remote-memory configs are written beside the traces. */
  cluster?: string;
}

/** The output-format options of `translate` (main.ts adds them to the command). */
export function addTranslateOutputOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--format <format>', 'text workload, Chakra .et files (-o PREFIX), their JSON dump, or SCALE-sim topologies (-o DIR)').choices([...TRANSLATE_FORMATS]).default('text'))
    .option('--iterations <N>', `chakra: training iterations per trace file (default 1, at most ${MAX_ITERATIONS})`, positiveInt('--iterations'))
    .addOption(new Option('--passes <N>', 'the former name of --iterations').argParser(positiveInt('--passes')).hideHelp())
    .addOption(new Option('--chakra-timing <mode>', 'chakra: replay (duration_micros, whole us) or roofline (exact ns via num_ops)').choices(['replay', 'roofline']).default('replay'))
    .option('--timeline <FILE.svg|FILE.json|FILE.csv>', 'one training step as a Gantt chart (a row per pipeline stage), predicted with communication free; .json/.csv: its boxes as data')
    .option('--memory-limit <GiB>', 'fail (exit 2, nothing written) when a rank needs more memory than this (see modtrans memory)', memoryLimitGiB)
    .option('--stage-table', "with --pp: a line per pipeline stage on stderr (its layers and one rank's fwd + bwd time), after the one-line summary")
    .option('--cluster <name|file>', 'chakra: a cluster from clusters/ or a .json file; writes PREFIX.network.yml, PREFIX.system.json and PREFIX.remote_memory.json for ASTRA-sim beside the traces')
    .addOption(new Option('--text-vector-layers <mode>', "text: fold each vector layer's work into the GEMM-like layer it follows (default; the layer-wise format's lines), or separate: a line each").choices(['fold', 'separate']))
    .option('--chakra-dims <N>', `chakra, legacy -p strategies only: the converter's graph with involved_dim masks over N network dimensions instead of communicator groups (at most ${MAX_CHAKRA_DIMS})`, positiveInt('--chakra-dims'));
}

/** Options that only some formats read (FORMAT_SUPPORT says which) are errors elsewhere, never silently ignored. */
function checkFormatOptions(format: TranslateFormat, opts: TranslateOptions): void {
  const supports: FormatSupport = FORMAT_SUPPORT[format];
  if (opts.timeline !== undefined && !/\.(svg|json|csv)$/i.test(opts.timeline)) throw new InputError(`--timeline ${opts.timeline}: the file must end in .svg (the chart), .json or .csv (its boxes as data)`);
  if (opts.report !== undefined && !/\.(csv|json)$/i.test(opts.report)) throw new InputError(`--report ${opts.report}: the file must end in .csv or .json`);
  if (supports.output !== undefined && (opts.output === undefined || opts.output === '-')) throw new InputError(`--format ${format} needs -o ${supports.output}`);
  if (opts.timeUnit !== undefined && !supports.timeUnits) throw new InputError(`--time-unit applies to the text format; Chakra traces hold microseconds (or exact ns with --chakra-timing roofline)`);
  // The count flags' bounds, as plan/limits.ts words them (checked after parsing, so that --no-limits lifts them).
  for (const [flag, value, max] of [['--iterations', opts.iterations, MAX_ITERATIONS], ['--chakra-dims', opts.chakraDims, MAX_CHAKRA_DIMS]] as const) {
    if (opts.limits !== false && value !== undefined && value > max) throw new InputError(`${flag} ${value}: more than the limit of ${max.toLocaleString('en-US')}; --no-limits lifts the bounds`);
  }
  if (!supports.iterations && opts.iterations !== undefined) throw new InputError(`--iterations applies to --format chakra (the text format describes one iteration; ASTRA-sim 1.0 repeats it with its own --num-passes)`);
  if (opts.cluster !== undefined && format !== 'chakra') throw new InputError(`--cluster applies to --format chakra (its configs go beside the .et traces)`);
  if (!supports.networkDims && opts.chakraDims !== undefined) throw new InputError(`--chakra-dims applies to --format chakra`);
  // replay is the default, so only roofline can be told apart from an unset flag.
  if (!supports.rooflineTiming && opts.chakraTiming === 'roofline') throw new InputError(`--chakra-timing roofline applies to --format ${formatsWith('rooflineTiming')} (the ${format} format has no num_ops to time)`);
  if (opts.stageTable === true && (opts.pp ?? 1) <= 1 && opts.ppStages === undefined) throw new InputError(`--stage-table needs pipeline stages (--pp P)`);
  if (!supports.vectorLayerLines && opts.textVectorLayers !== undefined) throw new InputError(`--text-vector-layers applies to --format ${formatsWith('vectorLayerLines')} (the Chakra format has a node per vector layer and pass)`);
}

/** A plan the format cannot write (checked once the request is known, before the model is read). */
function checkFormatPlan(format: TranslateFormat, world: WorldShape): void {
  if (world.pp > 1 && !FORMAT_SUPPORT[format].pipeline) throw new InputError(`--pp ${world.pp}: pipeline stages need --format ${formatsWith('pipeline')} (the ${format} format has no point-to-point transfers)`);
  // The per-layer formats have one collective per pass and no transfers: no K/V ring, no token dispatch.
  const extra = (world.cp ?? 1) > 1 ? `--cp ${world.cp}` : (world.ep ?? 1) > 1 ? `--ep ${world.ep}` : world.etp !== undefined && world.etp !== world.tp ? `--etp ${world.etp}` : undefined;
  if (extra !== undefined && !FORMAT_SUPPORT[format].stepGraph) throw new InputError(`${extra}: context and expert parallelism need --format ${formatsWith('stepGraph')} (the ${format} format has one collective per layer pass)`);
}

/**
 * --passes, the former name of --iterations (renamed: a layer's passes are its fwd / ig / wg
 * GEMMs), read as --iterations with a one-line note on stderr.
 */
function withFormerNames(opts: TranslateOptions): TranslateOptions {
  if (opts.passes === undefined) return opts;
  if (opts.iterations !== undefined) throw new InputError(`--passes is the former name of --iterations: give --iterations alone`);
  writeStderr('modtrans: note: --passes is now --iterations (training iterations per trace file); the old name still works\n');
  const { passes, ...rest } = opts;
  return { ...rest, iterations: passes };
}

/** What `simulate` reads back from a translate run (filled in when it succeeds). */
export interface TranslateObserved {
  plan?: import('../plan/types.js').ParallelPlan;
  profile?: import('../cost/types.js').HardwareProfile;
  /** The free-network prediction's pipeline bubble (share of the stages' time idle). */
  bubble?: number;
}

export async function runTranslate(modelArg: string, given: TranslateOptions, observed?: TranslateObserved): Promise<ExitCode> {
  const opts = withFormerNames(given);
  const format = opts.format ?? 'text';
  checkFormatOptions(format, opts);
  const { runPlanStages } = await import('./plan-run.js');
  const planned = await runPlanStages(modelArg, opts, {
    costed: true,
    checkRequest: async (request) => {
      checkFormatPlan(format, request.world);
      // A bad cluster file, or a world it cannot hold, fails before any costing (the configs are written with the traces).
      if (opts.cluster !== undefined) (await import('../cluster/network.js')).clusterNetwork((await import('../cluster/parse.js')).loadCluster(opts.cluster), request.world);
    },
    checkPlan: async (plan) => {
      if (opts.memoryLimit === undefined) return;
      const { planMemory, checkMemoryLimit } = await import('../memory/report.js');
      checkMemoryLimit(planMemory(plan, opts.optimizer ?? 'sgd'), opts.memoryLimit);
    },
  });
  warn(planned.warnings);
  const { path, request, profile, plan } = planned;
  const { analysed } = planned.analysed;
  const costed = planned.costed ?? internalError('translate: the plan was not costed');

  // Every output is produced before any is written, so a failure leaves no partial set; the
  // per-rank traces are encoded one at a time and written as they come (bounded memory).
  const { TRANSLATE_WRITERS } = await import('./translate-formats.js');
  const formatRun = await TRANSLATE_WRITERS[format]({ path, opts, request, analysed, costed, profile });
  const { output } = formatRun;
  // Files beside the output (timeline, report); a set's own files are output.files and output.stream.
  const files = formatRun.set === undefined ? [...output.files] : [];
  const prediction = await predictStep(planned, costed, opts, formatRun.schedule, files);
  if (opts.report !== undefined) files.push(...(await reportFiles(path, costed, prediction, opts.report)));
  if (output.stdout !== undefined) emit(output.stdout, undefined);
  // Every file goes to a temp name first and is renamed once all are complete; a set (trace
  // files, SCALE-sim export) also under its lock, with its manifest written last.
  if (formatRun.set !== undefined) await (await import('./output-set.js')).writeOutputSet({ ...formatRun.set, files: output.files, stream: output.stream }, files);
  else if (output.stream !== undefined) throw new Error('internal error: a streamed output without an output set');
  else writeFilesAtomic(files);
  const { set } = formatRun;
  const what = `${output.what ?? opts.output ?? 'standard output'}${set === undefined ? '' : ` + ${join(set.dir, set.manifestName)}`}`;
  await writeSummary(planned, costed, formatRun.unit, what);
  if (plan.world.pp > 1) await writePipelineLines(costed, opts.stageTable === true);
  else if (plan.recompute !== 'none') writeStderr(`modtrans: ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers\n`);
  for (const note of output.notes) writeStderr(`modtrans: ${note}\n`);
  const { world } = plan;
  const bubble = world.pp > 1 ? `; pipeline bubble ${(100 * prediction.bubbleFraction).toFixed(1)}% of ${world.pp} stages' time` : '';
  writeStderr(`modtrans: predicted step if the network were free: ${formatDurationNs(prediction.stepNs)}${bubble} (ASTRA-sim adds the network time)\n`);
  if (observed !== undefined) Object.assign(observed, { plan, profile, bubble: world.pp > 1 ? prediction.bubbleFraction : 0 });
  if (opts.timeline !== undefined) noteWritten('timeline', opts.timeline);
  if (opts.report !== undefined) noteWritten('per-layer report', opts.report);
  return SUCCESS;
}

/**
 * One step if the network were free: the compute floor ASTRA-sim's result adds the network to.
 * Without pipeline stages and a timeline to draw, the figures come from the costed plan, not a
 * step graph; the timeline's files join `files`.
 */
async function predictStep(planned: PlanRun, costed: CostedPlan, opts: TranslateOptions, built: StepSchedule | undefined, files: OutputFile[]): Promise<PredictionSummary> {
  const { predictFreeNetwork, predictionSummary } = await import('../predict/free-network.js');
  const quick = built === undefined && opts.timeline === undefined ? (await import('../predict/one-stage.js')).oneStageStepSummary(costed) : undefined;
  if (quick !== undefined) return quick;
  const stepSchedule = built ?? (await import('../schedule/build.js')).buildStepSchedule(costed, { limits: opts.limits !== false });
  const full = predictFreeNetwork(stepSchedule);
  if (opts.timeline !== undefined) {
    const { timelineTitles, timelineWriter } = await import('../writers/timeline-svg.js');
    const titles = timelineTitles(basename(planned.path, '.onnx'), planned.request.legacy, planned.plan, full);
    files.push(...(await timelineWriter({ ...titles, schedule: stepSchedule, prediction: full }, { output: opts.timeline })).files);
  }
  return predictionSummary(full);
}

/** --report: the per-layer report of the costed plan, with the prediction. */
async function reportFiles(path: string, costed: CostedPlan, prediction: PredictionSummary, output: string): Promise<OutputFile[]> {
  const { buildReport } = await import('../report/layer-report.js');
  const { layerReportWriter } = await import('../writers/layer-report.js');
  const { reportFormatOfPath } = await import('../writers/output.js');
  return (await layerReportWriter({ ...buildReport(path, costed), prediction }, { output, format: reportFormatOfPath(output) })).files;
}

/** The one-line summary: layers, layout, batches, profile, units, vector share, invariants, what was written. */
async function writeSummary(planned: PlanRun, costed: CostedPlan, unit: string, what: string): Promise<void> {
  const { plan, request, profile, costModel, invariants } = planned;
  const run = planned.analysed;
  const { analysed } = run;
  const { batchScalingNote } = await import('./plan-request.js');
  const { world, batch } = plan;
  const { planLayout } = await import('../plan/world.js');
  const layout = planLayout(plan);
  const batches = `global batch ${batch.globalBatch} = ${world.dp} replica${world.dp > 1 ? 's' : ''} x ${batch.microBatches} micro-batch${batch.microBatches > 1 ? 'es' : ''} x ${batch.microBatch} sample${batch.microBatch > 1 ? 's' : ''}${run.batchDefaulted ? " (the model's exported batch per replica; set --global-batch/--micro-batch)" : ''}${batchScalingNote(run.batchScaling)}`;
  const vectorLayers = analysed.layers.reduce((n, l) => (l.kind === 'vector' ? n + 1 : n), 0);
  const { vectorShareOfPlan } = await import('../costed/costed-plan.js');
  const vector = vectorLayers > 0 ? `; vector ops ${(100 * vectorShareOfPlan(costed)).toFixed(1)}% of a rank's compute (${vectorLayers} layer${vectorLayers === 1 ? '' : 's'})` : '';
  writeStderr(`modtrans: ${analysed.layers.length} layers; ${request.legacy ?? 'plan'}: ${layout}; ${batches}; ${profile.name} (${costModel.name}, ${profile.clockMHz} MHz), ${unit}${vector}; ${invariants.summary} -> ${what}\n`);
}

/** With pipeline stages: one line on the stages (and with --stage-table a line per stage). */
async function writePipelineLines(costed: CostedPlan, stageTable: boolean): Promise<void> {
  const { plan } = costed;
  const { stageReports } = await import('../report/layer-report.js');
  const stages = stageReports(costed);
  const recompute = plan.recompute === 'none' ? '' : `, ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers`;
  // One line whatever the stage count (16 stages named in full made a 2,000-character line); the table on request.
  const slowest = stages.reduce((a, s) => (s.ns > a.ns ? s : a), at(stages, 0));
  const fastest = stages.reduce((a, s) => (s.ns < a.ns ? s : a), at(stages, 0));
  const range = fastest.ns === slowest.ns ? `${formatDurationNs(slowest.ns)} on every stage` : `${formatDurationNs(fastest.ns)} - ${formatDurationNs(slowest.ns)} (slowest: stage ${slowest.stage})`;
  const more = stageTable ? '' : '; --stage-table lists each stage';
  writeStderr(`modtrans: pipeline ${plan.pipeline.schedule}, ${plan.world.pp} stages${plan.pipeline.virtualStages > 1 ? ` x ${plan.pipeline.virtualStages} chunks` : ''}${recompute}; fwd + bwd per micro-batch on one rank ${range}${more}\n`);
  if (!stageTable) return;
  // A column whose header carries its unit.
  const us = (ns: number): string => (ns / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 });
  const rows = stages.map((s) => [String(s.stage), String(s.layers), us(s.ns), s.chunks.map((c) => `${c.first} .. ${c.last}`).join(' + ')]);
  const header = ['stage', 'layers', 'fwd + bwd us', 'layers (first .. last per chunk)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => at(r, i).length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i < 3 ? c.padStart(at(widths, i)) : c)).join('  ');
  writeStderr([header, ...rows].map((r) => `modtrans:   ${line(r)}\n`).join(''));
}
