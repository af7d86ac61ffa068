/**
 * The `gpu` bench suite: GEMM times of the multi-core profiles (cost/multicore.ts) against real
 * A100 latencies, and each profile against its own roofline.
 *
 * The measured figures are the real NVIDIA A100 (80 GB) FP16 GEMM latencies LLMCompass validates
 * against (Zhang et al., ISCA 2024, Figure 5a/5b; its artifact's
 * ae/figure5/ab/real_hardware/matmul_A100.csv, PrincetonUniversity/LLMCompass at b95c6c9): M x N x K
 * and milliseconds, copied below. For `a100-sxm-80gb` the ratio is modelled / measured; every
 * profile also gets modelled / roofline, where roofline = max(2MNK / peak FLOP/s, (MK + KN + MN)
 * x element bytes / HBM bandwidth). No other part has published latencies for these shapes here,
 * so the other profiles' ratios are against their own rooflines only.
 */
import { loadHardwareProfile } from '../src/cost/hardware.js';
import { peakFlopsPerSecond } from '../src/cost/multicore.js';
import { scalesimCostModel } from '../src/cost/scalesim-model.js';
import { costVectorPass } from '../src/cost/vector.js';
import type { VectorOpClass } from '../src/ir/op-class.js';

/** [M, N, K, measured ms] of LLMCompass's real-A100 matmul CSV (FP16). */
export const A100_MEASURED_GEMMS: readonly (readonly [number, number, number, number])[] = [
  [64, 12288, 12288, 0.19], [128, 12288, 12288, 0.2003], [256, 12288, 12288, 0.3185], [512, 12288, 12288, 0.6118],
  [1024, 12288, 12288, 1.199], [2048, 12288, 12288, 2.3586], [4096, 12288, 12288, 4.4576], [8192, 12288, 12288, 8.6216],
  [16384, 12288, 12288, 17.0307], [32768, 12288, 12288, 35.4407],
  [8192, 64, 64, 0.0296], [8192, 128, 128, 0.031], [8192, 256, 256, 0.0356], [8192, 512, 512, 0.0471],
  [8192, 1024, 1024, 0.0927], [8192, 2048, 2048, 0.2818], [8192, 4096, 4096, 1.021], [8192, 8192, 8192, 3.9614],
  [8192, 16384, 16384, 15.0087], [8192, 32768, 32768, 61.1346],
];

/**
 * LLMCompass's real-A100 FP16 vector-op throughputs (same artifact: ae/figure5/cf, de and g,
 * real_hardware/{softmax,layernorm,gelu}_A100.csv), in G elements/s (its scripts write
 * M x N / latency / 1e9): [M, N, G elements/s]; softmax and LayerNorm are row-wise over N, GELU is
 * over M elements (N = 1).
 */
export const A100_MEASURED_VECTOR: Readonly<Record<'softmax' | 'layernorm' | 'gelu', readonly (readonly [number, number, number])[]>> = {
  softmax: [
    [4096, 32, 9.996], [4096, 1024, 152.98], [4096, 4096, 204.56], [4096, 32768, 240.89], [32, 4096, 8.458], [1024, 4096, 137.44], [32768, 4096, 278.83],
  ],
  layernorm: [
    [4096, 32, 2.476], [4096, 1024, 78.889], [4096, 4096, 211.32], [4096, 32768, 199.27], [32, 4096, 2.499], [1024, 4096, 79.603], [32768, 4096, 385.85],
  ],
  gelu: [
    [1024, 1, 0.02126], [1048576, 1, 21.935], [16777216, 1, 210.37], [134217728, 1, 360.17], [536870912, 1, 390.33],
  ],
};

export const GPU_BENCH_PROFILES = ['a100-sxm-80gb', 'h100-sxm', 'mi300x', 'tpu-v4-chip', 'tpu-v5p-chip'] as const;

export interface GpuBenchRow {
  profile: string;
  m: number;
  n: number;
  k: number;
  modelledMs: number;
  rooflineMs: number;
  /** modelled / roofline (>= 1 up to rounding: the model adds fill, drain and idle cores). */
  vsRoofline: number;
  /** Real A100 ms (LLMCompass), on every profile's row for comparison. */
  measuredA100Ms: number;
  /** modelled / measured, for a100-sxm-80gb only. */
  vsMeasured?: number;
}

export interface VectorBenchRow {
  op: string;
  m: number;
  n: number;
  modelledUs: number;
  measuredUs: number;
  /** modelled / measured (a100-sxm-80gb). */
  ratio: number;
}

export interface GpuBenchResult {
  suite: 'gpu';
  rows: GpuBenchRow[];
  /** a100-sxm-80gb's forward softmax, LayerNorm and GELU against LLMCompass's real A100. */
  vector: VectorBenchRow[];
  /** Per profile: geometric mean and range of vsMeasured (A100) and vsRoofline. */
  summary: { profile: string; peakTflops: number; geomeanVsRoofline: number; geomeanVsMeasured?: number; minVsMeasured?: number; maxVsMeasured?: number }[];
  markdown: string;
}

const geomean = (xs: readonly number[]): number => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

