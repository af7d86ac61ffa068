/**
 * `modtrans compare MODEL --hardware a,b,c [--format table|csv|json] [-o FILE] [--chart FILE.svg]`:
 * one model costed on several hardware profiles, side by side. Registration is cheap; the
 * pipeline is imported only when the command runs.
 */
import { basename } from 'node:path';
import { Option, type Command } from 'commander';
import { emitNoted, noteWritten, writeFileAtomic, warn } from './output.js';
import { at, InputError } from '../errors.js';
import { addCostModelOptions, addParallelOptions, addShapeOptions, loadProfile, loweringFrom, type CostModelChoice, withCostOptions } from './options.js';
import { addPlanOptions, type PlanCliOptions } from './plan-options.js';
import { type ExitCode, SUCCESS, returningExitCode } from './exit-code.js';

export interface CompareOptions extends CostModelChoice, PlanCliOptions {
  hardware: string;
  format: 'table' | 'csv' | 'json';
  output?: string;
  chart?: string;
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
  // The plan-option set translate, inspect and memory take: one rank's share of each layer under
  // that plan (default: one NPU, layers whole).
  addCostModelOptions(addPlanOptions(addParallelOptions(addShapeOptions(cmd))));
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
  const { describeUnlowered, createCostModel, costedPlanOf, planOf } = await import('../pipeline.js');
  const { compareProfiles } = await import('../compare/compare.js');
  const { analyseForPlan, planRequestOf, usesPlanFlags } = await import('./plan-request.js');
  const planOpts: CompareOptions = opts.parallelism === undefined && opts.npus === undefined && !usesPlanFlags(opts) ? { ...opts, parallelism: 'DATA', npus: 1 } : opts;
  const request = planRequestOf(planOpts);
  // Its totals add every layer's share on one rank: pipeline stages would put them on different ranks.
  if (request.world.pp > 1) throw new InputError(`--pp ${request.world.pp}: compare costs every layer's share on one rank and totals them; pipeline stages put the layers on different ranks (a layer's share is the same without --pp)`);
  const profiles = await Promise.all(profileList(opts.hardware).map(async (h) => withCostOptions(await loadProfile(h), opts)));
  const run = await analyseForPlan(path, planOpts, request.world.dp, loweringFrom(opts));
  const analysed = run.analysed;
  warn(describeUnlowered(analysed));
  if (analysed.layers.length === 0) throw new InputError(`${path}: the model has no GEMM-like layer (Conv, Gemm, MatMul, LSTM, ...)`);
  const models = await Promise.all(profiles.map((p) => createCostModel(p, opts.costModel, { optimizer: opts.optimizer })));
  const { refetchWarningsFor } = await import('../cost/refetch.js');
  for (const m of models) warn(refetchWarningsFor(analysed.layers, m));
  // One rank's share under the plan translate builds from the same flags, costed as translate costs it
  // (each profile's own plan: --pp-split balanced cuts on its costed time).
  const { world } = request;
  const { withCostProgress } = await import('./cost-progress.js');
  const progress = withCostProgress(models, 3 * analysed.layers.length * models.length);
  let comparison: ReturnType<typeof compareProfiles>;
  try {
    const costed = progress.models.map((m, i) => costedPlanOf(planOf(analysed, { ...request, batch: run.batch }, at(models, i)), m));
    comparison = compareProfiles(basename(path, '.onnx'), costed, { dataWays: world.dp * (world.cp ?? 1), modelWays: world.tp });
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
