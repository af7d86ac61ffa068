/**
 * Writing and checking Chakra traces of large runs, whole process (the built CLI bundle):
 * 512 ranks of a 24-layer GPT (TP 8 x DP 64, 8 micro-batches) — issue 9's goal is under 5 s —
 * then `check-trace` over them; and, where pipeline parallelism is available, 1,024 ranks of a
 * 96-layer GPT-3-sized model (TP 8 x PP 16 x DP 8) — issue 12's goal is well under a minute each —
 * and issue 23's, under 5 s each: the same GPT-3 with context parallelism (TP 8 x CP 2 x PP 8 x DP 8)
 * and a Mixtral-like MoE with expert parallelism (EP 8) on 1,024 ranks.
 * The models are graph-only and built here (bench/models/gpt-graph.ts); files go to a temp folder.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineInfo, runProcess, type ProcessSample } from './goals.js';
import { gptModel, type GptOptions } from './models/gpt-graph.js';
import { mixtralModel, type MixtralOptions } from '../test/helpers/arch/mixtral.js';

export interface TracesBenchOptions {
  root: string;
  onProgress?: (done: number, total: number, label: string) => void;
}

interface Row {
  run: string;
  ranks: number;
  translateWallMs: number;
  translateCpuMs?: number;
  translatePeakRssMb?: number;
  checkWallMs?: number;
  checkCpuMs?: number;
  bytesWritten?: number;
  note?: string;
}

/** Mixtral-8x7B-like (32 blocks, h 4096, GQA 32/8, 8 experts of width 14336, top-2, HF's index form), at seq 2048. */
const MIXTRAL_8X7B: MixtralOptions = { layers: 32, hidden: 4096, heads: 32, kvHeads: 8, ffn: 14336, seq: 2048, batch: 1, vocab: 32000, experts: 8, topK: 2, dispatch: 'index' };

const RUNS: { run: string; model: GptOptions | { mixtral: MixtralOptions }; args: string[]; ranks: number }[] = [
  {
    run: '24-layer GPT (h 1024, seq 1024), TP 8 x DP 64, global batch 512, micro-batch 1',
    model: { layers: 24, hidden: 1024, heads: 16, seq: 1024, batch: 1, vocab: 50304 },
    args: ['--tp', '8', '--dp', '64', '--global-batch', '512', '--micro-batch', '1', '--dtype', 'bf16'],
    ranks: 512,
  },
  {
    run: '96-layer GPT-3 (h 12288, seq 2048), TP 8 x PP 16 x DP 8, global batch 128, micro-batch 1',
    model: { layers: 96, hidden: 12288, heads: 96, seq: 2048, batch: 1, vocab: 51200, fusedQkv: true },
    args: ['--tp', '8', '--pp', '16', '--dp', '8', '--global-batch', '128', '--micro-batch', '1', '--dtype', 'bf16', '--sp'],
    ranks: 1024,
  },
  // Issue 23's goal: each under 5 s.
  {
    run: '96-layer GPT-3 (h 12288, seq 2048), TP 8 x CP 2 x PP 8 x DP 8 (p2p), global batch 128, micro-batch 1',
    model: { layers: 96, hidden: 12288, heads: 96, seq: 2048, batch: 1, vocab: 51200, fusedQkv: true },
    args: ['--tp', '8', '--cp', '2', '--pp', '8', '--dp', '8', '--global-batch', '128', '--micro-batch', '1', '--dtype', 'bf16', '--sp'],
    ranks: 1024,
  },
  {
    run: 'Mixtral-8x7B-like MoE (32 blocks, 8 experts, top-2, seq 2048), TP 8 x EP 8 (ETP 1) x PP 4 x DP 32, global batch 256, micro-batch 1',
    model: { mixtral: MIXTRAL_8X7B },
    args: ['--tp', '8', '--sp', '--ep', '8', '--etp', '1', '--pp', '4', '--dp', '32', '--global-batch', '256', '--micro-batch', '1', '--dtype', 'bf16'],
    ranks: 1024,
  },
];

const mb = (bytes: number | undefined): number | undefined => (bytes === undefined ? undefined : Math.round(bytes / 2 ** 20));

export async function runTracesBench(options: TracesBenchOptions): Promise<{ suite: 'traces'; machine: ReturnType<typeof machineInfo>; rows: Row[]; markdown: string }> {
  const { root } = options;
  const cli = join(root, 'dist', 'cli', 'main.cjs');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build first`);
  const rows: Row[] = [];
  RUNS.forEach(({ run, model, args, ranks }, i) => {
    options.onProgress?.(i, RUNS.length, run);
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-traces-'));
    try {
      const file = join(dir, 'model.onnx');
      writeFileSync(file, 'mixtral' in model ? mixtralModel(model.mixtral).bytes : gptModel(model));
      const prefix = join(dir, 'out', 'gpt');
      const translate: ProcessSample & { status?: number; stderr?: string } = runProcess(process.execPath, [cli, 'translate', file, ...args, '--format', 'chakra', '-o', prefix], root);
      if (!existsSync(`${prefix}.0.et`)) {
        rows.push({ run, ranks, translateWallMs: translate.wallMs, note: 'not written (option refused by this build)' });
        return;
      }
      const check = runProcess(process.execPath, [cli, 'check-trace', prefix], root);
      rows.push({
        run, ranks,
        translateWallMs: Math.round(translate.wallMs), translateCpuMs: translate.cpuMs, translatePeakRssMb: mb(translate.maxRssBytes),
        checkWallMs: Math.round(check.wallMs), checkCpuMs: check.cpuMs,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  options.onProgress?.(RUNS.length, RUNS.length, 'done');
  const machine = machineInfo();
  const s = (ms: number | undefined): string => (ms === undefined ? '-' : `${(ms / 1000).toFixed(2)} s`);
  const markdown = [
    `Whole process, built CLI; ${machine.nproc} core(s), ${machine.cpu}, Node ${machine.node}, load ${machine.loadAverage1m.toFixed(1)} at the end.`,
    '',
    '| run | ranks | translate + write all traces (wall / CPU) | peak RSS | check-trace (wall / CPU) |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.run} | ${r.ranks} | ${s(r.translateWallMs)} / ${s(r.translateCpuMs)} | ${r.translatePeakRssMb ?? '-'} MiB | ${r.note ?? `${s(r.checkWallMs)} / ${s(r.checkCpuMs)}`} |`),
    '',
  ].join('\n');
  return { suite: 'traces', machine, rows, markdown };
}
