/** `modtrans translate`: MODEL -> ASTRA-sim text workload (and an optional per-layer report). */
import { InputError } from '../errors.js';
import { loadHardwareProfile } from '../cost/hardware.js';
import { analyseModel, createCostModel, workloadOf } from '../pipeline.js';
import { writeAstraText } from '../writers/astra-text.js';
import { buildReport, reportToCsv, reportToJson } from '../writers/layer-report.js';
import type { TimeUnit } from '../writers/time.js';
import { emit, writeFileAtomic } from './output.js';
import { bindingsFrom, parallelConfigFrom, resolveModelPath } from './options.js';

export interface TranslateOptions {
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
}

export async function runTranslate(modelArg: string, opts: TranslateOptions): Promise<void> {
  const path = resolveModelPath(modelArg);
  const config = parallelConfigFrom(opts);
  if (opts.report !== undefined && !/\.(csv|json)$/i.test(opts.report)) {
    throw new InputError(`--report ${opts.report}: the file must end in .csv or .json`);
  }
  const profile = await loadHardwareProfile(opts.hardware);
  const analysed = analyseModel(path, bindingsFrom(opts));
  if (analysed.layers.length === 0) throw new InputError(`${path}: the model has no GEMM-like layer (Conv, Gemm, MatMul, LSTM, ...)`);
  const costModel = await createCostModel(profile, 'ideal');
  const workload = workloadOf(analysed, costModel, config);
  const text = writeAstraText(workload, opts.timeUnit);
  let reportText: string | undefined;
  if (opts.report !== undefined) {
    const report = buildReport(path, analysed.layers, costModel);
    reportText = opts.report.toLowerCase().endsWith('.csv') ? await reportToCsv(report) : reportToJson(report);
  }
  // Every output is produced before any is written, so a failure leaves no partial set.
  emit(text, opts.output);
  if (reportText !== undefined) writeFileAtomic(opts.report!, reportText);
  if (opts.output !== undefined) {
    const { parallelism, npus } = config;
    process.stderr.write(
      `modtrans: ${workload.layers.length} layers, ${parallelism} on ${npus} NPUs, ${profile.name} (${costModel.name}, ${profile.clockMHz} MHz), compute in ${opts.timeUnit} -> ${opts.output}\n`,
    );
  }
}
