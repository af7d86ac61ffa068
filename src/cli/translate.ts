/**
 * `modtrans translate`: MODEL -> parallel plan -> ASTRA-sim text workload, Chakra execution traces
 * (.et per rank + communicator groups, or their JSON dump) or SCALE-sim topologies, plus an
 * optional per-layer report. The pipeline and writers are imported only when the command runs,
 * so main.ts can import `addTranslateOutputOptions` at start-up cheaply.
 */
import { basename, join } from 'node:path';
import { Option, type Command } from 'commander';
import { InputError, at } from '../errors.js';
import { formatDurationNs, type TimeUnit } from '../writers/time.js';
import { emit, noteWritten, warn, writeFilesAtomic } from './output.js';
import { loadProfile, loweringFrom, positiveInt, type CostModelChoice, withCostOptions } from './options.js';
import type { PlanCliOptions } from './plan-options.js';
import { writeStderr } from './stdio.js';
import { type ExitCode, SUCCESS } from './exit-code.js';

/** Network dimensions of --chakra-dims: ASTRA-sim's topologies have a handful; each is a mask bit per collective. */
const MAX_CHAKRA_DIMS = 64;
/** --iterations: the same bound as the plan's (plan/limits.ts; a constant here keeps start-up free of plan/). */
const MAX_ITERATIONS = 1000;

export const TRANSLATE_FORMATS = ['text', 'chakra', 'chakra-json', 'scalesim'] as const;
export type TranslateFormat = (typeof TRANSLATE_FORMATS)[number];

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
    .option('--memory-limit <GiB>', 'fail (exit 2, nothing written) when a rank needs more memory than this (see modtrans memory)', (v: string) => {
      const n = Number(v);
      if (!(n > 0) || !Number.isFinite(n)) throw new InputError(`--memory-limit ${v}: expected a positive number of GiB`);
      return n;
    })
    .option('--stage-table', "with --pp: a line per pipeline stage on stderr (its layers and one rank's fwd + bwd time), after the one-line summary")
    .addOption(new Option('--text-vector-layers <mode>', "text: fold each vector layer's work into the GEMM-like layer it follows (default; the layer-wise format's lines), or separate: a line each").choices(['fold', 'separate']))
    .option('--cluster <name|file>', 'chakra: a cluster from clusters/ or a .json file; writes PREFIX.network.yml, PREFIX.system.json and PREFIX.remote_memory.json for ASTRA-sim beside the traces')
    .option('--chakra-dims <N>', `chakra, legacy -p strategies only: the converter's graph with involved_dim masks over N network dimensions instead of communicator groups (at most ${MAX_CHAKRA_DIMS})`, positiveInt('--chakra-dims'));
}

