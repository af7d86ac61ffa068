/**
 * `modtrans simulate MODEL [plan options] --cluster X`: translate into a run folder (Chakra traces
 * plus the cluster's ASTRA-sim configs), run ASTRA-sim 2.x's analytical backend on them, and report
 * the step from every rank's `finished` line (cluster/astra-log.ts, cluster/simulated-step.ts).
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { InputError } from '../errors.js';
import { SUCCESS, type ExitCode } from './exit-code.js';
import { returningExitCode } from './exit-code.js';
import { addHardwareOptions, addParallelOptions, addShapeOptions, positiveInt } from './options.js';
import { addPlanOptions } from './plan-options.js';
import { writeStderr, writeStdout } from './stdio.js';
import type { TranslateOptions } from './translate.js';

export interface SimulateOptions extends Omit<TranslateOptions, 'format'> {
  cluster: string;
  format?: 'table' | 'json';
  astraSim?: string;
  timeout?: number;
  runDir?: string;
}

const DEFAULT_TIMEOUT_S = 1800;
const FINISHED_LINE = /\] finished, \d+ cycles/;
export const HOW_TO_GET_ASTRA_SIM = 'build ASTRA-sim 2.x\'s analytical backend (docs/simulate.md says how) and give --astra-sim BIN or set ASTRA_SIM_BIN';

export function registerSimulateCommand(program: Command): void {
  const cmd = program
    .command('simulate')
    .description("translate MODEL for a cluster, run ASTRA-sim 2.x's analytical backend on it and report the step time, TFLOP/s per device, MFU and exposed communication")
    .argument('<model>', 'ONNX file or shipped model name')
    .requiredOption('--cluster <name|file>', 'the cluster: a name from clusters/ or a .json file')
    .option('--astra-sim <bin>', "ASTRA-sim 2.x's analytical binary (default: $ASTRA_SIM_BIN)")
    .addOption(new Option('--format <format>', 'report format').choices(['table', 'json']).default('table'))
    .option('--timeout <S>', `kill ASTRA-sim after S seconds (default ${DEFAULT_TIMEOUT_S})`, positiveInt('--timeout'))
    .option('--run-dir <dir>', 'folder for the traces, configs and ASTRA-sim log (default: a fresh temp folder)')
    .option('--iterations <N>', 'training iterations per trace file (default 1)', positiveInt('--iterations'))
    .addOption(new Option('--chakra-timing <mode>', 'replay (duration_micros, whole us) or roofline (exact ns via num_ops)').choices(['replay', 'roofline']).default('replay'));
  addPlanOptions(addParallelOptions(addHardwareOptions(addShapeOptions(cmd))));
  cmd.action(returningExitCode(async (model: string, opts) => (await import('./simulate-command.js')).runSimulate(model, opts as SimulateOptions)));
}

export async function runSimulate(modelArg: string, opts: SimulateOptions): Promise<ExitCode> {
  const { existsSync, mkdtempSync, mkdirSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { basename, join, resolve } = await import('node:path');
  const binary = opts.astraSim ?? process.env['ASTRA_SIM_BIN'];
  if (binary?.includes('/') && !existsSync(binary)) throw new InputError(`--astra-sim ${binary}: no such file; ${HOW_TO_GET_ASTRA_SIM}`);
  const runDir = opts.runDir === undefined ? mkdtempSync(join(tmpdir(), 'modtrans-sim-')) : resolve(opts.runDir);
  if (opts.runDir !== undefined) mkdirSync(runDir, { recursive: true });
  writeStderr(`modtrans: run folder ${runDir}\n`);
  const prefix = join(runDir, basename(modelArg).replace(/\.onnx$/i, '') || 'model');
  const { runTranslate } = await import('./translate.js');
  const observed: import('./translate.js').TranslateObserved = {};
  // translate prints the plan's summary and the free-network prediction (the answer without a binary).
  await runTranslate(modelArg, { ...opts, format: 'chakra', output: prefix }, observed);
  if (binary === undefined || binary === '') throw new InputError(`no ASTRA-sim binary: ${HOW_TO_GET_ASTRA_SIM} (the free-network prediction is above; traces and configs are in ${runDir})`);
  const { plan, profile, bubble } = observed;
  if (plan === undefined || profile === undefined) throw new Error('internal error: translate returned no plan');
  const { worldSize } = await import('../plan/world.js');
  const ranks = worldSize(plan.world);
  const args = [
    `--workload-configuration=${prefix}`,
    `--system-configuration=${prefix}.system.json`,
    `--network-configuration=${prefix}.network.yml`,
    `--remote-memory-configuration=${prefix}.remote_memory.json`,
    `--comm-group-configuration=${prefix}.comm-groups.json`,
  ];
  const logPath = `${prefix}.astra-sim.log`;
  const run = await runAstraSim(binary, args, runDir, logPath, ranks, (opts.timeout ?? DEFAULT_TIMEOUT_S) * 1000);
  const { parseAstraLog, rankList } = await import('../cluster/astra-log.js');
  const { readFileSync } = await import('node:fs');
  const log = parseAstraLog(readFileSync(logPath, 'utf8'), ranks);
  if (run.timedOut) throw new InputError(`ASTRA-sim did not finish within ${opts.timeout ?? DEFAULT_TIMEOUT_S} s and was killed: rank${log.missing.length === 1 ? '' : 's'} ${rankList(log.missing)} of ${ranks} never finished (log: ${logPath})`);
  if (log.missing.length > 0) throw new InputError(`ASTRA-sim exited (${run.status}) with rank${log.missing.length === 1 ? '' : 's'} ${rankList(log.missing)} of ${ranks} not finished (log: ${logPath})`);
  if (run.status !== 'status 0') {
    const why = run.status === 'status 134' && log.teardownAbort !== undefined ? ` (ASTRA-sim's teardown abort: ${log.teardownAbort})` : '';
    writeStderr(`modtrans: note: ASTRA-sim exited with ${run.status}${why} after every rank finished; the ranks' finished lines are the result\n`);
  }
  const { simulatedStep } = await import('../cluster/simulated-step.js');
  const step = simulatedStep(plan, profile, log.finished, bubble ?? 0);
  writeStdout(opts.format === 'json' ? `${JSON.stringify(step, null, 2)}\n` : stepTable(step, ranks));
  return SUCCESS;
}

function stepTable(step: import('../cluster/simulated-step.js').SimulatedStep, ranks: number): string {
  const n = (x: number, digits = 0): string => x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const rows: [string, string][] = [
    ['step (ns)', n(step.step_ns)],
    ['TFLOP/s per device', n(step.tflops_per_device, 2)],
    ['MFU', `${n(100 * step.mfu, 1)}%`],
    ['exposed communication (ns)', n(step.exposed_comm_ns)],
    ['pipeline bubble', `${n(100 * step.bubble, 1)}%`],
    ['ranks finished', `${step.ranks.length} of ${ranks}`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}\n`).join('');
}

interface AstraRun {
  /** 'status N' or 'signal S'. */
  status: string;
  timedOut: boolean;
}

