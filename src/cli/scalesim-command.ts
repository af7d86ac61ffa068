/**
 * `modtrans scalesim --topology FILE.csv --config FILE.cfg [--gemm] [-o DIR]`: a drop-in for
 * `python3 scalesim/scale.py -c CFG -t CSV [-i gemm] -p DIR`. Writes SCALE-sim v2's
 * COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and DETAILED_ACCESS_REPORT.csv into DIR/<run_name>/,
 * after all layers have been simulated, as one set (cli/output-set.ts: whole or absent, with
 * DIR/<run_name>/manifest.json written last).
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../errors.js';
import type { HardwareProfile } from '../cost/types.js';
import { writeStderr, writeStdout } from './stdio.js';
import { type ExitCode, SUCCESS, returningExitCode } from './exit-code.js';

export interface ScalesimOptions {
  topology: string;
  config: string;
  gemm?: boolean;
  output: string;
}

export function registerScalesimCommand(program: Command): void {
  program
    .command('scalesim')
    .description("reproduce a SCALE-sim v2 run: its three reports for a topology CSV and a .cfg, in milliseconds")
    .requiredOption('-t, --topology <file>', 'SCALE-sim topology CSV (conv rows, or M,N,K rows with --gemm)')
    .requiredOption('-c, --config <file>', "SCALE-sim .cfg (or a modtrans hardware profile name or .json)")
    .option('--gemm', "topology rows are 'name, M, N, K,' (SCALE-sim's -i gemm)", false)
    .option('-o, --output <dir>', 'reports go to DIR/<run_name>/, as with SCALE-sim -p', '.')
    .action(returningExitCode(async (opts: ScalesimOptions) => runScalesim(opts)));
}

async function loadRun(config: string): Promise<{ profile: HardwareProfile; runName: string }> {
  if (config.endsWith('.cfg')) {
    const { readScaleSimConfig, scaleSimProfile } = await import('../cost/scalesim-config.js');
    const cfg = readScaleSimConfig(config);
    return { profile: scaleSimProfile(cfg, config), runName: cfg.runName };
  }
  const { loadProfile } = await import('./options.js');
  const profile = await loadProfile(config);
  return { profile, runName: profile.name };
}

export async function runScalesim(opts: ScalesimOptions): Promise<ExitCode> {
  const { readTopology } = await import('../scalesim/topology.js');
  const { simulateScaleSim } = await import('../scalesim/run.js');
  const { scaleSimReports } = await import('../scalesim/reports.js');
  const { formatDurationNs } = await import('../writers/time.js');
  const { profile, runName } = await loadRun(opts.config);
  if (runName === '' || /[/\\]|^\.\.?$/.test(runName)) {
    throw new InputError(`${opts.config}: run_name '${runName}' cannot name an output folder`);
  }
  const layers = readTopology(opts.topology, opts.gemm === true ? 'gemm' : 'conv');
  const { stepProgress } = await import('./cost-progress.js');
  const progress = stepProgress('simulating', layers.length);
  const started = Date.now(); // not performance.now(): that loads perf_hooks (~3 ms of a start)
  let results: ReturnType<typeof simulateScaleSim>;
  try {
    results = simulateScaleSim(layers, profile, () => progress.tick());
  } finally {
    progress.done();
  }
  const elapsedMs = Date.now() - started;
  const reports = scaleSimReports(results);
  const dir = join(opts.output, runName);
  const files = Object.entries(reports).map(([file, text]) => ({ path: join(dir, file), bytes: text }));
  const names = new Set(Object.keys(reports));
  const plan = { topology: opts.topology, config: opts.config, gemm: opts.gemm === true, layers: results.length, run_name: runName };
  const { writeOutputSet } = await import('./output-set.js');
  await writeOutputSet({ dir, manifestName: 'manifest.json', kind: 'scalesim-reports', plan, owns: (name) => names.has(name), files });
  for (const [id, r] of results.entries()) {
    writeStdout(
      `layer ${id} ${r.name}: ${r.totalCycles} cycles (${r.stallCycles} stall), overall util ${r.overallUtilPct.toFixed(2)}%, ` +
        `mapping efficiency ${r.mappingEfficiencyPct.toFixed(2)}%\n`,
    );
  }
  writeStderr(
    `modtrans: ${results.length} layer(s) on ${profile.name} (${profile.arrayRows}x${profile.arrayCols} ${profile.dataflow}, ` +
      `${profile.bandwidthMode.toUpperCase()}) in ${elapsedMs < 1 ? 'under 1 ms' : formatDurationNs(elapsedMs * 1e6, 3)} -> ${Object.keys(reports).map((f) => join(dir, f)).join(', ')}\n`,
  );
  return SUCCESS;
}
