/**
 * The formats of `translate`, by name: each builds its finished input in the stage that owns it
 * (the layer table and the step schedule in schedule/, SCALE-sim rows in report/) and hands it to
 * its writer (writers/output.ts `Writer`). Stages and writers are imported when a format runs.
 */
import { basename, dirname } from 'node:path';
import type { HardwareProfile } from '../cost/types.js';
import type { CostedPlan } from '../costed/costed-plan.js';
import { withThousands } from '../digits.js';
import { InputError } from '../errors.js';
import type { ParallelPlan } from '../plan/types.js';
import type { AnalysedModel } from '../pipeline.js';
import type { StepSchedule } from '../schedule/types.js';
import type { OutputFile, WriterOutput } from '../writers/output.js';
import { writeStderr } from './stdio.js';
import type { OutputSet } from './output-set.js';
import type { PlanRequest } from './plan-request.js';
import { FORMAT_SUPPORT, type TranslateFormat } from './format-support.js';
import type { TranslateOptions } from './translate.js';

/** What every format may read: the command's options and the pipeline's results up to the costed plan. */
export interface FormatInput {
  path: string;
  opts: TranslateOptions;
  request: PlanRequest;
  analysed: AnalysedModel;
  costed: CostedPlan;
  profile: HardwareProfile;
}

export interface FormatRun {
  output: WriterOutput;
  /** The one-iteration step schedule, when the format built it (the prediction reuses it). */
  schedule?: StepSchedule;
  /** What the output's numbers are, for the summary line. */
  unit: string;
  /** A multi-file output: its files (output.files, output.stream) are written whole or not at all. */
  set?: Omit<OutputSet, 'files' | 'stream'>;
}

/** What a manifest records of the run that wrote the set. */
function planSummary(x: FormatInput): Record<string, unknown> {
  const { world, batch } = x.costed.plan;
  return {
    model: basename(x.path),
    hardware: x.profile.name,
    clock_mhz: x.profile.clockMHz,
    cost_model: x.costed.costModel,
    ...(x.request.legacy === undefined ? {} : { strategy: x.request.legacy }),
    tp: world.tp,
    ...(x.costed.plan.contextParallel === undefined ? {} : { cp: x.costed.plan.contextParallel.size, cp_comm_type: x.costed.plan.contextParallel.commType }),
    dp: world.dp,
    pp: world.pp,
    global_batch: batch.globalBatch,
    micro_batch: batch.microBatch,
    micro_batches: batch.microBatches,
  };
}

/** The trace prefix of -o (a folder means FOLDER/MODEL) and the set its files make up. */
async function traceSet(x: FormatInput, ranks: number, extra: Record<string, unknown>): Promise<{ prefix: string; set: Omit<OutputSet, 'files' | 'stream'> }> {
  const { tracePrefixOf, traceSetOwns } = await import('./output-set.js');
  const prefix = tracePrefixOf(outputOf(x), x.path);
  const base = basename(prefix);
  if (base === '' || base.startsWith('.')) throw new InputError(`-o ${outputOf(x)}: names no trace prefix (files PREFIX.<rank>.et); give one, e.g. -o traces/${basename(x.path, '.onnx')}`);
  return { prefix, set: { dir: dirname(prefix), manifestName: `${base}.manifest.json`, kind: 'chakra-trace-set', ranks, plan: { ...planSummary(x), ...extra }, owns: traceSetOwns(base) } };
}

/** -o of a format that needs one (checked with the options, before any work). */
function outputOf(x: FormatInput): string {
  const output = x.opts.output;
  if (output === undefined || output === '-') throw new Error(`internal error: --format ${x.opts.format} without -o`);
  return output;
}

/** A Chakra trace set (one .et file per rank) or its JSON dump (one file). */
/**
 * Nodes the JSON dump may hold over all ranks: it is one string (V8 caps a string at 2^29
 * characters, ~400 bytes a node), built in memory, so --no-limits cannot lift this one; traces
 * of more are --format chakra's job.
 */
const MAX_JSON_DUMP_NODES = 1_000_000;

function checkJsonDumpSize(schedule: StepSchedule, ranks: number, stageOf: (rank: number, world: StepSchedule['world']) => number): void {
  let nodes = 0;
  for (let r = 0; r < ranks; r++) nodes += schedule.graphs[stageOf(r, schedule.world)]?.nodes.length ?? 0;
  if (nodes > MAX_JSON_DUMP_NODES) {
    throw new InputError(`--format chakra-json: the dump would hold ${withThousands(nodes)} nodes over ${withThousands(ranks)} ranks, more than the limit of ${withThousands(MAX_JSON_DUMP_NODES)} (one JSON document in memory); write --format chakra -o PREFIX for traces this large`);
  }
}

