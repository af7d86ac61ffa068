/**
 * The `megatron` bench suite: Table 1 of Narayanan et al., "Efficient Large-Scale Language Model
 * Training on GPU Clusters Using Megatron-LM" (SC21; arXiv 2104.04473v5), reproduced. Each row's
 * GPT is built graph-only (bench/models/gpt-graph.ts), planned with the paper's t, p, GPUs and
 * batch on one profile (a100-sxm-80gb) and one cluster (dgx-a100-superpod) for every row, run
 * through `modtrans simulate` (the built CLI) on ASTRA-sim 2.x, and its TFLOP/s per GPU compared
 * with the measured one. No per-row factor: every row gets the same settings (SETTINGS below).
 *
 * Method (stated, not hidden): a step's micro-batches are simulated at two counts m1 < m2 and the
 * step at the row's m micro-batches is extrapolated linearly, step(m) = step(m1) + (m - m1) x
 * (step(m2) - step(m1)) / (m2 - m1). Once the pipeline is in its steady state every further
 * micro-batch adds the same work and transfers to every rank (1F1B and interleaved 1F1B: Megatron's
 * warm-up count does not depend on m), and the data-parallel all-reduce and optimizer step happen
 * once per step; so the step is linear in m beyond the warm-up. m1, m2 = 1, 2 without pipeline
 * stages; 2p, 3p with them (interleaving needs multiples of p, and m = p is still all warm-up).
 * Every data-parallel replica is simulated (modtrans has no way to simulate one replica with the
 * all-reduce over the real group), so rows whose traces exceed the budget are not run: they are
 * listed with their trace size and the free-network bound (predict/free-network.ts: the same plan
 * with every collective and transfer free, an upper bound on TFLOP/s).
 *
 * TFLOP/s are counted as the paper counts them (its appendix, eq. 3): F = 96 B s l h^2 (1 + s/6h +
 * V/16lh) per step, which includes activation recomputation (4 forward-equivalents per layer) and
 * the full (unmasked) attention products. `simulate`'s own tflops_per_device uses Megatron-LM's
 * current num_floating_point_operations (3 forward-equivalents, the causal attention halved), so
 * it is lower by design; the ratio here uses eq. 3 for both sides.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineInfo } from './goals.js';
import { gptModel, type GptOptions } from './models/gpt-graph.js';

/** One row of the paper's Table 1 (arXiv 2104.04473v5, section 5.1, Table 1). */
export interface MegatronTableRow {
  row: number;
  /** Number of parameters (billion), as printed. */
  paramsB: number;
  heads: number;
  hidden: number;
  layers: number;
  /** Tensor-model-parallel size t. */
  tp: number;
  /** Pipeline-model-parallel size p. */
  pp: number;
  gpus: number;
  /** Global batch size B (sequences). */
  batch: number;
  /** Achieved teraFLOP/s per GPU (measured on Selene). */
  tflops: number;
  /** Percentage of theoretical peak FLOP/s (312 teraFLOP/s, A100 16-bit). */
  peakPercent: number;
  /** Achieved aggregate petaFLOP/s. */
  aggregatePflops: number;
}

/** Vocabulary and sequence length of every row (section 5.1: "a vocabulary size of 51,200 ... and a sequence length of 2048"). */
export const MEGATRON_VOCAB = 51200;
export const MEGATRON_SEQ = 2048;

/**
 * Narayanan et al., SC21, Table 1: "Weak-scaling throughput for GPT models ranging from 1 billion
 * to 1 trillion parameters", every figure as printed (checked against three transcriptions of
 * arXiv 2104.04473v5 found in the search corpora; the PDF itself was not available here).
 */
