/** `modtrans inspect`: the per-layer table of a model on one hardware profile. */
import { analyseModel, createCostModel, describeUnlowered } from '../pipeline.js';
import { buildReport, reportToCsv, reportToJson, reportToTable } from '../writers/layer-report.js';
import { emit, noteWritten, warn } from './output.js';
import { bindingsFrom, type CostModelChoice, loadProfile, withCostOptions } from './options.js';

export async function runInspect(modelArg: string, opts: CostModelChoice & { format: string; output?: string; hardware: string; dim?: string[]; batch?: number }): Promise<void> {
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const profile = withCostOptions(await loadProfile(opts.hardware), opts);
  const analysed = analyseModel(path, bindingsFrom(opts));
  warn(describeUnlowered(analysed));
  const costModel = await createCostModel(profile, opts.costModel, { optimizer: opts.optimizer });
  const report = buildReport(path, analysed.layers, costModel);
    warn((await import('../cost/refetch.js')).refetchWarningsFor(analysed.layers, costModel));
  const text = opts.format === 'json' ? reportToJson(report) : opts.format === 'csv' ? await reportToCsv(report) : reportToTable(report);
  if (emit(text, opts.output)) noteWritten(`${report.layers.length} layers on ${profile.name}, ${opts.format} report`, opts.output!);
}
