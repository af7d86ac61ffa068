/**
 * The test suite's own figures, as whole child processes from the repository root:
 * - `tests`: `npm test` (typecheck + biome lint + vitest), its wall and CPU time (user + system of
 *   the process and every child it waited for, from GNU time) against issue 21's goal of under
 *   60 s of CPU on the 2-core machine;
 * - `fuzz`: the three fuzzers (ONNX models, trace sets, hardware profiles) at 5,000 cases each
 *   (`MODTRANS_FUZZ_RUNS`; `npm test` runs at most 500), with the seeds they printed, so a failure
 *   replays with `MODTRANS_FUZZ_SEED=<seed> npx vitest run <file>`.
 * Both read the sources (vitest runs them), not dist/.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineInfo } from './goals.js';

export interface TestsBenchOptions {
  root: string;
  onProgress?: (done: number, total: number, label: string) => void;
}

interface ChildRun {
  status: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  /** User + system CPU of the process and its children (GNU time), or undefined without it. */
  cpuMs?: number;
}

const GNU_TIME = '/usr/bin/time';
/** Issue 21, item 5. */
const NPM_TEST_CPU_GOAL_MS = 60_000;
/** Cases per fuzzer in the bench (npm test: at most 500). */
export const BENCH_FUZZ_RUNS = 5000;
export const FUZZ_FILES = ['test/onnx/fuzz.test.ts', 'test/check/fuzz.test.ts', 'test/cost/profile-fuzz.test.ts'] as const;

function runChild(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): ChildRun {
  const timeFile = join(tmpdir(), `modtrans-bench-tests-time-${process.pid}`);
  const useTime = existsSync(GNU_TIME);
  const [cmd, argv] = useTime ? [GNU_TIME, ['-f', '%U %S', '-o', timeFile, command, ...args]] : [command, args];
  const start = performance.now();
  const r = spawnSync(cmd, argv, { cwd, env, encoding: 'utf8', maxBuffer: 256 << 20 });
  const wallMs = performance.now() - start;
  let cpuMs: number | undefined;
  if (useTime && existsSync(timeFile)) {
    const [user, system] = (readFileSync(timeFile, 'utf8').trim().split('\n').at(-1) ?? '').split(' ').map(Number);
    if (user !== undefined && system !== undefined && !Number.isNaN(user) && !Number.isNaN(system)) cpuMs = (user + system) * 1000;
    rmSync(timeFile, { force: true });
  }
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', wallMs, ...(cpuMs === undefined ? {} : { cpuMs }) };
}

const seconds = (ms: number | undefined): string => (ms === undefined ? '?' : `${(ms / 1000).toFixed(1)} s`);
const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
/** vitest's summary line, `Tests  959 passed (959)`, colours removed. */
const testsLine = (out: string): string => (/^\s*Tests\s+(.*)$/m.exec(out.replace(ANSI_COLOUR, ''))?.[1] ?? '?').trim();

/** The seeds the fuzzers printed (`fuzz seed N`, `trace fuzz seed N`, `profile fuzz seed N`), by fuzzer. */
export function printedSeeds(output: string): Record<string, number> {
  const seeds: Record<string, number> = {};
  for (const m of output.replace(ANSI_COLOUR, '').matchAll(/\b(?:(trace|profile) )?fuzz seed (\d+)/g)) seeds[m[1] ?? 'onnx'] ??= Number(m[2]);
  return seeds;
}

export interface TestsBenchResult {
  suite: 'tests';
  machine: ReturnType<typeof machineInfo>;
  wallMs: number;
  cpuMs?: number;
  tests: string;
  met: 'yes' | 'no' | '?';
  markdown: string;
}