export const MEGATRON_TABLE1: readonly MegatronTableRow[] = [
  { row: 1, paramsB: 1.7, heads: 24, hidden: 2304, layers: 24, tp: 1, pp: 1, gpus: 32, batch: 512, tflops: 137, peakPercent: 44, aggregatePflops: 4.4 },
  { row: 2, paramsB: 3.6, heads: 32, hidden: 3072, layers: 30, tp: 2, pp: 1, gpus: 64, batch: 512, tflops: 138, peakPercent: 44, aggregatePflops: 8.8 },
  { row: 3, paramsB: 7.5, heads: 32, hidden: 4096, layers: 36, tp: 4, pp: 1, gpus: 128, batch: 512, tflops: 142, peakPercent: 46, aggregatePflops: 18.2 },
  { row: 4, paramsB: 18.4, heads: 48, hidden: 6144, layers: 40, tp: 8, pp: 1, gpus: 256, batch: 1024, tflops: 135, peakPercent: 43, aggregatePflops: 34.6 },
  { row: 5, paramsB: 39.1, heads: 64, hidden: 8192, layers: 48, tp: 8, pp: 2, gpus: 512, batch: 1536, tflops: 138, peakPercent: 44, aggregatePflops: 70.8 },
  { row: 6, paramsB: 76.1, heads: 80, hidden: 10240, layers: 60, tp: 8, pp: 4, gpus: 1024, batch: 1792, tflops: 140, peakPercent: 45, aggregatePflops: 143.8 },
  { row: 7, paramsB: 145.6, heads: 96, hidden: 12288, layers: 80, tp: 8, pp: 8, gpus: 1536, batch: 2304, tflops: 148, peakPercent: 47, aggregatePflops: 227.1 },
  { row: 8, paramsB: 310.1, heads: 128, hidden: 16384, layers: 96, tp: 8, pp: 16, gpus: 1920, batch: 2160, tflops: 155, peakPercent: 50, aggregatePflops: 297.4 },
  { row: 9, paramsB: 529.6, heads: 128, hidden: 20480, layers: 105, tp: 8, pp: 35, gpus: 2520, batch: 2520, tflops: 163, peakPercent: 52, aggregatePflops: 410.2 },
  { row: 10, paramsB: 1008.0, heads: 160, hidden: 25600, layers: 128, tp: 8, pp: 64, gpus: 3072, batch: 3072, tflops: 163, peakPercent: 52, aggregatePflops: 502.0 },
];

/**
 * The settings every row shares, as the paper's section 5 states them, and the assumptions where
 * it does not (each says which). One profile and one cluster; nothing varies per row except the
 * table's own columns and the two rules below (micro-batch counts simulated, chunks per rank).
 */
export const SETTINGS = {
  hardware: 'a100-sxm-80gb',
  cluster: 'dgx-a100-superpod',
  /** Section 5: "All of our results are run with mixed precision"; fp16 assumed (Megatron-LM's 2021 GPT scripts train with --fp16). */
  dtype: 'fp16',
  /**
   * Assumed: the paper does not give Table 1's micro-batch size. 1 is what its PTD-P rows of
   * Table 2 (175B, 530B) use, and the interleaved schedule needs m a multiple of p: with b = 2,
   * row 8's m = 2160 / (2 x 15) = 72 is not a multiple of p = 16.
   */
  microBatch: 1,
  /** Full activation recomputation: the paper's FLOP count (eq. 3) counts the recomputed forward of every layer. */
  recompute: 'full',
  /** Section 5.1 (as transcribed): the interleaved pipeline schedule (with the scatter/gather optimization) on every pipelined row. */
  ppSchedule: 'interleaved',
  /** Adam (the paper's GPT runs; section 5.10's 13.8 TB checkpoint is ~14 bytes per parameter: fp16 weights + fp32 master weights and two moments). */
  optimizer: 'adam',
} as const;

/** Assumed: chunks per rank are not stated; the smallest v > 1 that divides a stage's layers (Megatron needs l / p divisible by v). */
export function virtualStages(r: MegatronTableRow): number {
  if (r.pp === 1) return 1;
  const perStage = r.layers / r.pp;
  for (let v = 2; v <= perStage; v++) if (perStage % v === 0) return v;
  return 1;
}