async function chakra(x: FormatInput, perRankFiles: boolean): Promise<FormatRun> {
  const container = perRankFiles ? 'et' : 'json';
  const timing = x.opts.chakraTiming ?? 'replay';
  // Training iterations (--iterations); the manifests and the JSON dump keep their key `passes`.
  const passes = x.opts.iterations ?? 1;
  const unit = 'compute in us';
  const meta = { model: x.path, hardware: x.profile.name, clock_mhz: x.profile.clockMHz, timing, passes };
  if (x.opts.chakraDims !== undefined) {
    // The converter-shaped graph with involved_dim masks, kept for comparison with Chakra's converter.
    if (x.request.legacy === undefined || x.costed.plan.batch.microBatches > 1) throw new InputError(`--chakra-dims writes the legacy converter graph: it needs -p STRATEGY and one micro-batch per step`);
    const { layerTable } = await import('../schedule/layer-table.js');
    const { converterGraph } = await import('../schedule/converter-graph.js');
    const graph = converterGraph(layerTable(x.costed, x.request.legacy), { passes, micro: false });
    const writer = await import('../writers/chakra.js');
    const options = { timing, networkDims: x.opts.chakraDims };
    if (container === 'json') return { output: await writer.converterJsonWriter(graph, { ...options, output: x.opts.output, meta }), unit };
    const { prefix, set } = await traceSet(x, graph.npus, { timing, passes, chakra_dims: x.opts.chakraDims });
    return { output: await writer.converterEtWriter(graph, { ...options, prefix }), unit, set };
  }
  const { buildStepSchedule } = await import('../schedule/build.js');
  const writer = await import('../writers/chakra-schedule.js');
  const schedule = buildStepSchedule(x.costed, { iterations: passes, limits: x.opts.limits !== false });
  const kept = passes === 1 ? { schedule } : {};
  const { worldSize, stageOfRank } = await import('../plan/world.js');
  if (container === 'json') {
    checkJsonDumpSize(schedule, worldSize(schedule.world), stageOfRank);
    return { output: await writer.scheduleJsonWriter(schedule, { timing, output: x.opts.output, meta }), unit, ...kept };
  }
  const { prefix, set } = await traceSet(x, worldSize(schedule.world), { timing, passes, schedule: x.costed.plan.pipeline.schedule, ...(x.opts.cluster === undefined ? {} : { cluster: x.opts.cluster }) });
  const output = await writer.scheduleEtWriter(schedule, { timing, prefix });
  if (x.opts.cluster !== undefined) output.files.push(...(await clusterConfigFiles(x.opts.cluster, x.costed.plan, prefix)));
  return { output, unit, set, ...kept };
}

/** --cluster: the cluster's ASTRA-sim network for the plan's world (cluster/network.ts), its warnings on stderr, and the three config files. */
async function clusterConfigFiles(clusterArg: string, plan: ParallelPlan, prefix: string): Promise<OutputFile[]> {
  const { loadCluster } = await import('../cluster/parse.js');
  const { clusterNetwork } = await import('../cluster/network.js');
  const network = clusterNetwork(loadCluster(clusterArg), plan.world);
  for (const line of network.warnings) writeStderr(`modtrans: ${line}\n`);
  return (await import('../writers/astra-network.js')).networkConfigFiles(network, prefix);
}

export const TRANSLATE_WRITERS: Record<TranslateFormat, (x: FormatInput) => Promise<FormatRun>> = {
  async text(x) {
    const { layerTable } = await import('../schedule/layer-table.js');
    const { textWriter } = await import('../writers/astra-text.js');
    const timeUnit = x.opts.timeUnit ?? 'ns';
    const vectorLayers = x.opts.textVectorLayers ?? 'fold';
    const table = layerTable(x.costed, x.request.legacy, { work: false, vectorLayers });
    const output = await textWriter(table, { output: x.opts.output, timeUnit });
    const m = x.costed.plan.batch.microBatches;
    if (m > 1) output.notes.push(`text format: each compute column holds all ${m} micro-batches of the step; --format chakra keeps them apart`);
    const folded = x.costed.plan.layers.length - table.layers.length;
    const vectors = Math.min(folded, x.costed.plan.layers.reduce((n, l) => (l.layer.kind === 'vector' ? n + 1 : n), 0));
    const products = folded - vectors;
    const what = [vectors > 0 ? `${vectors} vector layer${vectors === 1 ? '' : 's'}` : '', products > 0 ? `${products} attention product${products === 1 ? '' : 's'} that communicate nothing` : ''].filter((w) => w !== '').join(' and ');
    if (folded > 0) output.notes.push(`text format: ${what} folded into the GEMM-like layer${folded === 1 ? '' : 's'} before them (${table.layers.length} lines; --text-vector-layers separate writes a line each)`);
    const updateCycles = table.layers.reduce((a, l) => a + l.updateCycles, 0);
    if (updateCycles > 0) {
      const { cyclesToWholeNs } = await import('../units.js');
      const updateNs = cyclesToWholeNs(updateCycles, table.clockMHz);
      output.notes.push(`text format: Chakra's text converter ignores column 12, the update time (${withThousands(updateNs)} ns of optimizer step here; ASTRA-sim 1.0 reads it); --format chakra keeps the optimizer step`);
    }
    // Chakra's text converter stores the compute columns as microseconds: ns columns run 1000x slow there (measured in ASTRA-sim 2.x).
    if (timeUnit === 'ns') output.notes.push(`text format: compute in ns, as ASTRA-sim 1.0 reads it; Chakra's text converter reads the columns as µs (every layer 1000x slower): give it --time-unit us`);
    return { output, unit: `compute in ${timeUnit}` };
  },
  chakra: (x) => chakra(x, FORMAT_SUPPORT.chakra.perRankFiles),
  'chakra-json': (x) => chakra(x, FORMAT_SUPPORT['chakra-json'].perRankFiles),
  async scalesim(x) {
    const { scalesimConfigOf, scalesimTopologies } = await import('../report/scalesim.js');
    const { scalesimWriter } = await import('../writers/scalesim-topology.js');
    const dir = outputOf(x);
    const topologies = scalesimTopologies(x.analysed.layers, x.analysed.inferred, x.costed.plan.layers.map((l) => l.passes));
    const stem = basename(x.path, '.onnx');
    const output = await scalesimWriter({ stem, topologies, config: scalesimConfigOf(x.profile) }, { dir });
    const names = new Set(output.files.map((f) => basename(f.path)));
    const set = { dir, manifestName: `${stem}.manifest.json`, kind: 'scalesim-topologies' as const, plan: planSummary(x), owns: (name: string) => names.has(name) };
    return { output, unit: 'per-rank GEMMs', set };
  },
};