/** `npm test` once, whole process. */
export function runTestsBench(options: TestsBenchOptions): TestsBenchResult {
  options.onProgress?.(0, 1, 'npm test');
  const r = runChild('npm', ['test'], options.root);
  options.onProgress?.(1, 1, 'npm test');
  if (r.status !== 0) throw new Error(`npm test failed (${r.status}): ${testsLine(r.stdout)}`);
  const machine = machineInfo();
  const met = r.cpuMs === undefined ? '?' : r.cpuMs < NPM_TEST_CPU_GOAL_MS ? 'yes' : 'no';
  const tests = testsLine(r.stdout);
  const markdown = [
    '| figure | measured | goal | met |',
    '|---|---:|---|---|',
    `| \`npm test\` (typecheck + lint + vitest, ${tests}), whole process | ${seconds(r.wallMs)} wall, ${seconds(r.cpuMs)} CPU | < 60 s CPU (issue 21) | ${met} |`,
    '',
    `- CPU is user + system of npm and every child it waited for (GNU time), on ${machine.nproc} core(s), ${machine.cpu}; 1-minute load average ${machine.loadAverage1m} at the end (load inflates the wall time much more than the CPU time).`,
    '- The typecheck runs in build mode (`tsc -b tsconfig.typecheck.json`, build info in node_modules/.cache): skipped when nothing changed since the last run (~1 s), ~3 s when something did, ~5 s in a fresh clone (TypeScript 7, the native compiler; TypeScript 5 took ~6 and ~17 s); vitest caches transformed modules on disk too (`experimental.fsModuleCache`). A first run after `npm ci` therefore spends ~8 s more CPU than this figure.',
    '',
  ].join('\n');
  return { suite: 'tests', machine, wallMs: Math.round(r.wallMs), ...(r.cpuMs === undefined ? {} : { cpuMs: Math.round(r.cpuMs) }), tests, met, markdown };
}

export interface FuzzBenchResult {
  suite: 'fuzz';
  runsPerFuzzer: number;
  seeds: Record<string, number>;
  wallMs: number;
  cpuMs?: number;
  tests: string;
  markdown: string;
}

/** The three fuzzers at 5,000 cases each, in one vitest run. */
export function runFuzzBench(options: TestsBenchOptions): FuzzBenchResult {
  options.onProgress?.(0, 1, `fuzzers x ${BENCH_FUZZ_RUNS}`);
  const vitest = join(options.root, 'node_modules', '.bin', 'vitest');
  // A case budget ten times npm test's takes minutes: no per-test timeout but the bench's own.
  const r = runChild(vitest, ['run', ...FUZZ_FILES, '--testTimeout', '1800000'], options.root, { ...process.env, MODTRANS_FUZZ_RUNS: String(BENCH_FUZZ_RUNS) });
  options.onProgress?.(1, 1, `fuzzers x ${BENCH_FUZZ_RUNS}`);
  const seeds = printedSeeds(r.stdout + r.stderr);
  const replay = Object.entries(seeds).map(([fuzzer, seed]) => `${fuzzer} ${seed}`).join(', ');
  if (r.status !== 0) throw new Error(`the fuzzers failed at ${BENCH_FUZZ_RUNS} cases (seeds: ${replay || 'none printed'}; replay: MODTRANS_FUZZ_SEED=<seed> MODTRANS_FUZZ_RUNS=${BENCH_FUZZ_RUNS} npx vitest run <file>): ${testsLine(r.stdout)}`);
  const tests = testsLine(r.stdout);
  const markdown = [
    '| fuzzers | cases each | seeds | measured | tests |',
    '|---|---:|---|---:|---|',
    `| ONNX models, trace sets, hardware profiles (${FUZZ_FILES.join(', ')}) | ${BENCH_FUZZ_RUNS} | ${replay} | ${seconds(r.wallMs)} wall, ${seconds(r.cpuMs)} CPU | ${tests} |`,
    '',
    `- Replay a seed: \`MODTRANS_FUZZ_SEED=<seed> MODTRANS_FUZZ_RUNS=${BENCH_FUZZ_RUNS} npx vitest run <file>\`. \`npm test\` runs the same fuzzers at 500 (ONNX), 200 (trace sets) and 400 (profiles) cases, on a new seed each run.`,
    '',
  ].join('\n');
  return { suite: 'fuzz', runsPerFuzzer: BENCH_FUZZ_RUNS, seeds, wallMs: Math.round(r.wallMs), ...(r.cpuMs === undefined ? {} : { cpuMs: Math.round(r.cpuMs) }), tests, markdown };
}