export const dataParallel = (r: MegatronTableRow): number => r.gpus / (r.tp * r.pp);
/** Micro-batches per step and replica: B / (b x d). */
export const microBatches = (r: MegatronTableRow): number => r.batch / (SETTINGS.microBatch * dataParallel(r));

/** The paper's parameter count (section 5.1, eq. 2): P = 12 l h^2 (1 + 13/12h + (V + s)/12lh). */
export function paperParameterCount(r: MegatronTableRow): number {
  const { layers: l, hidden: h } = r;
  return 12 * l * h * h * (1 + 13 / (12 * h) + (MEGATRON_VOCAB + MEGATRON_SEQ) / (12 * l * h));
}

/** The paper's FLOPs of one step of `batch` sequences (appendix, eq. 3): 96 B s l h^2 (1 + s/6h + V/16lh), recomputation included. */
export function paperFlopsPerStep(r: MegatronTableRow, batch = r.batch): number {
  const { layers: l, hidden: h } = r;
  const s = MEGATRON_SEQ;
  return 96 * batch * s * l * h * h * (1 + s / (6 * h) + MEGATRON_VOCAB / (16 * l * h));
}

/**
 * The row's GPT as Megatron-LM builds it (fused QKV, learned position embeddings, LayerNorm,
 * GELU MLP of 4h, biases, dropout, the LM head tied to the word embedding), written as its fused
 * kernels compute it (section 4.2): one Gelu op (fused bias + GeLU) and the score scale folded
 * into the softmax (fused scale-mask-softmax). One micro-batch (batch 1) of 2048 tokens.
 */
export function megatronGptOptions(r: MegatronTableRow): GptOptions {
  return {
    layers: r.layers, hidden: r.hidden, heads: r.heads, seq: MEGATRON_SEQ, batch: SETTINGS.microBatch, vocab: MEGATRON_VOCAB,
    fusedQkv: true, tiedHead: true, mlp: 'gelu', scaledScores: false, dropout: true,
  };
}

/** The plan flags of the row at `micro` micro-batches per replica (the CLI's options; simulate and the free-network bound use the same). */
export function planArgs(r: MegatronTableRow, micro: number): string[] {
  const v = virtualStages(r);
  return [
    '--hardware', SETTINGS.hardware, '--optimizer', SETTINGS.optimizer, '--dtype', SETTINGS.dtype,
    '--tp', String(r.tp), '--pp', String(r.pp), '--dp', String(dataParallel(r)),
    '--global-batch', String(micro * SETTINGS.microBatch * dataParallel(r)), '--micro-batch', String(SETTINGS.microBatch),
    '--recompute', SETTINGS.recompute,
    ...(r.pp > 1 ? ['--pp-schedule', SETTINGS.ppSchedule, '--vpp', String(v)] : []),
  ];
}

/** The micro-batch counts simulated: the row's own m when it is no more than the second point, else m1 < m2 (see the header). */
export function simulatedCounts(r: MegatronTableRow): number[] {
  const m = microBatches(r);
  const points = r.pp === 1 ? [1, 2] : [2 * r.pp, 3 * r.pp];
  return m <= (points[1] ?? m) ? [m] : points;
}

/** Linear extrapolation of steps at counts [m1, m2] to m (a single point is the row's own m). */
export function extrapolateStep(counts: readonly number[], stepsNs: readonly number[], m: number): number {
  const [m1, m2] = counts;
  const [s1, s2] = stepsNs;
  if (m1 === undefined || s1 === undefined) throw new Error('extrapolateStep: no simulated point');
  if (m2 === undefined || s2 === undefined) return s1;
  return s1 + ((m - m1) * (s2 - s1)) / (m2 - m1);
}

/**
 * The bench's budget for one ASTRA-sim run, in layer passes (ranks x layers a rank runs x
 * micro-batches simulated). Measured here (2 shared cores): row 4 at 1 micro-batch, 256 ranks x
 * 765 layers = 196k layer passes, ran in 70 s and ~1 GiB; 1.5 M is ~9 minutes a run.
 */
