/**
 * Translate bench: every model in examples/ plus a VGG16 with its 553 MB of weights inline
 * (generated here, streamed to a temp file), each translated in a child process so its peak RSS
 * is its own. Reports wall time, bytes read from disk against file size, and peak memory.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { examplesDir } from '../src/models.js';
import { writeInlineCopy } from './inline-copy.js';
import type { ChildResult } from './translate-child.js';

export type BenchProgress = (done: number, total: number, label: string) => void;

export interface TranslateBenchResult {
  suite: 'translate';
  columns: string[];
  rows: (string | number)[][];
  notes: string[];
}

const here = dirname(fileURLToPath(import.meta.url));
const MB = 1e6;

/** examples/ from bench/ or dist/bench/ (the CLI's own lookup, so both find the same models). */
function examplesFolder(): string {
  const dir = examplesDir();
  if (dir === undefined) throw new Error(`examples/ not found from ${here}`);
  return dir;
}

/** Runs translate-child (compiled .js, or .ts through tsx) and parses its JSON line. */
function runChild(arg: string, dims: [string, number][] = []): ChildResult & { childWallMs: number } {
  const ts = fileURLToPath(import.meta.url).endsWith('.ts');
  const script = join(here, ts ? 'translate-child.ts' : 'translate-child.js');
  const loader = ts ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href] : [];
  const start = performance.now();
  const r = spawnSync(process.execPath, [...loader, script, arg, JSON.stringify(dims)], { encoding: 'utf8', maxBuffer: 1 << 20 });
  const childWallMs = performance.now() - start;
  if (r.status !== 0) throw new Error(`translate-child ${arg} failed (${r.status}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  // The child prints its result as the last line of its output (split always gives one line).
  const resultLine = r.stdout.trim().split('\n').at(-1) ?? '';
  return { ...(JSON.parse(resultLine) as ChildResult), childWallMs };
}

/** Symbolic dims of the dynamic examples, bound to their static twins' values. */
const DIMS: Record<string, [string, number][]> = {
  resnet50_dynamic: [['batch', 1]],
  bert_base_like_dynamic: [['batch', 1], ['sequence', 128]],
};

const round = (x: number, digits = 1): number => Number(x.toFixed(digits));

/** Accepts the progress function itself or the runner's `{ onProgress }`. */
function progressOf(arg: BenchProgress | { onProgress?: BenchProgress } | undefined): BenchProgress {
  if (typeof arg === 'function') return arg;
  return arg?.onProgress ?? (() => {});
}

export async function runTranslateBench(progressArg?: BenchProgress | { onProgress?: BenchProgress }): Promise<TranslateBenchResult> {
  const progress = progressOf(progressArg);
  const examples = examplesFolder();
  const models = readdirSync(examples).filter((f) => f.endsWith('.onnx')).sort().map((f) => ({ label: f.replace(/\.onnx$/, ''), path: join(examples, f) }));
  const total = models.length + 3; // + baseline, generation, large model
  const tmp = mkdtempSync(join(tmpdir(), 'modtrans-bench-'));
  const rows: (string | number)[][] = [];
  const notes: string[] = [];
  try {
    progress(0, total, 'baseline');
    const baseline = runChild('--baseline');
    progress(1, total, 'writing vgg16 with inline weights');
    const genStart = performance.now();
    const large = join(tmp, 'vgg16.inline.onnx');
    const written = writeInlineCopy(join(examples, 'vgg16.onnx'), large);
    const genMs = performance.now() - genStart;
    models.push({ label: 'vgg16 (inline weights)', path: large });
    let done = 2;
    for (const m of models) {
      progress(done++, total, m.label);
      const r = runChild(m.path, DIMS[m.label] ?? []);
      rows.push([
        m.label, round(r.fileBytes / MB, 3), r.bytesRead, round((100 * r.bytesRead) / r.fileBytes, 3), r.layers,
        round(r.translateMs), round(r.childWallMs), round(r.maxRssBytes / MB), round((r.maxRssBytes - baseline.maxRssBytes) / MB), round(r.heapUsedBytes / MB),
      ]);
    }
    progress(total, total, 'done');
    notes.push(
      `Each model is translated (read, shapes, layers, SCALE-sim-exact cost on tpu-256, DATA x 8, ASTRA-sim text) in its own node process; peak RSS is process.resourceUsage().maxRSS of that process.`,
      `"RSS over baseline" subtracts a child that loads the same modules and profile without a model (${round(baseline.maxRssBytes / MB)} MB).`,
      `The inline VGG16 (${round(written.fileBytes / MB)} MB, ${written.initializers} initializers, ${round(written.payloadBytes / MB)} MB of zero weights as raw_data) was generated from examples/vgg16.onnx and streamed to disk in ${round(genMs)} ms.`,
      'Files over 16 MiB are read with positional reads that skip every weight payload; smaller files are read whole (bytes read = file size).',
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return {
    suite: 'translate',
    columns: ['model', 'file MB', 'bytes read', 'read %', 'layers', 'translate ms', 'child wall ms', 'peak RSS MB', 'RSS over baseline MB', 'heap used MB'],
    rows,
    notes,
  };
}
