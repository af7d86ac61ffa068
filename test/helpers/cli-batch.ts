/**
 * Runs several modtrans command lines in ONE process (tsx starts once), each in its own working
 * folder with stdout/stderr captured: `node --import tsx cli-batch.ts < [{ "args": [...], "cwd": "..." }]`
 * prints `[{ "status", "stdout", "stderr" }]`. Used by the CLI tests to stay quick.
 * `runCliBatch` is the test-side wrapper.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

/** Spawns this file once to run every call; results in the same order. */
export function runCliBatch(calls: readonly CliCall[]): CliResult[] {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const r = spawnSync(process.execPath, ['--import', tsx, HERE], { input: JSON.stringify(calls), encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`cli-batch failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as CliResult[];
}

async function main(): Promise<void> {
  const calls = JSON.parse(readFileSync(0, 'utf8')) as CliCall[];
  const { runCli } = (await import(pathToFileURL(MAIN).href)) as { runCli: (argv: string[]) => Promise<number> };
  const realStdout = process.stdout.write.bind(process.stdout);
  const results: CliResult[] = [];
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
  process.stdout.write = realStdout;
  realStdout(JSON.stringify(results));
}

if (process.argv[1] !== undefined && fileURLToPath(pathToFileURL(process.argv[1])) === HERE) await main();
