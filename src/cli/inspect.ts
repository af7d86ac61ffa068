/** `modtrans inspect`: the per-layer table of a model on one hardware profile. */
import { loadHardwareProfile } from '../cost/hardware.js';
import { analyseModel, createCostModel, describeUnlowered } from '../pipeline.js';
import { buildReport, reportToCsv, reportToJson, reportToTable } from '../writers/layer-report.js';
import { withCostProgress } from './cost-progress.js';
import { emit, warn } from './output.js';
import { bindingsFrom, type CostModelChoice, withCostOptions } from './options.js';

export async function runInspect(modelArg: string, opts: CostModelChoice & { format: string; output?: string; hardware: string; dim?: string[]; batch?: number }): Promise<void> {
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const profile = withCostOptions(await loadHardwareProfile(opts.hardware), opts);
  const analysed = analyseModel(path, bindingsFrom(opts));
  warn(describeUnlowered(analysed));
  const progress = withCostProgress([await createCostModel(profile, opts.costModel, { optimizer: opts.optimizer })], 3 * analysed.layers.length);
  const report = buildReport(path, analysed.layers, progress.models[0]!);
  progress.done();
  const text = opts.format === 'json' ? reportToJson(report) : opts.format === 'csv' ? await reportToCsv(report) : reportToTable(report);
  emit(text, opts.output);
}
