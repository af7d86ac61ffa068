/**
 * `modtrans translate`: MODEL -> ASTRA-sim text workload, Chakra execution traces (.et, or their
 * JSON dump) or SCALE-sim topologies, plus an optional per-layer report.
 * The pipeline and writers are imported only when the command runs, so main.ts can import
 * `addTranslateOutputOptions` at start-up cheaply.
 */
import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Option, type Command } from 'commander';
import { InputError } from '../errors.js';
import type { TimeUnit } from '../writers/time.js';
import { emit, writeFileAtomic, warn } from './output.js';
import { bindingsFrom, loweringFrom, parallelConfigFrom, positiveInt, type CostModelChoice, withCostOptions } from './options.js';

export const TRANSLATE_FORMATS = ['text', 'chakra', 'chakra-json', 'scalesim'] as const;
export type TranslateFormat = (typeof TRANSLATE_FORMATS)[number];

export interface TranslateOptions extends CostModelChoice {
  output?: string;
  parallelism: string;
  npus: number;
  mpGroup?: number;
  dtype: string;
  params: string;
  hardware: string;
  timeUnit: TimeUnit;
  report?: string;
  dim?: string[];
  batch?: number;
  format?: TranslateFormat;
  passes?: number;
  chakraTiming?: 'replay' | 'roofline';
  chakraDims?: number;
}


/** The output-format options of `translate` (main.ts adds them to the command). */
export function addTranslateOutputOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--format <format>', 'text workload, Chakra .et files (-o PREFIX), their JSON dump, or SCALE-sim topologies (-o DIR)').choices([...TRANSLATE_FORMATS]).default('text'))
    .option('--passes <N>', 'chakra: training iterations per trace file', positiveInt('--passes'), 1)
    .addOption(new Option('--chakra-timing <mode>', 'chakra: replay (duration_micros, whole us) or roofline (exact ns via num_ops)').choices(['replay', 'roofline']).default('replay'))
    .option('--chakra-dims <N>', 'chakra: network dimensions for involved_dim of hybrid collectives', positiveInt('--chakra-dims'), 2);
}

export async function runTranslate(modelArg: string, opts: TranslateOptions): Promise<void> {
  const format = opts.format ?? 'text';
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const config = parallelConfigFrom(opts);
  if (opts.report !== undefined && !/\.(csv|json)$/i.test(opts.report)) {
    throw new InputError(`--report ${opts.report}: the file must end in .csv or .json`);
  }
  if ((format === 'chakra' || format === 'scalesim') && (opts.output === undefined || opts.output === '-')) {
    throw new InputError(`--format ${format} needs -o ${format === 'chakra' ? 'PREFIX (files PREFIX.<rank>.et)' : 'DIR'}`);
  }
  const { loadHardwareProfile } = await import('../cost/hardware.js');
  const { analyseModel, describeUnlowered, createCostModel, workloadOf, vectorComputeShare } = await import('../pipeline.js');
  const profile = withCostOptions(await loadHardwareProfile(opts.hardware), opts);
  const analysed = analyseModel(path, bindingsFrom(opts), {}, loweringFrom(opts));
  warn(describeUnlowered(analysed));
  if (analysed.layers.length === 0) throw new InputError(`${path}: the model has no GEMM-like layer (Conv, Gemm, MatMul, LSTM, ...)`);
  const costModel = await createCostModel(profile, opts.costModel, { optimizer: opts.optimizer });
  const workload = workloadOf(analysed, costModel, config);

  // Every output is produced before any is written, so a failure leaves no partial set.
  const files = new Map<string, string | Uint8Array>();
  let stdout: string | undefined;
  const notes: string[] = [];
  if (format === 'text') {
    const { writeAstraText } = await import('../writers/astra-text.js');
    const text = writeAstraText(workload, opts.timeUnit);
    if (opts.output === undefined || opts.output === '-') stdout = text;
    else files.set(opts.output, text);
  } else if (format === 'chakra' || format === 'chakra-json') {
    const chakra = await import('../writers/chakra.js');
    const chakraOpts = { passes: opts.passes ?? 1, timing: opts.chakraTiming ?? 'replay', networkDims: opts.chakraDims ?? 2 };
    const traces = chakra.buildChakraTraces(workload, chakraOpts);
    if (format === 'chakra') for (const f of chakra.chakraFiles(traces, opts.output!)) files.set(f.path, f.bytes);
    else {
      const json = chakra.chakraToJson(traces, { model: path, hardware: profile.name, clock_mhz: profile.clockMHz, parallelism: config.parallelism, npus: config.npus, timing: chakraOpts.timing, passes: chakraOpts.passes });
      if (opts.output === undefined || opts.output === '-') stdout = json;
      else files.set(opts.output, json);
    }
    notes.push(chakra.roundingLine(traces.rounding, chakraOpts.timing));
  } else {
    const { scalesimExport, scalesimTopologies } = await import('../writers/scalesim-topology.js');
    const topo = scalesimTopologies(analysed.layers, analysed.inferred, workload.split);
    for (const [name, text] of scalesimExport(basename(path, '.onnx'), topo, profile)) files.set(join(opts.output!, name), text);
    try {
      mkdirSync(opts.output!, { recursive: true });
    } catch (e) {
      throw new InputError(`${opts.output}: cannot create the output folder (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (opts.report !== undefined) {
    const { buildReport, reportToCsv, reportToJson } = await import('../writers/layer-report.js');
    const report = buildReport(path, analysed.layers, costModel);
    files.set(opts.report, opts.report.toLowerCase().endsWith('.csv') ? await reportToCsv(report) : reportToJson(report));
  }
  if (stdout !== undefined) emit(stdout, undefined);
  for (const [file, content] of files) writeFileAtomic(file, content);
  if (opts.output !== undefined && opts.output !== '-') {
    const { parallelism, npus } = config;
    const what = format === 'chakra' ? `${npus} files ${opts.output}.<0..${npus - 1}>.et` : format === 'scalesim' ? `${files.size - (opts.report ? 1 : 0)} files in ${opts.output}` : opts.output;
    const unit = format === 'text' ? `compute in ${opts.timeUnit}` : format === 'scalesim' ? 'per-NPU GEMMs' : 'compute in us';
    const vectorLayers = analysed.layers.filter((l) => l.kind === 'vector').length;
    const vector = vectorLayers > 0 ? `, vector ops ${(100 * vectorComputeShare(analysed, workload)).toFixed(1)}% of compute (${vectorLayers} layer${vectorLayers === 1 ? '' : 's'})` : '';
    process.stderr.write(
      `modtrans: ${workload.layers.length} layers, ${parallelism} on ${npus} NPUs, ${profile.name} (${costModel.name}, ${profile.clockMHz} MHz), ${unit}${vector} -> ${what}\n`,
    );
  }
  for (const note of notes) process.stderr.write(`modtrans: ${note}\n`);
}
