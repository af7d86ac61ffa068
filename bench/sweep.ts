/**
 * The `sweep` bench suite: every shipped model x every profile in hardware-profiles/ x every
 * parallelism, timing each translation (cost model + workload + text writer; the model is parsed
 * once per model, and that parse is timed separately). Also records what each translation
 * produced (per-NPU compute time, bytes communicated), so a sweep doubles as a results table.
 */
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadHardwareProfile, profilesDir } from '../src/cost/hardware.js';
import { InputError } from '../src/errors.js';
import { examplesDir } from '../src/models.js';
import { analyseModel, createCostModel, workloadOf, type AnalysedModel } from '../src/pipeline.js';
import { LEGACY_STRATEGIES, legacyWorld, PARALLELISMS, type ParallelConfig, type Parallelism } from '../src/plan/legacy.js';
import type { LayerTable as Workload } from '../src/schedule/types.js';
import { writeAstraText } from '../src/writers/astra-text.js';
import { sumOverPasses } from '../src/passes.js';
import { cyclesToNs } from '../src/units.js';
import { median } from './median.js';

export interface SweepOptions {
  /** Model names in examples/ (default: all). */
  models?: string[];
  /** Profile names in hardware-profiles/ (default: all). */
  profiles?: string[];
  parallelisms?: Parallelism[];
  npus?: number;
  /** Model-parallel group of the hybrid strategies. */
  mpGroup?: number;
  onProgress?: (done: number, total: number, label: string) => void;
}

export interface SweepRow {
  model: string;
  profile: string;
  parallelism: Parallelism;
  layers: number;
  translateMs: number;
  /** Per-NPU compute of one iteration (fwd + ig + wg), ns through the profile's clock. */
  computeNs: number;
  commBytes: number;
}

export interface SweepResult {
  suite: 'sweep';
  npus: number;
  mpGroup: number;
  models: { model: string; layers: number; parseMs: number }[];
  rows: SweepRow[];
  /** Model x parallelism pairs the plan refuses (e.g. 12 attention heads over 8 tensor-parallel ranks), with the reason. */
  refused?: { model: string; parallelism: Parallelism; reason: string }[];
  totals: { translations: number; translateMs: number; parseMs: number; profileLoadMs: number; wallMs: number };
}

const shipped = (dir: string, ext: string): string[] => readdirSync(dir).filter((f) => f.endsWith(ext)).map((f) => basename(f, ext)).sort();

/** Dynamic exports need their symbolic dims bound: try none, then batch, then batch + sequence. */
const BINDING_ATTEMPTS: [string, number][][] = [[], [['batch', 1]], [['batch', 1], ['sequence', 128]]];

function analyse(path: string): AnalysedModel {
  let last: unknown;
  for (const dims of BINDING_ATTEMPTS) {
    try {
      return analyseModel(path, { dims: new Map(dims) });
    } catch (e) {
      last = e;
    }
  }
  throw last;
}

function summarise(w: Workload): { computeNs: number; commBytes: number } {
  let cycles = 0;
  let commBytes = 0;
  for (const l of w.layers) {
    cycles += sumOverPasses({ fwd: l.fwdCycles, ig: l.igCycles, wg: l.wgCycles }, (c) => c);
    commBytes += l.fwdComm.bytes + l.igComm.bytes + l.wgComm.bytes;
  }
  return { computeNs: cyclesToNs(cycles, w.clockMHz), commBytes };
}

