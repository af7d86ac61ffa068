/**
 * `modtrans compare MODEL --hardware a,b,c [--format table|csv|json] [-o FILE] [--chart FILE.svg]`:
 * one model costed on several hardware profiles, side by side. Registration is cheap; the
 * pipeline is imported only when the command runs.
 */
import { basename } from 'node:path';
import { Option, type Command } from 'commander';
import { InputError } from '../errors.js';
import { emitNoted, noteWritten, writeFileAtomic, warn } from './output.js';
import { PARALLELISMS } from '../plan/legacy.js';
import { addCostModelOptions, addShapeOptions, bindingsFrom, loadProfile, loweringFrom, positiveInt, type CostModelChoice, withCostOptions } from './options.js';
import { type ExitCode, SUCCESS, returningExitCode } from './exit-code.js';

export interface CompareOptions extends CostModelChoice {
  parallelism?: string;
  npus?: number;
  mpGroup?: number;
  hardware: string;
  format: 'table' | 'csv' | 'json';
  output?: string;
  chart?: string;
  dim?: string[];
  batch?: number;
}

export function registerCompareCommand(program: Command): Command {
  const cmd = program
    .command('compare')
    .description('cost MODEL on several hardware profiles side by side: per-layer and total cycles, time, utilisation, stalls')
    .argument('<model>', 'ONNX file or shipped model name')
    .requiredOption('--hardware <list>', 'comma-separated profiles: names from hardware-profiles/, .json profiles or SCALE-sim .cfg files')
    .addOption(new Option('--format <format>', 'output format').choices(['table', 'csv', 'json']).default('table'))
    .option('-o, --output <file>', 'output file (default: standard output)')
    .option('--chart <file.svg>', 'also draw the comparison as an SVG figure');
  cmd
    .addOption(new Option('-p, --parallelism <strategy>', 'cost one NPU\'s share of each layer under this split').choices([...PARALLELISMS]).default('DATA'))
    .option('--npus <P>', 'number of NPUs (1: whole layers on one NPU)', positiveInt('--npus'), 1)
    .option('--mp-group <G>', 'model-parallel group size (hybrid strategies)', positiveInt('--mp-group'));
  addCostModelOptions(addShapeOptions(cmd));
  cmd.action(returningExitCode(async (model: string, opts: CompareOptions) => runCompare(model, opts)));
  return cmd;
}

export function profileList(text: string): string[] {
  const names = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) throw new InputError('--hardware: give at least one profile (e.g. --hardware google,eyeriss,scale)');
  return names;
}

export async function runCompare(modelArg: string, opts: CompareOptions): Promise<ExitCode> {
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  if (opts.chart !== undefined && !opts.chart.toLowerCase().endsWith('.svg')) throw new InputError(`--chart ${opts.chart}: the file must end in .svg`);
  const { analyseModel, describeUnlowered, createCostModel } = await import('../pipeline.js');
  const { compareProfiles } = await import('../compare/compare.js');
  const profiles = await Promise.all(profileList(opts.hardware).map(async (h) => withCostOptions(await loadProfile(h), opts)));
  const analysed = analyseModel(path, bindingsFrom(opts), {}, loweringFrom(opts));
  warn(describeUnlowered(analysed));
  if (analysed.layers.length === 0) throw new InputError(`${path}: the model has no GEMM-like layer (Conv, Gemm, MatMul, LSTM, ...)`);
  const models = await Promise.all(profiles.map((p) => createCostModel(p, opts.costModel, { optimizer: opts.optimizer })));
  const { refetchWarningsFor } = await import('../cost/refetch.js');
  for (const m of models) warn(refetchWarningsFor(analysed.layers, m));
  // One NPU's share under the legacy strategy's plan: the request translate builds from -p/--npus/--mp-group, costed as translate costs it.
  const { costedPlanOf, planOf, leadingDim } = await import('../pipeline.js');
  const { planRequestOf } = await import('./plan-request.js');
  const request = planRequestOf({ parallelism: opts.parallelism ?? 'DATA', npus: opts.npus ?? 1, mpGroup: opts.mpGroup, dtype: 'fp32', params: 'all' });
  const { world } = request;
  const batch = leadingDim(analysed);
  const plan = planOf(analysed, { ...request, batch: { globalBatch: batch * world.dp, microBatch: batch, microBatches: 1 } });
  const { withCostProgress } = await import('./cost-progress.js');
  const progress = withCostProgress(models, 3 * analysed.layers.length * models.length);
  let comparison: ReturnType<typeof compareProfiles>;
  try {
    comparison = compareProfiles(basename(path, '.onnx'), progress.models.map((m) => costedPlanOf(plan, m)), { dataWays: world.dp, modelWays: world.tp });
  } finally {
    progress.done(); // a drawn bar holds a timer: an error must still end it
  }
  const format = await import('../compare/format.js');
  const text = opts.format === 'json' ? format.comparisonToJson(comparison) : opts.format === 'csv' ? await format.comparisonToCsv(comparison) : format.comparisonToTable(comparison);
  let chart: { file: string; svg: string } | undefined;
  if (opts.chart !== undefined) {
    const { comparisonChart } = await import('../compare/chart.js');
    chart = { file: opts.chart, svg: comparisonChart(comparison) };
  }
  if (chart !== undefined) writeFileAtomic(chart.file, chart.svg);
  emitNoted(text, opts.output, `comparison on ${profiles.length} profiles, ${opts.format}`);
  if (chart !== undefined) noteWritten('comparison chart (SVG)', chart.file);
  return SUCCESS;
}