/** Options that only some formats read are errors elsewhere, never silently ignored. */
function checkFormatOptions(format: TranslateFormat, opts: TranslateOptions): void {
  const chakra = format === 'chakra' || format === 'chakra-json';
  if (opts.timeline !== undefined && !/\.(svg|json|csv)$/i.test(opts.timeline)) throw new InputError(`--timeline ${opts.timeline}: the file must end in .svg (the chart), .json or .csv (its boxes as data)`);
  if (opts.report !== undefined && !/\.(csv|json)$/i.test(opts.report)) throw new InputError(`--report ${opts.report}: the file must end in .csv or .json`);
  if ((format === 'chakra' || format === 'scalesim') && (opts.output === undefined || opts.output === '-')) {
    throw new InputError(`--format ${format} needs -o ${format === 'chakra' ? 'PREFIX (files PREFIX.<rank>.et)' : 'DIR'}`);
  }
  if (opts.timeUnit !== undefined && format !== 'text') throw new InputError(`--time-unit applies to the text format; Chakra traces hold microseconds (or exact ns with --chakra-timing roofline)`);
  // The count flags' bounds, as plan/limits.ts words them (checked after parsing, so that --no-limits lifts them).
  for (const [flag, value, max] of [['--iterations', opts.iterations, MAX_ITERATIONS], ['--chakra-dims', opts.chakraDims, MAX_CHAKRA_DIMS]] as const) {
    if (opts.limits !== false && value !== undefined && value > max) throw new InputError(`${flag} ${value}: more than the limit of ${max.toLocaleString('en-US')}; --no-limits lifts the bounds`);
  }
  if (!chakra && opts.iterations !== undefined) throw new InputError(`--iterations applies to --format chakra (the text format describes one iteration; ASTRA-sim 1.0 repeats it with its own --num-passes)`);
  if (opts.cluster !== undefined && format !== 'chakra') throw new InputError(`--cluster applies to --format chakra (its configs go beside the .et traces)`);
  if (!chakra && opts.chakraDims !== undefined) throw new InputError(`--chakra-dims applies to --format chakra`);
  // replay is the default, so only roofline can be told apart from an unset flag.
  if (!chakra && opts.chakraTiming === 'roofline') throw new InputError(`--chakra-timing roofline applies to --format chakra or chakra-json (the ${format} format has no num_ops to time)`);
  if (opts.stageTable === true && (opts.pp ?? 1) <= 1 && opts.ppStages === undefined) throw new InputError(`--stage-table needs pipeline stages (--pp P)`);
  if (format !== 'text' && opts.textVectorLayers !== undefined) throw new InputError(`--text-vector-layers applies to --format text (the Chakra format has a node per vector layer and pass)`);
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
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const { planRequestOf, analyseForPlan, pipelineBatchWarnings, batchScalingNote } = await import('./plan-request.js');
  const request = planRequestOf(opts);
  // A bad cluster file, or a world it cannot hold, fails before any costing (the configs are written with the traces).
  if (opts.cluster !== undefined) (await import('../cluster/network.js')).clusterNetwork((await import('../cluster/parse.js')).loadCluster(opts.cluster), request.world);
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
  let invariants: import('../plan/invariants.js').InvariantReport;
  try {
    plan = planOf(analysed, { ...request, batch: run.batch }, counted);
    invariants = (await import('../plan/invariants.js')).checkPlanInvariants(plan, analysed.inferred, loweringFrom(opts));
    if (opts.memoryLimit !== undefined) {
      const { planMemory, checkMemoryLimit } = await import('../memory/report.js');
      checkMemoryLimit(planMemory(plan, opts.optimizer ?? 'sgd'), opts.memoryLimit);
    }
    refetchLines = (await import('../cost/refetch.js')).refetchWarningsFor(analysed.layers, counted);
  } finally {
    progress.done();
  }
  // After the plan: an error (a pipeline too long for the model) comes alone.
  warn(pipelineBatchWarnings(request.world, run.batch));
  warn(refetchLines);
  warn(invariants.warnings);

  // Every output is produced before any is written, so a failure leaves no partial set; the
  // per-rank traces are encoded one at a time and written as they come (bounded memory).
  const { TRANSLATE_WRITERS } = await import('./translate-formats.js');
  const formatRun = await TRANSLATE_WRITERS[format]({ path, opts, request, analysed, plan, costModel, profile });
  const { output } = formatRun;
  // Files beside the output (timeline, report); a set's own files are output.files and output.stream.
  const files = formatRun.set === undefined ? [...output.files] : [];
  // One step if the network were free: the compute floor ASTRA-sim's result adds the network to.
  // Without pipeline stages and a timeline to draw, the figures come from the plan, not a step graph.
  const { predictFreeNetwork, predictionSummary } = await import('../predict/free-network.js');
  let prediction = formatRun.schedule === undefined && opts.timeline === undefined ? (await import('../predict/one-stage.js')).oneStageStepSummary(plan, costModel) : undefined;
  if (prediction === undefined) {
    const stepSchedule = formatRun.schedule ?? (await import('../pipeline.js')).scheduleOf(plan, costModel, { limits: opts.limits !== false });
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
  // Every file goes to a temp name first and is renamed once all are complete; a set (trace
  // files, SCALE-sim export) also under its lock, with its manifest written last.
  if (formatRun.set !== undefined) await (await import('./output-set.js')).writeOutputSet({ ...formatRun.set, files: output.files, stream: output.stream }, files);
  else if (output.stream !== undefined) throw new Error('internal error: a streamed output without an output set');
  else writeFilesAtomic(files);
  const { set } = formatRun;
  const what = `${output.what ?? opts.output ?? 'standard output'}${set === undefined ? '' : ` + ${join(set.dir, set.manifestName)}`}`;
  const { world, batch } = plan;
  const layout = `TP ${world.tp} x DP ${world.dp}${world.pp > 1 ? ` x PP ${world.pp}` : ''} = ${world.tp * world.dp * world.pp} ranks${plan.sequenceParallel ? ', SP' : ''}${plan.zero > 0 ? `, ZeRO-${plan.zero}` : ''}`;
  const batches = `global batch ${batch.globalBatch} = ${world.dp} replica${world.dp > 1 ? 's' : ''} x ${batch.microBatches} micro-batch${batch.microBatches > 1 ? 'es' : ''} x ${batch.microBatch} sample${batch.microBatch > 1 ? 's' : ''}${run.batchDefaulted ? " (the model's exported batch per replica; set --global-batch/--micro-batch)" : ''}${batchScalingNote(run.batchScaling)}`;
  const vectorLayers = analysed.layers.filter((l) => l.kind === 'vector').length;
  const { vectorShareOfPlan } = await import('../schedule/cost.js');
  const vector = vectorLayers > 0 ? `; vector ops ${(100 * vectorShareOfPlan(plan, costModel)).toFixed(1)}% of a rank's compute (${vectorLayers} layer${vectorLayers === 1 ? '' : 's'})` : '';
  writeStderr(`modtrans: ${analysed.layers.length} layers; ${request.legacy ?? 'plan'}: ${layout}; ${batches}; ${profile.name} (${costModel.name}, ${profile.clockMHz} MHz), ${formatRun.unit}${vector}; ${invariants.summary} -> ${what}\n`);
  if (world.pp > 1) {
    const { stageReports } = await import('../report/layer-report.js');
    const stages = stageReports(plan, profile.clockMHz);
    const recompute = plan.recompute === 'none' ? '' : `, ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers`;
    // One line whatever the stage count (16 stages named in full made a 2,000-character line); the table on request.
    const slowest = stages.reduce((a, s) => (s.ns > a.ns ? s : a), at(stages, 0));
    const fastest = stages.reduce((a, s) => (s.ns < a.ns ? s : a), at(stages, 0));
    const range = fastest.ns === slowest.ns ? `${formatDurationNs(slowest.ns)} on every stage` : `${formatDurationNs(fastest.ns)} - ${formatDurationNs(slowest.ns)} (slowest: stage ${slowest.stage})`;
    const more = opts.stageTable === true ? '' : '; --stage-table lists each stage';
    writeStderr(`modtrans: pipeline ${plan.pipeline.schedule}, ${world.pp} stages${plan.pipeline.virtualStages > 1 ? ` x ${plan.pipeline.virtualStages} chunks` : ''}${recompute}; fwd + bwd per micro-batch on one rank ${range}${more}\n`);
    if (opts.stageTable === true) {
      // A column whose header carries its unit.
      const us = (ns: number): string => (ns / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 });
      const rows = stages.map((s) => [String(s.stage), String(s.layers), us(s.ns), s.chunks.map((c) => `${c.first} .. ${c.last}`).join(' + ')]);
      const header = ['stage', 'layers', 'fwd + bwd us', 'layers (first .. last per chunk)'];
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => at(r, i).length)));
      const line = (cells: string[]): string => cells.map((c, i) => (i < 3 ? c.padStart(at(widths, i)) : c)).join('  ');
      writeStderr([header, ...rows].map((r) => `modtrans:   ${line(r)}\n`).join(''));
    }
  } else if (plan.recompute !== 'none') writeStderr(`modtrans: ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers\n`);
  for (const note of output.notes) writeStderr(`modtrans: ${note}\n`);
  const bubble = world.pp > 1 ? `; pipeline bubble ${(100 * prediction.bubbleFraction).toFixed(1)}% of ${world.pp} stages' time` : '';
  writeStderr(`modtrans: predicted step if the network were free: ${formatDurationNs(prediction.stepNs)}${bubble} (ASTRA-sim adds the network time)\n`);
  if (observed !== undefined) Object.assign(observed, { plan, profile, bubble: world.pp > 1 ? prediction.bubbleFraction : 0 });
  if (opts.timeline !== undefined) noteWritten('timeline', opts.timeline);
  if (opts.report !== undefined) noteWritten('per-layer report', opts.report);
  return SUCCESS;
}

