/**
 * Runs several modtrans command lines without a process each, each in its own working folder with
 * stdout/stderr captured. In a test (vitest's forks pool, vitest.config.ts) the commands run in the
 * test's own process, on the sources it already loaded: no process start, no second compile.
 * Where the working folder cannot be changed (a worker thread), the calls go to ONE child process
 * instead: `node --import tsx cli-batch.ts < [{ "args": [...], "cwd": "..." }]` prints
 * `[{ "status", "stdout", "stderr" }]`. Either way `status` is what `runCli` returned, the code
 * main.ts gives the process; tests of the process's own exit code spawn the built bin.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';

export interface CliCall {
  args: string[];
  cwd: string;
}

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

const HERE = fileURLToPath(import.meta.url);
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

type RunCli = (argv: string[]) => Promise<number>;

/** Runs every call in order (in this process where it can change folder); results in the same order. */
export async function runCliBatch(calls: readonly CliCall[]): Promise<CliResult[]> {
  if (!isMainThread) return runInChild(calls);
  const { runCli } = (await import('../../src/cli/main.js')) as { runCli: RunCli };
  return runInThisProcess(calls, runCli);
}

/** The built bin (npm run build; npm ci runs it). */
const BIN = fileURLToPath(new URL('../../dist/cli/main.cjs', import.meta.url));

/**
 * The first call as a process of the built bin (its exit code is the process's), the others in
 * this process (`runCliBatch`): for a test of several command lines that end on one path (one
 * error, one exit code), where a process each would test the same exit-code mapping (main.ts)
 * again and again at ~0.25 s of CPU a process.
 */
export async function runFirstAsProcess(calls: readonly CliCall[]): Promise<CliResult[]> {
  const [first, ...others] = calls;
  if (first === undefined) return [];
  const r = spawnSync(process.execPath, [BIN, ...first.args], { cwd: first.cwd, encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.error !== undefined) throw r.error;
  return [{ status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }, ...(await runCliBatch(others))];
}

function runInChild(calls: readonly CliCall[]): CliResult[] {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const r = spawnSync(process.execPath, ['--import', tsx, HERE], { input: JSON.stringify(calls), encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`cli-batch failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as CliResult[];
}

/** Captures stdout and stderr around each call and runs it in its folder; restores both, and the folder, after. */
async function runInThisProcess(calls: readonly CliCall[], runCli: RunCli): Promise<CliResult[]> {
  const realStdout = process.stdout.write;
  const realStderr = process.stderr.write;
  const cwdBefore = process.cwd();
  const results: CliResult[] = [];
  try {
    for (const call of calls) {
      let stdout = '';
      let stderr = '';
      process.stdout.write = ((chunk: string | Uint8Array) => {
        stdout += chunk.toString();
        return true;
      }) as typeof process.stdout.write;
      process.stderr.write = ((chunk: string | Uint8Array) => {
        stderr += chunk.toString();
        return true;
      }) as typeof process.stderr.write;
      process.chdir(call.cwd);
      const status = await runCli(['node', 'modtrans', ...call.args]);
      results.push({ status, stdout, stderr });
    }
  } finally {
    process.stdout.write = realStdout;
    process.stderr.write = realStderr;
    process.chdir(cwdBefore);
  }
  return results;
}

async function main(): Promise<void> {
  const calls = JSON.parse(readFileSync(0, 'utf8')) as CliCall[];
  const { runCli } = (await import(pathToFileURL(MAIN).href)) as { runCli: RunCli };
  const realStdout = process.stdout.write.bind(process.stdout);
  const results = await runInThisProcess(calls, runCli);
  realStdout(JSON.stringify(results));
}

if (process.argv[1] !== undefined && fileURLToPath(pathToFileURL(process.argv[1])) === HERE) await main();