export async function runSweep(options: SweepOptions = {}): Promise<SweepResult> {
  const started = performance.now();
  const examples = examplesDir();
  if (examples === undefined) throw new Error('examples/ folder not found');
  const models = options.models ?? shipped(examples, '.onnx');
  const profileNames = options.profiles ?? shipped(profilesDir(), '.json');
  const parallelisms = options.parallelisms ?? [...PARALLELISMS];
  const npus = options.npus ?? 8;
  const mpGroup = options.mpGroup ?? 2;
  const tLoad = performance.now();
  const profiles = await Promise.all(profileNames.map((p) => loadHardwareProfile(p)));
  const profileLoadMs = performance.now() - tLoad;
  const total = models.length * profiles.length * parallelisms.length;
  const rows: SweepRow[] = [];
  const modelStats: SweepResult['models'] = [];
  const refused: NonNullable<SweepResult['refused']> = [];
  let done = 0;
  for (const model of models) {
    // With --expose-gc: start each model on a clean heap (one per translation would cost far more than the translations).
    (globalThis as { gc?: () => void }).gc?.();
    const t0 = performance.now();
    const analysed = analyse(join(examples, `${model}.onnx`));
    modelStats.push({ model, layers: analysed.layers.length, parseMs: performance.now() - t0 });
    for (const profile of profiles) {
      for (const parallelism of parallelisms) {
        // The sweep's G applies to the hybrids; DATA and MODEL imply theirs (the keyword table).
        const given = LEGACY_STRATEGIES[parallelism].modelGroup === 'given' ? mpGroup : undefined;
        const config: ParallelConfig = { parallelism, npus, mpGroup: legacyWorld({ parallelism, npus, mpGroup: given }).tp, dtype: 'fp32', params: 'all' };
        const t1 = performance.now();
        // A fresh cost model per translation, as the CLI would build it (no memo carried over).
        let workload: Workload;
        try {
          workload = workloadOf(analysed, await createCostModel(profile), config);
        } catch (e) {
          // A split the plan refuses is refused for every profile: noted once, not timed.
          if (!(e instanceof InputError)) throw e;
          if (!refused.some((r) => r.model === model && r.parallelism === parallelism)) refused.push({ model, parallelism, reason: e.message });
          options.onProgress?.(++done, total, `${model} ${profile.name} ${parallelism} (refused)`);
          continue;
        }
        writeAstraText(workload, 'ns');
        const translateMs = performance.now() - t1;
        rows.push({ model, profile: profile.name, parallelism, layers: workload.layers.length, translateMs, ...summarise(workload) });
        options.onProgress?.(++done, total, `${model} ${profile.name} ${parallelism}`);
      }
    }
  }
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  return {
    suite: 'sweep',
    npus,
    mpGroup,
    models: modelStats,
    rows,
    refused,
    totals: {
      translations: rows.length,
      translateMs: sum(rows.map((r) => r.translateMs)),
      parseMs: sum(modelStats.map((m) => m.parseMs)),
      profileLoadMs,
      wallMs: performance.now() - started,
    },
  };
}

const ms = (x: number): string => (x < 10 ? x.toFixed(2) : x.toFixed(1));

/** Markdown: per model, the median and worst translation time over the profiles, per parallelism. */
export function sweepMarkdown(r: SweepResult): string {
  const parallelisms = [...new Set(r.rows.map((x) => x.parallelism))];
  const lines = [
    `${r.totals.translations} translations (${r.models.length} models x ${new Set(r.rows.map((x) => x.profile)).size} profiles x ${parallelisms.length} parallelisms, ${r.npus} NPUs, hybrid group ${r.mpGroup}): ` +
      `${ms(r.totals.translateMs)} ms translating, ${ms(r.totals.parseMs)} ms parsing, ${ms(r.totals.profileLoadMs ?? 0)} ms loading profiles, ${ms(r.totals.wallMs)} ms wall.`,
    '',
    `| model | layers | parse ms | ${parallelisms.map((p) => `${p} ms (median, max)`).join(' | ')} |`,
    `|---|---:|---:|${parallelisms.map(() => '---:').join('|')}|`,
  ];
  for (const m of r.models) {
    const cells = parallelisms.map((p) => {
      const times = r.rows.filter((x) => x.model === m.model && x.parallelism === p).map((x) => x.translateMs);
      return times.length === 0 ? '-' : `${ms(median(times))}, ${ms(Math.max(...times))}`;
    });
    lines.push(`| ${m.model} | ${m.layers} | ${ms(m.parseMs)} | ${cells.join(' | ')} |`);
  }
  const refused = r.refused ?? [];
  if (refused.length > 0) lines.push('', 'Refused by the plan (`-`):', ...refused.map((x) => `- ${x.model} ${x.parallelism}: ${x.reason}`));
  return lines.join('\n') + '\n';
}
