/**
 * Bench runner: `npm run bench [-- SUITE...] [--record]` (node --expose-gc dist/bench/run.js).
 * Suites are registered in SUITE_MODULES (module under bench/ and its entry function); each writes
 * <results>/<suite>.json and <results>/SUMMARY.md is rebuilt from every result file there. Results
 * go to bench/results/latest/ (git-ignored, so a run never dirties the clone) unless --record is
 * given, which writes the tracked bench/results/ that the README quotes. A suite whose module is
 * missing is skipped with a message, not an error.
 * Options: --models a,b  --profiles x,y  (sweep subset), --rows 1,2 (megatron: Table 1 rows),
 * --astra-sim BIN (megatron: ASTRA-sim 2.x's binary; default $ASTRA_SIM_BIN), --quiet (no progress bar), --record.
 */
import { Command, CommanderError } from 'commander';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineInfo } from './goals.js';
import { sweepMarkdown, type SweepResult } from './sweep.js';
import { progressBar as sharedProgressBar } from '../src/progress.js';

/**
 * Every suite, in run order: its module (bench/<module>.ts) and entry function, which receives
 * `{ onProgress, root, models?, profiles?, rows?, astraSim? }`. Adding a suite is adding a line here.
 */
export const SUITE_MODULES = {
  translate: { module: 'translate', entry: 'runTranslateBench' },
  cost: { module: 'cost', entry: 'runCostBench' },
  sweep: { module: 'sweep', entry: 'runSweep' },
  goals: { module: 'goals', entry: 'runGoalsBench' },
  traces: { module: 'traces', entry: 'runTracesBench' },
  fuzz: { module: 'tests', entry: 'runFuzzBench' },
  tests: { module: 'tests', entry: 'runTestsBench' },
  gpu: { module: 'gpu', entry: 'runGpuBench' },
  megatron: { module: 'megatron', entry: 'runMegatronBench' },
} as const;
export type Suite = keyof typeof SUITE_MODULES;
export const SUITES = Object.keys(SUITE_MODULES) as Suite[];

/** The repository root (the folder holding package.json), from bench/ or dist/bench/. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/**
 * A suite's progress on modtrans's one bar (src/progress.ts): redrawn in place on a terminal; in
 * logs a line when it starts, every 5 s and when it ends. `finish` stops the bar when the suite
 * ends (a suite whose last report is short of its total, as goals' 'done' is, would otherwise
 * leave the bar's redraw timer holding the process open after the results are written).
 */
export function progressBar(title: string, quiet = false): { onProgress: (done: number, total: number, label: string) => void; finish: () => void } {
  if (quiet) return { onProgress: () => {}, finish: () => {} };
  const bar = sharedProgressBar(title, { unit: 'items' });
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    bar.done();
  };
  return {
    onProgress: (done, total, label) => {
      bar.update(done, total, label);
      if (done >= total) finish();
    },
    finish,
  };
}

type BenchFn = (options?: Record<string, unknown>) => unknown;

/**
 * Loads another engineer's suite module and its entry point: `preferred` if exported, else the
 * only `run...Bench` function. Missing module -> undefined (the runner skips the suite).
 */
async function loadSuite(file: string, preferred: string): Promise<BenchFn | undefined> {
  const spec = `./${file}.js`; // not a literal: tsc must not require the module to exist
  let mod: Record<string, unknown>;
  try {
    mod = (await import(spec)) as Record<string, unknown>;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(file)) return undefined;
    throw e;
  }
  if (typeof mod[preferred] === 'function') return mod[preferred] as BenchFn;
  const candidates = Object.entries(mod).filter(([k, v]) => typeof v === 'function' && /^run.*Bench/i.test(k));
  const [only] = candidates;
  if (only !== undefined && candidates.length === 1) return only[1] as BenchFn;
  if (typeof mod['default'] === 'function') return mod['default'] as BenchFn;
  throw new Error(`bench/${file}.ts exports no ${preferred}() (found: ${Object.keys(mod).join(', ') || 'nothing'})`);
}

interface RunArgs {
  suites: Suite[];
  models?: string[];
  profiles?: string[];
  /** megatron: Table 1 rows (1-based). */
  rows?: number[];
  /** megatron: ASTRA-sim 2.x's analytical binary. */
  astraSim?: string;
  quiet: boolean;
  /** Write the tracked bench/results/ instead of bench/results/latest/. */
  record: boolean;
}