export const ASTRA_BUDGET_LAYER_PASSES = 1_500_000;
/**
 * Rows whose every micro-batch fits in this many layer passes are also simulated whole, and the
 * note gives the extrapolation's error against that run (row 1: a check of the method, 33 s here).
 */
export const EXTRAPOLATION_CHECK_LAYER_PASSES = 300_000;
/** ASTRA-sim is killed after this long (simulate --timeout); a killed run is a row note, not a hang. */
export const ASTRA_TIMEOUT_S = 1200;

export interface MegatronResultRow {
  row: number;
  params_b: number;
  gpus: number;
  measured_tflops: number;
  /** null when the row was not simulated (no binary, over the budget, or ASTRA-sim failed). */
  simulated_tflops: number | null;
  /** simulated / measured. */
  ratio: number | null;
  note: string;
  /** The plan with every collective and transfer free, eq. 3's FLOPs over its step: an upper bound. */
  free_network_tflops: number;
  /** The step the TFLOP/s are computed from (extrapolated to the row's micro-batches), ns. */
  step_ns: number | null;
  free_network_step_ns: number;
  /** Micro-batch counts run through ASTRA-sim (or that would have been). */
  simulated_micro_batches: number[];
  /** ranks x layers per rank x the larger simulated count: what the budget is checked on. */
  trace_layer_passes: number;
}

export interface MegatronBenchOptions {
  root: string;
  onProgress?: (done: number, total: number, label: string) => void;
  /** Table rows to run (1-based); default all. */
  rows?: readonly number[];
  /** ASTRA-sim 2.x's analytical binary; default $ASTRA_SIM_BIN. */
  astraSim?: string;
}

export interface MegatronBenchResult {
  suite: 'megatron';
  machine: ReturnType<typeof machineInfo>;
  astraSim: string | null;
  rows: MegatronResultRow[];
  markdown: string;
}

interface FreeNetwork {
  stepNs: number;
  /** Layers the busiest rank runs (a stage's, every chunk). */
  layersPerRank: number;
}

/** The free-network step of the row at `micro` micro-batches, planned in-process as `simulate` plans it (cli/plan-run.ts). */
async function freeNetworkStep(model: string, r: MegatronTableRow, micro: number): Promise<FreeNetwork> {
  const { runPlanStages } = await import('../src/cli/plan-run.js');
  const { buildStepSchedule } = await import('../src/schedule/build.js');
  const { predictFreeNetwork } = await import('../src/predict/free-network.js');
  // The CLI's defaults for what planArgs does not set (scalesim cost model, vector ops on, all params).
  const opts = {
    hardware: SETTINGS.hardware, costModel: 'scalesim', optimizer: SETTINGS.optimizer, vectorOps: 'on', dtype: SETTINGS.dtype, params: 'all',
    tp: r.tp, pp: r.pp, dp: dataParallel(r), globalBatch: micro * SETTINGS.microBatch * dataParallel(r), microBatch: SETTINGS.microBatch,
    recompute: SETTINGS.recompute, ...(r.pp > 1 ? { ppSchedule: SETTINGS.ppSchedule, vpp: virtualStages(r) } : {}),
  } as const;
  const run = await runPlanStages(model, opts, { costed: true });
  const costed = run.costed;
  if (costed === undefined) throw new Error('megatron bench: the plan was not costed');
  const prediction = predictFreeNetwork(buildStepSchedule(costed, {}));
  const perStage = new Map<number, number>();
  for (const l of run.plan.layers) perStage.set(l.stage, (perStage.get(l.stage) ?? 0) + 1);
  return { stepNs: prediction.stepNs, layersPerRank: Math.max(...perStage.values()) };
}

