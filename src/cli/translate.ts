/**
 * `modtrans translate`: MODEL -> parallel plan -> ASTRA-sim text workload, Chakra execution traces
 * (.et per rank + communicator groups, or their JSON dump) or SCALE-sim topologies, plus an
 * optional per-layer report. The pipeline and writers are imported only when the command runs,
 * so main.ts can import `addTranslateOutputOptions` at start-up cheaply.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Option, type Command } from 'commander';
import { InputError, at, fsErrorWords } from '../errors.js';
import type { TimeUnit } from '../writers/time.js';
import { emit, noteWritten, writeFileAtomic, warn } from './output.js';
import { loadProfile, loweringFrom, positiveInt, type CostModelChoice, withCostOptions } from './options.js';
import type { PlanCliOptions } from './plan-options.js';
import type { StepSchedule } from '../schedule/types.js';

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
    .option('--passes <N>', 'chakra: training iterations per trace file (default 1)', positiveInt('--passes'))
    .addOption(new Option('--chakra-timing <mode>', 'chakra: replay (duration_micros, whole us) or roofline (exact ns via num_ops)').choices(['replay', 'roofline']).default('replay'))
    .option('--timeline <FILE.svg>', 'one training step as a Gantt chart (a row per pipeline stage), predicted with communication free')
    .option('--memory-limit <GiB>', 'fail (exit 2, nothing written) when a rank needs more memory than this (see modtrans memory)', (v: string) => {
      const n = Number(v);
      if (!(n > 0) || !Number.isFinite(n)) throw new InputError(`--memory-limit ${v}: expected a positive number of GiB`);
      return n;
    })
    .option('--chakra-dims <N>', "chakra, legacy -p strategies only: the converter's graph with involved_dim masks over N network dimensions instead of communicator groups", positiveInt('--chakra-dims'));
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
  const gemms = analysed.layers.reduce((sum, l) => sum + l.passes.fwd.length + l.passes.ig.length + l.passes.wg.length, 0);
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
  const files = new Map<string, string | Uint8Array>();
  let traces: Iterable<{ path: string; bytes: Uint8Array }> | undefined;
  let stdout: string | undefined;
  const notes: string[] = [];
  let what = opts.output ?? 'standard output';
  let stepSchedule: StepSchedule | undefined;
  if (format === 'text') {
    const { layerTable } = await import('../schedule/layer-table.js');
    const { writeAstraText } = await import('../writers/astra-text.js');
    const text = writeAstraText(layerTable(plan, costModel, request.legacy), opts.timeUnit ?? 'ns');
    if (opts.output === undefined || opts.output === '-') stdout = text;
    else files.set(opts.output, text);
    if (plan.batch.microBatches > 1) notes.push(`text format: each compute column holds all ${plan.batch.microBatches} micro-batches of the step; --format chakra keeps them apart`);
  } else if (format === 'chakra' || format === 'chakra-json') {
    const timing = opts.chakraTiming ?? 'replay';
    const passes = opts.passes ?? 1;
    const prefix = format === 'chakra' ? opts.output!.replace(/\.et$/, '') : undefined;
    if (opts.chakraDims !== undefined) {
      // The converter-shaped graph with involved_dim masks, kept for comparison with Chakra's converter.
      if (request.legacy === undefined || plan.batch.microBatches > 1) throw new InputError(`--chakra-dims writes the legacy converter graph: it needs -p STRATEGY and one micro-batch per step`);
      const { layerTable } = await import('../schedule/layer-table.js');
      const chakra = await import('../writers/chakra.js');
      const legacyTraces = chakra.buildChakraTraces(layerTable(plan, costModel, request.legacy), { passes, timing, networkDims: opts.chakraDims });
      if (prefix !== undefined) for (const f of chakra.chakraFiles(legacyTraces, prefix)) files.set(f.path, f.bytes);
      else stdout = chakra.chakraToJson(legacyTraces, { model: path, hardware: profile.name, clock_mhz: profile.clockMHz, timing, passes });
      notes.push(chakra.roundingLine(legacyTraces.rounding, timing));
      what = prefix === undefined ? what : `${plan.world.tp * plan.world.dp} files ${prefix}.<rank>.et (involved_dim over ${opts.chakraDims} dims)`;
    } else {
      const { scheduleOf } = await import('../pipeline.js');
      const writer = await import('../writers/chakra-schedule.js');
      const { roundingLine } = await import('../writers/chakra.js');
      const schedule = scheduleOf(plan, costModel, { iterations: passes });
      if (passes === 1) stepSchedule = schedule;
      const groupsJson = writer.commGroupsJson(schedule);
      if (prefix !== undefined) {
        traces = writer.scheduleTraceFiles(schedule, prefix, { timing });
        files.set(`${prefix}.comm-groups.json`, groupsJson);
        const ranks = plan.world.tp * plan.world.dp * plan.world.pp;
        what = `${ranks} files ${prefix}.<0..${ranks - 1}>.et + ${prefix}.comm-groups.json (${schedule.groups.length} groups)`;
      } else {
        const { chakraToJson } = await import('../writers/chakra-json.js');
        const ranks = Array.from({ length: plan.world.tp * plan.world.dp * plan.world.pp }, (_, r) => writer.scheduleEtNodes(schedule, r, { timing }));
        stdout = chakraToJson({ ranks, rounding: writer.scheduleRounding(schedule) }, { model: path, hardware: profile.name, clock_mhz: profile.clockMHz, timing, passes, comm_groups: JSON.parse(groupsJson) });
      }
      notes.push(roundingLine(writer.scheduleRounding(schedule), timing));
    }
    if (format === 'chakra-json' && opts.output !== undefined && opts.output !== '-') {
      files.set(opts.output, stdout!);
      stdout = undefined;
    }
  } else {
    const { scalesimExport, scalesimTopologies } = await import('../writers/scalesim-topology.js');
    const topo = scalesimTopologies(analysed.layers, analysed.inferred, plan.layers.map((l) => l.passes));
    for (const [name, text] of scalesimExport(basename(path, '.onnx'), topo, profile)) files.set(join(opts.output!, name), text);
    try {
      mkdirSync(opts.output!, { recursive: true });
    } catch (e) {
      throw new InputError(`${opts.output}: cannot create the output folder (${fsErrorWords(e)})`);
    }
    what = `${files.size} files in ${opts.output}`;
  }
  // One step if the network were free: the compute floor ASTRA-sim's result adds the network to.
  const { predictFreeNetwork, predictionSummary } = await import('../predict/free-network.js');
  stepSchedule ??= (await import('../pipeline.js')).scheduleOf(plan, costModel);
  const prediction = predictFreeNetwork(stepSchedule);
  if (opts.timeline !== undefined) {
    const { timelineSvg, timelineTitles } = await import('../writers/timeline-svg.js');
    files.set(opts.timeline, timelineSvg({ ...timelineTitles(basename(path, '.onnx'), request.legacy, plan, prediction), schedule: stepSchedule, prediction }));
  }
  if (opts.report !== undefined) {
    const { buildReport, reportToCsv, reportToJson } = await import('../writers/layer-report.js');
    const report = { ...buildReport(path, analysed.layers, costModel, plan), prediction: predictionSummary(prediction) };
    files.set(opts.report, opts.report.toLowerCase().endsWith('.csv') ? await reportToCsv(report) : reportToJson(report));
  }
  if (stdout !== undefined) emit(stdout, undefined);
  writeAll(files, traces);
  const { world, batch } = plan;
  const layout = `TP ${world.tp} x DP ${world.dp}${world.pp > 1 ? ` x PP ${world.pp}` : ''} = ${world.tp * world.dp * world.pp} ranks${plan.sequenceParallel ? ', SP' : ''}${plan.zero > 0 ? `, ZeRO-${plan.zero}` : ''}`;
  const batches = `global batch ${batch.globalBatch} = ${world.dp} replica${world.dp > 1 ? 's' : ''} x ${batch.microBatches} micro-batch${batch.microBatches > 1 ? 'es' : ''} x ${batch.microBatch} sample${batch.microBatch > 1 ? 's' : ''}${run.batchDefaulted ? " (the model's exported batch per replica; set --global-batch/--micro-batch)" : ''}`;
  const unit = format === 'text' ? `compute in ${opts.timeUnit ?? 'ns'}` : format === 'scalesim' ? 'per-rank GEMMs' : 'compute in us';
  const vectorLayers = analysed.layers.filter((l) => l.kind === 'vector').length;
  const { vectorShareOfPlan } = await import('../schedule/cost.js');
  const vector = vectorLayers > 0 ? `; vector ops ${(100 * vectorShareOfPlan(plan, costModel)).toFixed(1)}% of a rank's compute (${vectorLayers} layer${vectorLayers === 1 ? '' : 's'})` : '';
  process.stderr.write(`modtrans: ${analysed.layers.length} layers; ${request.legacy ?? 'plan'}: ${layout}; ${batches}; ${profile.name} (${costModel.name}, ${profile.clockMHz} MHz), ${unit}${vector} -> ${what}\n`);
  if (world.pp > 1) {
    const { stageReports } = await import('../writers/layer-report.js');
    const stages = stageReports(plan, profile.clockMHz).map((s) => `stage ${s.stage} ${s.chunks.map((c) => `${c.first} .. ${c.last}`).join(' + ')} (${s.layers} layers, ${(s.ns / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 })} us)`);
    const recompute = plan.recompute === 'none' ? '' : `, ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers`;
    process.stderr.write(`modtrans: pipeline ${plan.pipeline.schedule}${plan.pipeline.virtualStages > 1 ? ` (${plan.pipeline.virtualStages} chunks per rank)` : ''}${recompute}, fwd + bwd per micro-batch: ${stages.join('; ')}\n`);
  } else if (plan.recompute !== 'none') process.stderr.write(`modtrans: ${plan.recompute} recomputation of ${plan.layers.filter((l) => l.recompute).length} layers\n`);
  for (const note of notes) process.stderr.write(`modtrans: ${note}\n`);
  const bubble = world.pp > 1 ? `; pipeline bubble ${(100 * prediction.bubbleFraction).toFixed(1)}% of ${world.pp} stages' time` : '';
  process.stderr.write(`modtrans: predicted step if the network were free: ${(prediction.stepNs / 1e6).toPrecision(4)} ms${bubble} (ASTRA-sim adds the network time)\n`);
  if (opts.timeline !== undefined) noteWritten('timeline', opts.timeline);
  if (opts.report !== undefined) noteWritten('per-layer report', opts.report);
}

/** Writes every file; if one fails, the ones already written are removed again. */
function writeAll(files: ReadonlyMap<string, string | Uint8Array>, traces: Iterable<{ path: string; bytes: Uint8Array }> | undefined): void {
  const written: string[] = [];
  try {
    for (const [file, content] of files) {
      writeFileAtomic(file, content);
      written.push(file);
    }
    for (const t of traces ?? []) {
      writeFileAtomic(t.path, t.bytes);
      written.push(t.path);
    }
  } catch (e) {
    for (const f of written) rmSync(f, { force: true });
    throw e;
  }
}
