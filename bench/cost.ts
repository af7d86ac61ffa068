/**
 * The `cost` bench suite: every SCALE-sim v2 reference topology/config pair of RUNTIMES.csv
 * (copied into test/fixtures/scalesim/), timed two ways next to SCALE-sim's recorded wall time:
 * - `reproduceMs`: the full SCALE-sim reproduction (all three reports' figures, im2col addresses,
 *   DRAM traffic), what `modtrans scalesim` does;
 * - `costModelMs`: `scalesimCostModel(profile).costGemm` on every layer's GEMM, fresh model (what a
 *   translation pays; closed form in CALC mode, the memory walk in USER mode).
 * Pairs SCALE-sim could not run (status error) are attempted too and must fail with an InputError.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { loadScaleSimProfile } from '../src/cost/scalesim-config.js';
import { scalesimCostModel } from '../src/cost/scalesim-model.js';
import { InputError } from '../src/errors.js';
import { simulateScaleSim } from '../src/scalesim/run.js';
import { readTopology } from '../src/scalesim/topology.js';
import { median } from './median.js';

export interface CostBenchOptions {
  onProgress?: (done: number, total: number, label: string) => void;
}

export interface CostBenchRow {
  config: string;
  dataflow: string;
  topology: string;
  layers: number;
  /** SCALE-sim's outcome: ok, error (it crashed) or stopped (killed by hand after many minutes). */
  scalesimStatus: string;
  scalesimWallS: number;
  /** 'ok', or 'input-error' where our parser rejects what SCALE-sim crashed on. */
  status: 'ok' | 'input-error';
  reproduceMs: number;
  costModelMs: number;
  /** SCALE-sim wall time / our reproduction time. */
  speedup: number;
  error?: string;
}

export interface CostBenchResult {
  suite: 'cost';
  rows: CostBenchRow[];
  totals: { pairs: number; reproduced: number; reproduceMs: number; costModelMs: number; scalesimWallS: number; medianSpeedup: number };
  markdown: string;
}

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

interface RuntimeEntry {
  config: string;
  dataflow: string;
  topology: string;
  status: string;
  wallS: number;
}

function readRuntimes(fixtures: string): RuntimeEntry[] {
  const [header = '', ...lines] = readFileSync(join(fixtures, 'RUNTIMES.csv'), 'utf8').trim().split('\n');
  const columns = header.split(',');
  return lines.map((line, i) => {
    const cells = line.split(',');
    const cell = (name: string): string => {
      const value = cells[columns.indexOf(name)];
      if (value === undefined) throw new Error(`RUNTIMES.csv line ${i + 2}: no '${name}' cell`);
      return value;
    };
    return { config: cell('config'), dataflow: cell('dataflow'), topology: cell('topology'), status: cell('status'), wallS: Number(cell('wall_s')) };
  });
}

function benchPair(fixtures: string, entry: RuntimeEntry): CostBenchRow {
  const profile = loadScaleSimProfile(join(fixtures, 'configs', 'variants', `${entry.config}_${entry.dataflow}.cfg`));
  const row: CostBenchRow = {
    config: entry.config, dataflow: entry.dataflow, topology: entry.topology, layers: 0,
    scalesimStatus: entry.status, scalesimWallS: entry.wallS, status: 'ok', reproduceMs: 0, costModelMs: 0, speedup: 0,
  };
  try {
    const format = entry.topology.startsWith('GEMM_mnk/') ? 'gemm' : 'conv';
    const layers = readTopology(join(fixtures, 'topologies', entry.topology), format);
    row.layers = layers.length;
    let started = performance.now();
    simulateScaleSim(layers, profile);
    row.reproduceMs = performance.now() - started;
    started = performance.now();
    const model = scalesimCostModel(profile);
    for (const layer of layers) model.costGemm(layer.geometry.gemm);
    row.costModelMs = performance.now() - started;
    row.speedup = (entry.wallS * 1000) / row.reproduceMs;
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    row.status = 'input-error';
    // Recorded results are committed: name the topology relative to the fixtures, not this machine.
    row.error = e.message.split(`${fixtures}/`).join('');
  }
  return row;
}

function toMarkdown(rows: CostBenchRow[], totals: CostBenchResult['totals']): string {
  const lines = [
    `SCALE-sim v2 reference pairs: ${totals.pairs} (${totals.reproduced} reproduced). Our full reproduction took ` +
      `${(totals.reproduceMs / 1000).toFixed(2)} s in all, SCALE-sim ${(totals.scalesimWallS / 3600).toFixed(2)} h; ` +
      `median speed-up ${totals.medianSpeedup.toFixed(0)}x. costGemm over every layer: ${totals.costModelMs.toFixed(1)} ms in all.`,
    '',
    '| config | dataflow | topology | layers | SCALE-sim (s) | SCALE-sim status | reproduce (ms) | costGemm (ms) | speed-up |',
    '|---|---|---|---:|---:|---|---:|---:|---:|',
  ];
  for (const r of rows) {
    const ours = r.status === 'ok' ? [r.reproduceMs.toFixed(1), r.costModelMs.toFixed(2), `${r.speedup.toFixed(0)}x`] : ['input error', '', ''];
    lines.push(`| ${r.config} | ${r.dataflow} | ${r.topology} | ${r.layers || ''} | ${r.scalesimWallS} | ${r.scalesimStatus} | ${ours.join(' | ')} |`);
  }
  return `${lines.join('\n')}\n`;
}

export async function runCostBench(options: CostBenchOptions = {}): Promise<CostBenchResult> {
  const fixtures = join(repoRoot(), 'test', 'fixtures', 'scalesim');
  const entries = readRuntimes(fixtures);
  const rows: CostBenchRow[] = [];
  // Warm up the JIT on one small pair so the first timed row is not penalised.
  const warmUp = entries.find((e) => e.status === 'ok' && e.topology.includes('test_mnk')) ?? entries[0];
  if (warmUp !== undefined) benchPair(fixtures, warmUp);
  for (const [i, entry] of entries.entries()) {
    options.onProgress?.(i, entries.length, `${entry.config}_${entry.dataflow} ${entry.topology}`);
    rows.push(benchPair(fixtures, entry));
    await new Promise((resolve) => setImmediate(resolve)); // let progress output flush
  }
  options.onProgress?.(entries.length, entries.length, 'done');
  const ok = rows.filter((r) => r.status === 'ok');
  const totals = {
    pairs: rows.length,
    reproduced: ok.length,
    reproduceMs: ok.reduce((s, r) => s + r.reproduceMs, 0),
    costModelMs: ok.reduce((s, r) => s + r.costModelMs, 0),
    scalesimWallS: ok.reduce((s, r) => s + r.scalesimWallS, 0),
    medianSpeedup: ok.length === 0 ? 0 : median(ok.map((r) => r.speedup)),
  };
  return { suite: 'cost', rows, totals, markdown: toMarkdown(rows, totals) };
}