/** One `modtrans simulate` run through the built CLI: the step in ns, or why there is none. */
function simulateStep(root: string, model: string, r: MegatronTableRow, micro: number, binary: string): { stepNs?: number; why?: string; wallS: number } {
  const cli = join(root, 'dist', 'cli', 'main.cjs');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build first`);
  const runDir = mkdtempSync(join(tmpdir(), 'modtrans-megatron-sim-'));
  const started = Date.now();
  try {
    const args = [cli, 'simulate', model, ...planArgs(r, micro), '--cluster', SETTINGS.cluster, '--astra-sim', binary, '--run-dir', runDir, '--format', 'json', '--timeout', String(ASTRA_TIMEOUT_S)];
    // ASTRA-sim writes a log/ folder in its working directory: simulate runs it in the run folder (under the temp dir).
    const child = spawnSync(process.execPath, args, { cwd: runDir, encoding: 'utf8', maxBuffer: 1 << 30, timeout: (ASTRA_TIMEOUT_S + 600) * 1000 });
    const wallS = (Date.now() - started) / 1000;
    if (child.status !== 0) {
      const last = (child.stderr ?? '').trim().split('\n').filter((l) => !l.includes('ranks finished')).pop() ?? `exit ${child.status ?? child.signal}`;
      return { why: last.replace(/^modtrans: /, ''), wallS };
    }
    const step = JSON.parse(child.stdout) as { step_ns: number };
    return { stepNs: step.step_ns, wallS };
  } finally {
    rmSync(runDir, { recursive: true, force: true });
  }
}

const tflops = (r: MegatronTableRow, stepNs: number): number => paperFlopsPerStep(r) / r.gpus / (stepNs * 1e-9) / 1e12;

export async function runMegatronBench(options: MegatronBenchOptions): Promise<MegatronBenchResult> {
  const { root } = options;
  const wanted = options.rows ?? MEGATRON_TABLE1.map((r) => r.row);
  for (const n of wanted) if (!MEGATRON_TABLE1.some((r) => r.row === n)) throw new Error(`--rows ${wanted.join(',')}: no row ${n} (Table 1 has rows 1 to ${MEGATRON_TABLE1.length})`);
  const table = MEGATRON_TABLE1.filter((r) => wanted.includes(r.row));
  const envBinary = process.env['ASTRA_SIM_BIN'];
  const binary = options.astraSim ?? (envBinary === undefined || envBinary === '' ? undefined : envBinary);
  if (binary !== undefined && !existsSync(binary)) throw new Error(`--astra-sim ${binary}: no such file`);
  const rows: MegatronResultRow[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-megatron-'));
  try {
    for (const [i, r] of table.entries()) {
      options.onProgress?.(i, table.length, `row ${r.row} (${r.paramsB} B on ${r.gpus} GPUs)`);
      const model = join(dir, `gpt-row${r.row}.onnx`);
      writeFileSync(model, gptModel(megatronGptOptions(r)));
      const m = microBatches(r);
      const counts = simulatedCounts(r);
      const free: FreeNetwork[] = [];
      for (const c of counts) free.push(await freeNetworkStep(model, r, c));
      const freeStepNs = extrapolateStep(counts, free.map((f) => f.stepNs), m);
      const layersPerRank = free[0]?.layersPerRank ?? 0;
      const tracePasses = r.gpus * layersPerRank * Math.max(...counts);
      const method = counts.length === 1 ? `all ${m} micro-batches simulated` : `simulated at ${counts.join(' and ')} micro-batches, extrapolated linearly to ${m}`;
      const base = {
        row: r.row, params_b: r.paramsB, gpus: r.gpus, measured_tflops: r.tflops,
        free_network_tflops: tflops(r, freeStepNs), free_network_step_ns: Math.round(freeStepNs),
        simulated_micro_batches: counts, trace_layer_passes: tracePasses,
      };
      const settings = `t ${r.tp} x p ${r.pp} x d ${dataParallel(r)}, B ${r.batch}, b ${SETTINGS.microBatch}, m ${m}${r.pp > 1 ? `, interleaved v ${virtualStages(r)}` : ''}`;
      const skip = (why: string): MegatronResultRow => ({ ...base, simulated_tflops: null, ratio: null, step_ns: null, note: `${settings}; not simulated: ${why}; free-network bound ${tflops(r, freeStepNs).toFixed(1)} TFLOP/s` });
      if (binary === undefined) {
        rows.push(skip('no ASTRA-sim binary (--astra-sim BIN or ASTRA_SIM_BIN)'));
        continue;
      }
      if (tracePasses > ASTRA_BUDGET_LAYER_PASSES) {
        rows.push(skip(`trace of ${r.gpus} ranks x ${layersPerRank} layers x ${Math.max(...counts)} micro-batches = ${(tracePasses / 1e6).toFixed(1)} M layer passes, over the bench's budget of ${ASTRA_BUDGET_LAYER_PASSES / 1e6} M per ASTRA-sim run`));
        continue;
      }
      const steps: number[] = [];
      let failed: string | undefined;
      const walls: number[] = [];
      for (const c of counts) {
        options.onProgress?.(i, table.length, `row ${r.row}: ASTRA-sim at ${c} micro-batches`);
        const sim = simulateStep(root, model, r, c, binary);
        walls.push(sim.wallS);
        if (sim.stepNs === undefined) {
          failed = `ASTRA-sim at ${c} micro-batches: ${sim.why ?? 'no step'}`;
          break;
        }
        steps.push(sim.stepNs);
      }
      if (failed !== undefined) {
        rows.push(skip(failed));
        continue;
      }
      const stepNs = extrapolateStep(counts, steps, m);
      const simulated = tflops(r, stepNs);
      let check = '';
      if (counts.length > 1 && r.gpus * layersPerRank * m <= EXTRAPOLATION_CHECK_LAYER_PASSES) {
        options.onProgress?.(i, table.length, `row ${r.row}: ASTRA-sim at all ${m} micro-batches (checks the extrapolation)`);
        const whole = simulateStep(root, model, r, m, binary);
        check = whole.stepNs === undefined
          ? `; the check run at all ${m} micro-batches failed: ${whole.why ?? 'no step'}`
          : `; checked: all ${m} micro-batches simulated give ${(whole.stepNs / 1e6).toFixed(3)} ms, the extrapolation ${(stepNs / 1e6).toFixed(3)} ms (${((100 * (stepNs - whole.stepNs)) / whole.stepNs).toFixed(4)}%, ${Math.round(whole.wallS)} s wall)`;
      }
      rows.push({
        ...base, simulated_tflops: simulated, ratio: simulated / r.tflops, step_ns: Math.round(stepNs),
        note: `${settings}; ${method} (steps ${steps.map((s) => `${(s / 1e6).toFixed(1)} ms`).join(', ')}; ${walls.map((w) => `${Math.round(w)} s`).join(' + ')} wall)${check}; free-network bound ${tflops(r, freeStepNs).toFixed(1)} TFLOP/s`,
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  options.onProgress?.(table.length, table.length, 'done');
  const machine = machineInfo();
  return { suite: 'megatron', machine, astraSim: binary ?? null, rows, markdown: megatronMarkdown(rows, machine, binary) };
}

function megatronMarkdown(rows: readonly MegatronResultRow[], machine: ReturnType<typeof machineInfo>, binary: string | undefined): string {
  const f = (x: number | null, d = 1): string => (x === null ? '-' : x.toFixed(d));
  return [
    `Narayanan et al. (SC21) Table 1 on ${SETTINGS.hardware} x ${SETTINGS.cluster}, ${binary === undefined ? 'no ASTRA-sim binary (simulated columns empty)' : `ASTRA-sim ${binary}`}; ${machine.nproc} core(s), ${machine.cpu}. TFLOP/s by the paper's eq. 3 (recomputation included).`,
    '',
    '| row | params (B) | GPUs | measured TFLOP/s | simulated TFLOP/s | simulated / measured | free-network bound | note |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.row} | ${r.params_b} | ${r.gpus} | ${r.measured_tflops} | ${f(r.simulated_tflops)} | ${f(r.ratio, 3)} | ${f(r.free_network_tflops)} | ${r.note.replace(/\|/g, '\\|')} |`),
    '',
  ].join('\n');
}