/** Runs the binary with its output to `logPath`, a progress line on stderr (ranks finished so far), killed after `timeoutMs`. */
async function runAstraSim(binary: string, args: string[], cwd: string, logPath: string, ranks: number, timeoutMs: number): Promise<AstraRun> {
  const { spawn } = await import('node:child_process');
  const { openSync, closeSync, writeSync } = await import('node:fs');
  const log = openSync(logPath, 'w');
  const started = Date.now();
  let finished = 0;
  let tail = '';
  const tty = process.stderr.isTTY === true;
  const progress = (end = false): void => {
    const line = `modtrans: ASTRA-sim: ${finished} of ${ranks} ranks finished, ${Math.round((Date.now() - started) / 1000)} s`;
    if (tty) writeStderr(`\r${line}${end ? '\n' : ''}`);
    else if (end) writeStderr(`${line}\n`);
  };
  writeStderr(`modtrans: running ${binary} on ${ranks} ranks (log: ${logPath})\n`);
  return await new Promise<AstraRun>((resolvePromise, reject) => {
    // Its own process group, so that a timeout kills whatever it started too (a wrapper script's children hold the pipes open).
    const child = spawn(binary, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const onData = (chunk: Buffer): void => {
      writeSync(log, chunk);
      // Whole lines only: a line split across chunks is counted once, when complete.
      const lines = (tail + chunk.toString('utf8')).split('\n');
      tail = lines.pop() ?? '';
      finished += lines.filter((l) => FINISHED_LINE.test(l)).length;
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const ticker = setInterval(() => progress(), 1000);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.on('error', (e) => {
      clearInterval(ticker);
      clearTimeout(timer);
      closeSync(log);
      reject(new InputError(`--astra-sim ${binary}: cannot run it (${(e as NodeJS.ErrnoException).code ?? e.message}); ${HOW_TO_GET_ASTRA_SIM}`));
    });
    child.on('close', (code, signal) => {
      clearInterval(ticker);
      clearTimeout(timer);
      progress(true);
      closeSync(log);
      // A shell reports an abort as exit status 134 (128 + SIGABRT); node reports the signal.
      resolvePromise({ status: code === null ? (signal === 'SIGABRT' ? 'status 134' : `signal ${signal ?? '?'}`) : `status ${code}`, timedOut });
    });
  });
}