/** The bench's command line, parsed by commander as the CLI's is (unknown options and suites are errors). */
export function parseArgs(argv: readonly string[]): RunArgs {
  const list = (option: string) => (value: string): string[] => {
    // A missing value would otherwise silently mean "all models/profiles".
    if (value.startsWith('--')) throw new Error(`${option} needs a comma-separated list`);
    return value.split(',');
  };
  const program = new Command()
    .name('bench')
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} })
    .argument('[suites...]', `suites to run (${SUITES.join(', ')}; default all)`)
    .option('--models <a,b>', 'sweep: only these models', list('--models'))
    .option('--profiles <x,y>', 'sweep: only these profiles', list('--profiles'))
    .option('--rows <1,2>', 'megatron: only these rows of Table 1', (value: string): number[] => {
      if (value.startsWith('--')) throw new Error('--rows needs a comma-separated list');
      const rows = value.split(',').map(Number);
      if (rows.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--rows ${value}: expected row numbers such as 1,2,3`);
      return rows;
    })
    .option('--astra-sim <bin>', "megatron: ASTRA-sim 2.x's analytical binary (default: $ASTRA_SIM_BIN)")
    .option('--quiet', 'no progress bar', false)
    .option('--record', 'write the tracked bench/results/ (what the README quotes)', false);
  try {
    program.parse([...argv], { from: 'user' });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const flag = message.match(/'(--[\w-]+)/)?.[1] ?? 'option';
    throw new Error(/argument missing/.test(message) ? `${flag} needs ${flag === '--astra-sim' ? 'a path to the binary' : 'a comma-separated list'}` : message);
  }
  const suites = program.args;
  for (const s of suites) {
    if (!(SUITES as readonly string[]).includes(s)) throw new Error(`unknown suite or option '${s}' (suites: ${SUITES.join(', ')}; options: --models, --profiles, --rows, --astra-sim, --quiet, --record)`);
  }
  const opts = program.opts<{ models?: string[]; profiles?: string[]; rows?: number[]; astraSim?: string; quiet: boolean; record: boolean }>();
  return {
    suites: suites.length === 0 ? [...SUITES] : (suites as Suite[]),
    quiet: opts.quiet,
    record: opts.record,
    ...(opts.models === undefined ? {} : { models: opts.models }),
    ...(opts.profiles === undefined ? {} : { profiles: opts.profiles }),
    ...(opts.rows === undefined ? {} : { rows: opts.rows }),
    ...(opts.astraSim === undefined ? {} : { astraSim: opts.astraSim }),
  };
}

async function runSuite(suite: Suite, args: RunArgs): Promise<unknown | undefined> {
  const { module, entry } = SUITE_MODULES[suite];
  const fn = await loadSuite(module, entry);
  if (fn === undefined) {
    process.stderr.write(`bench: skipping suite '${suite}': bench/${module}.ts is not there yet\n`);
    return undefined;
  }
  const bar = progressBar(suite, args.quiet);
  try {
    return await fn({ onProgress: bar.onProgress, root: repoRoot(), models: args.models, profiles: args.profiles, rows: args.rows, astraSim: args.astraSim });
  } finally {
    bar.finish();
  }
}

/** Markdown of one suite's result: the sweep's own table, a suite-provided summary, or JSON. */
export function suiteMarkdown(suite: string, result: unknown): string {
  if (suite === 'sweep' && (result as SweepResult)?.suite === 'sweep') return sweepMarkdown(result as SweepResult);
  const r = result as Record<string, unknown> | undefined;
  if (r && typeof r['markdown'] === 'string') return r['markdown'];
  if (r && Array.isArray(r['columns']) && Array.isArray(r['rows'])) return tableMarkdown(r['columns'] as string[], r['rows'] as unknown[][], r['notes']);
  const json = JSON.stringify(result, null, 2);
  return '```json\n' + (json.length > 4000 ? `${json.slice(0, 4000)}\n... (truncated; see ${suite}.json)` : json) + '\n```\n';
}

/** A `{columns, rows, notes}` result (the translate suite's shape) as a markdown table. */
export function tableMarkdown(columns: readonly string[], rows: readonly unknown[][], notes: unknown): string {
  const cell = (v: unknown): string => (typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(2) : String(v)).replace(/\|/g, '\\|');
  const lines = [`| ${columns.join(' | ')} |`, `|${columns.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)];
  if (Array.isArray(notes)) lines.push('', ...notes.map((n) => `- ${String(n)}`));
  return lines.join('\n') + '\n';
}

export function summaryMarkdown(resultsDir: string): string {
  const files = readdirSync(resultsDir).filter((f) => f.endsWith('.json')).sort();
  const m = machineInfo();
  const parts = ['# Bench results', '', `${m.nproc} core(s), ${m.cpu}, Node ${m.node}, ${process.platform}/${process.arch}. Rebuilt by \`npm run bench\` from the JSON files in this folder.`, ''];
  for (const f of files) {
    const suite = f.replace(/\.json$/, '');
    const doc = JSON.parse(readFileSync(join(resultsDir, f), 'utf8')) as { recordedAt?: string; result?: unknown };
    parts.push(`## ${suite}`, '', `Recorded ${doc.recordedAt ?? '?'}.`, '', suiteMarkdown(suite, doc.result ?? doc));
  }
  return parts.join('\n');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const resultsDir = join(repoRoot(), 'bench', 'results', ...(args.record ? [] : ['latest']));
  mkdirSync(resultsDir, { recursive: true });
  const shown = args.record ? 'bench/results' : 'bench/results/latest';
  for (const suite of args.suites) {
    const started = Date.now();
    const result = await runSuite(suite, args);
    if (result === undefined) continue;
    const doc = { suite, recordedAt: new Date().toISOString(), node: process.version, machine: machineInfo(), wallMs: Date.now() - started, result };
    writeFileSync(join(resultsDir, `${suite}.json`), JSON.stringify(doc, null, 2) + '\n');
    process.stderr.write(`bench: ${suite} done in ${((Date.now() - started) / 1000).toFixed(1)} s -> ${shown}/${suite}.json\n`);
  }
  writeFileSync(join(resultsDir, 'SUMMARY.md'), summaryMarkdown(resultsDir));
  process.stderr.write(`bench: summary -> ${shown}/SUMMARY.md\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e: unknown) => {
    // One line (the stack with MODTRANS_DEBUG=1); a bad command line exits 2, a failed suite 1.
    const message = e instanceof Error ? e.message.replace(/^error: /, '') : String(e);
    process.stderr.write(`bench: ${process.env['MODTRANS_DEBUG'] && e instanceof Error ? e.stack : message}\n`);
    process.exitCode = e instanceof CommanderError || /unknown (suite|option|command)|needs a comma-separated list|argument|expected row numbers|^--rows|^--astra-sim/.test(message) ? 2 : 1;
  });
}