export async function runGpuBench(options: { onProgress?: (done: number, total: number, label: string) => void } = {}): Promise<GpuBenchResult> {
  const rows: GpuBenchRow[] = [];
  const summary: GpuBenchResult['summary'] = [];
  for (const [i, name] of GPU_BENCH_PROFILES.entries()) {
    options.onProgress?.(i, GPU_BENCH_PROFILES.length, name);
    const profile = await loadHardwareProfile(name);
    const model = scalesimCostModel(profile);
    const peak = peakFlopsPerSecond(profile);
    const hbmBytesPerSecond = profile.dramBandwidthWordsPerCycle * profile.elementBytes * profile.clockMHz * 1e6;
    const mine: GpuBenchRow[] = [];
    for (const [m, n, k, measuredA100Ms] of A100_MEASURED_GEMMS) {
      const modelledMs = model.costGemm({ m, n, k }).cycles / (profile.clockMHz * 1e3);
      const rooflineMs = 1e3 * Math.max((2 * m * n * k) / peak, ((m * k + k * n + m * n) * profile.elementBytes) / hbmBytesPerSecond);
      mine.push({
        profile: name, m, n, k, modelledMs, rooflineMs, vsRoofline: modelledMs / rooflineMs, measuredA100Ms,
        ...(name === 'a100-sxm-80gb' ? { vsMeasured: modelledMs / measuredA100Ms } : {}),
      });
    }
    rows.push(...mine);
    const measured = mine.flatMap((r) => (r.vsMeasured === undefined ? [] : [r.vsMeasured]));
    summary.push({
      profile: name,
      peakTflops: peak / 1e12,
      geomeanVsRoofline: geomean(mine.map((r) => r.vsRoofline)),
      ...(measured.length > 0 ? { geomeanVsMeasured: geomean(measured), minVsMeasured: Math.min(...measured), maxVsMeasured: Math.max(...measured) } : {}),
    });
  }
  options.onProgress?.(GPU_BENCH_PROFILES.length, GPU_BENCH_PROFILES.length, 'done');
  const vector = await vectorRows();
  return { suite: 'gpu', rows, vector, summary, markdown: toMarkdown(rows, summary, vector) };
}

/** FP16 forward passes on a100-sxm-80gb: each reads its M x N input and writes its output once. */
async function vectorRows(): Promise<VectorBenchRow[]> {
  const profile = await loadHardwareProfile('a100-sxm-80gb');
  const rows: VectorBenchRow[] = [];
  for (const [op, shapes] of Object.entries(A100_MEASURED_VECTOR)) {
    for (const [m, n, gElementsPerSecond] of shapes) {
      const elements = m * n;
      const work = { opClass: op as VectorOpClass, elements, bytesIn: 2 * elements, bytesOut: 2 * elements, hasParams: op === 'layernorm' };
      const modelledUs = costVectorPass(work, 'fwd', profile).cycles / profile.clockMHz;
      const measuredUs = elements / (gElementsPerSecond * 1e3);
      rows.push({ op, m, n, modelledUs, measuredUs, ratio: modelledUs / measuredUs });
    }
  }
  return rows;
}

function toMarkdown(rows: readonly GpuBenchRow[], summary: GpuBenchResult['summary'], vector: readonly VectorBenchRow[]): string {
  const f = (x: number): string => (x >= 1 ? x.toFixed(3) : x.toPrecision(3));
  const lines = [
    'GEMM times (FP16/BF16) of the multi-core profiles. Measured: real A100 latencies from LLMCompass (ISCA 2024, Fig. 5a/b; its artifact\'s matmul_A100.csv).',
    '',
    '| profile | peak TFLOP/s | geomean model/roofline | geomean model/measured A100 | range |',
    '|---|---|---|---|---|',
    ...summary.map((s) => `| ${s.profile} | ${s.peakTflops.toFixed(1)} | ${f(s.geomeanVsRoofline)} | ${s.geomeanVsMeasured === undefined ? '-' : f(s.geomeanVsMeasured)} | ${s.minVsMeasured === undefined ? '-' : `${f(s.minVsMeasured)} .. ${f(s.maxVsMeasured ?? 0)}`} |`),
    '',
    '| profile | M x N x K | modelled ms | roofline ms | model/roofline | measured A100 ms | model/measured |',
    '|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.profile} | ${r.m}x${r.n}x${r.k} | ${f(r.modelledMs)} | ${f(r.rooflineMs)} | ${f(r.vsRoofline)} | ${r.measuredA100Ms} | ${r.vsMeasured === undefined ? '-' : f(r.vsMeasured)} |`),
    '',
    'Vector ops (FP16 forward) on a100-sxm-80gb against LLMCompass\'s real A100 (Fig. 5c-g):',
    '',
    '| op | M x N | modelled us | measured us | model/measured |',
    '|---|---|---|---|---|',
    ...vector.map((r) => `| ${r.op} | ${r.m}x${r.n} | ${f(r.modelledUs)} | ${f(r.measuredUs)} | ${f(r.ratio)} |`),
  ];
  return lines.join('\n') + '\n';
}
