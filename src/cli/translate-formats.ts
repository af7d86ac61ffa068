/**
 * The formats of `translate`, by name: each builds its finished input in the stage that owns it
 * (the layer table and the step schedule in schedule/, SCALE-sim rows in report/) and hands it to
 * its writer (writers/output.ts `Writer`). Stages and writers are imported when a format runs.
 */
import { mkdirSync } from 'node:fs';
import { basename } from 'node:path';
import type { CostModel, HardwareProfile } from '../cost/types.js';
import { InputError, fsErrorWords } from '../errors.js';
import type { ParallelPlan } from '../plan/types.js';
import type { AnalysedModel } from '../pipeline.js';
import type { StepSchedule } from '../schedule/types.js';
import type { WriterOutput } from '../writers/output.js';
import type { PlanRequest } from './plan-request.js';
import type { TranslateFormat, TranslateOptions } from './translate.js';

/** What every format may read: the command's options and the pipeline's results up to the plan. */
export interface FormatInput {
  path: string;
  opts: TranslateOptions;
  request: PlanRequest;
  analysed: AnalysedModel;
  plan: ParallelPlan;
  costModel: CostModel;
  profile: HardwareProfile;
}

export interface FormatRun {
  output: WriterOutput;
  /** The one-iteration step schedule, when the format built it (the prediction reuses it). */
  schedule?: StepSchedule;
  /** What the output's numbers are, for the summary line. */
  unit: string;
}

/** -o of a format that needs one (checked with the options, before any work). */
function outputOf(x: FormatInput): string {
  const output = x.opts.output;
  if (output === undefined || output === '-') throw new Error(`internal error: --format ${x.opts.format} without -o`);
  return output;
}

async function chakra(x: FormatInput, container: 'et' | 'json'): Promise<FormatRun> {
  const timing = x.opts.chakraTiming ?? 'replay';
  const passes = x.opts.passes ?? 1;
  const unit = 'compute in us';
  const meta = { model: x.path, hardware: x.profile.name, clock_mhz: x.profile.clockMHz, timing, passes };
  if (x.opts.chakraDims !== undefined) {
    // The converter-shaped graph with involved_dim masks, kept for comparison with Chakra's converter.
    if (x.request.legacy === undefined || x.plan.batch.microBatches > 1) throw new InputError(`--chakra-dims writes the legacy converter graph: it needs -p STRATEGY and one micro-batch per step`);
    const { layerTable } = await import('../schedule/layer-table.js');
    const { converterGraph } = await import('../schedule/converter-graph.js');
    const graph = converterGraph(layerTable(x.plan, x.costModel, x.request.legacy), { passes, micro: false });
    const writer = await import('../writers/chakra.js');
    const options = { timing, networkDims: x.opts.chakraDims };
    const output = container === 'et' ? await writer.converterEtWriter(graph, { ...options, prefix: outputOf(x).replace(/\.et$/, '') }) : await writer.converterJsonWriter(graph, { ...options, output: x.opts.output, meta });
    return { output, unit };
  }
  const { scheduleOf } = await import('../pipeline.js');
  const writer = await import('../writers/chakra-schedule.js');
  const schedule = scheduleOf(x.plan, x.costModel, { iterations: passes });
  const output = container === 'et' ? await writer.scheduleEtWriter(schedule, { timing, prefix: outputOf(x).replace(/\.et$/, '') }) : await writer.scheduleJsonWriter(schedule, { timing, output: x.opts.output, meta });
  return { output, unit, ...(passes === 1 ? { schedule } : {}) };
}

export const TRANSLATE_WRITERS: Record<TranslateFormat, (x: FormatInput) => Promise<FormatRun>> = {
  async text(x) {
    const { layerTable } = await import('../schedule/layer-table.js');
    const { textWriter } = await import('../writers/astra-text.js');
    const timeUnit = x.opts.timeUnit ?? 'ns';
    const vectorLayers = x.opts.textVectorLayers ?? 'fold';
    const table = layerTable(x.plan, x.costModel, x.request.legacy, { work: false, vectorLayers });
    const output = await textWriter(table, { output: x.opts.output, timeUnit });
    const m = x.plan.batch.microBatches;
    if (m > 1) output.notes.push(`text format: each compute column holds all ${m} micro-batches of the step; --format chakra keeps them apart`);
    const folded = x.plan.layers.length - table.layers.length;
    if (folded > 0) output.notes.push(`text format: ${folded} vector layer${folded === 1 ? '' : 's'} folded into the GEMM-like layer${folded === 1 ? '' : 's'} before them (${table.layers.length} lines; --text-vector-layers separate writes a line each)`);
    const updateCycles = table.layers.reduce((a, l) => a + l.updateCycles, 0);
    if (updateCycles > 0) {
      const { cyclesToUnit } = await import('../writers/time.js');
      const updateNs = cyclesToUnit(updateCycles, table.clockMHz, 'ns');
      output.notes.push(`text format: Chakra's text converter ignores column 12, the update time (${updateNs.toLocaleString('en-US')} ns of optimizer step here; ASTRA-sim 1.0 reads it); --format chakra keeps the optimizer step`);
    }
    return { output, unit: `compute in ${timeUnit}` };
  },
  chakra: (x) => chakra(x, 'et'),
  'chakra-json': (x) => chakra(x, 'json'),
  async scalesim(x) {
    const { scalesimConfigOf, scalesimTopologies } = await import('../report/scalesim.js');
    const { scalesimWriter } = await import('../writers/scalesim-topology.js');
    const dir = outputOf(x);
    const topologies = scalesimTopologies(x.analysed.layers, x.analysed.inferred, x.plan.layers.map((l) => l.passes));
    const output = await scalesimWriter({ stem: basename(x.path, '.onnx'), topologies, config: scalesimConfigOf(x.profile) }, { dir });
    try {
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      throw new InputError(`${dir}: cannot create the output folder (${fsErrorWords(e)})`);
    }
    return { output, unit: 'per-rank GEMMs' };
  },
};
