/**
 * `translate --format scalesim -o DIR`: the GEMMs one NPU runs, as SCALE-sim v2 topology CSVs
 * (forward, input gradient, weight gradient, plus the forward as an `-i gemm` M,N,K file) and a
 * `.cfg` of the profile, so any layer can be re-run in real SCALE-sim.
 *
 * SCALE-sim's rules (docs/scalesim-model.md §2-3): a header line, every row ends with a comma (the last field
 * is dropped), no padding, ofmap = ceil((H - R + s) / s), and a name containing "DP" expands into
 * per-channel layers (so "DP" never appears in our names).
 * - Forward conv rows keep the conv's shape. Padding is folded into the ifmap size, H' = (E_h - 1)
 *   x s + R, so SCALE-sim's arithmetic gives our output size; the batch and the NPU's share of
 *   output rows fold into the height (E_h = per-NPU M / E_w, when that is whole).
 * - Everything else (GEMM layers, backward passes, convs whose share is not whole output rows) is
 *   the "mnk" conv row H=M, W=K, R=1, S=K, C=1, N: SCALE-sim's own convention for fwd, input-
 *   gradient (M, K, N) and weight-gradient (K, N, M) GEMMs.
 * - A pass of `count` GEMMs (groups, time steps x gates, heads) is `count` rows `name_<i>`.
 */
import type { Node } from '../ir/graph.js';
import type { HardwareProfile } from '../cost/types.js';
import type { Gemm, GemmWork } from '../layers/types.js';
import type { Layer, LayerPasses } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';
import { shareOf } from '../workload/parallelism.js';
import type { Split } from '../workload/types.js';
import type { ConvShape } from '../cost/memory/layer.js';

/** A topology row in SCALE-sim's conv format: the cost model's conv shape, named. */
export interface ConvRow extends ConvShape {
  name: string;
}

export const CONV_HEADER = 'Layer name,Ifmap height,ifmap width,filter height,filter width,channels,num filters,strides,';
export const GEMM_HEADER = 'Layer,M,N,K,';

/** SCALE-sim-safe name: no commas or spaces, and no "DP" (which would trigger depthwise expansion). */
export function scalesimName(name: string): string {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/DP/g, 'Dp');
}

/** The "mnk" conv row of a GEMM (topology_utils.load_arrays_gemm). */
export function gemmRow(name: string, g: Gemm): ConvRow {
  return { name, ifmapHeight: g.m, ifmapWidth: g.k, filterHeight: 1, filterWidth: g.k, channels: 1, numFilters: g.n, strideHeight: 1, strideWidth: 1 };
}

interface ConvGeometry {
  kernel: [number, number];
  strides: [number, number];
  outWidth: number;
  channelsPerGroup: number;
}

const ints = (node: Node, name: string): number[] | undefined => {
  const a = node.attributes.get(name);
  return a?.kind === 'ints' ? a.value : undefined;
};

/** Kernel, strides and output width of a 1-D or 2-D Conv node, from its weight and output shapes. */
export function convGeometry(node: Node, inferred: InferredModel): ConvGeometry | undefined {
  if (node.opType !== 'Conv') return undefined;
  const weight = inferred.values.get(node.inputs[1] ?? '')?.shape;
  const out = inferred.values.get(node.outputs[0] ?? '')?.shape;
  if (!weight || !out || weight.length < 3 || weight.length > 4 || !weight.every((d) => typeof d === 'number')) return undefined;
  const w = weight as number[];
  const spatial = w.length - 2;
  const strides = ints(node, 'strides') ?? Array<number>(spatial).fill(1);
  // A 1-D conv is a 2-D one of height 1.
  const kernel: [number, number] = spatial === 1 ? [1, w[2]!] : [w[2]!, w[3]!];
  const stride: [number, number] = spatial === 1 ? [1, strides[0]!] : [strides[0]!, strides[1]!];
  const outWidth = out[out.length - 1];
  if (typeof outWidth !== 'number') return undefined;
  return { kernel, strides: stride, outWidth, channelsPerGroup: w[1]! };
}

/** A forward conv row for one NPU's GEMM, when its rows are whole output rows. */
export function convRow(name: string, g: Gemm, geo: ConvGeometry): ConvRow | undefined {
  if (g.m % geo.outWidth !== 0 || g.k !== geo.channelsPerGroup * geo.kernel[0] * geo.kernel[1]) return undefined;
  const outHeight = g.m / geo.outWidth;
  return {
    name,
    ifmapHeight: (outHeight - 1) * geo.strides[0] + geo.kernel[0],
    ifmapWidth: (geo.outWidth - 1) * geo.strides[1] + geo.kernel[1],
    filterHeight: geo.kernel[0],
    filterWidth: geo.kernel[1],
    channels: geo.channelsPerGroup,
    numFilters: g.n,
    strideHeight: geo.strides[0],
    strideWidth: geo.strides[1],
  };
}

function rowText(r: ConvRow): string {
  const strides = r.strideHeight === r.strideWidth ? `${r.strideHeight}` : `${r.strideHeight},${r.strideWidth}`;
  return `${r.name},${r.ifmapHeight},${r.ifmapWidth},${r.filterHeight},${r.filterWidth},${r.channels},${r.numFilters},${strides},`;
}

/** `count` copies of a GEMM as numbered rows (SCALE-sim has no repeat count). */
function expand<T>(name: string, work: readonly GemmWork[], row: (name: string, g: Gemm) => T): T[] {
  const rows: T[] = [];
  for (const { gemm, count } of work) {
    for (let i = 0; i < count; i++) rows.push(row(count > 1 ? `${name}_${rows.length}` : name, gemm));
  }
  return rows;
}

export interface ScaleSimTopologies {
  fwd: ConvRow[];
  inputGrad: ConvRow[];
  weightGrad: ConvRow[];
  /** The forward GEMMs as `name, M, N, K` rows (for SCALE-sim's `-i gemm`). */
  fwdGemm: { name: string; gemm: Gemm }[];
}

/**
 * `shares`: each layer's GEMMs on one rank as the parallel plan gives them (what the traces hold),
 * or a legacy split to derive them from.
 */
export function scalesimTopologies(layers: readonly Layer[], inferred: InferredModel, shares: Split | readonly LayerPasses[]): ScaleSimTopologies {
  const nodes = new Map(inferred.order.map((n) => [n.name, n]));
  const out: ScaleSimTopologies = { fwd: [], inputGrad: [], weightGrad: [], fwdGemm: [] };
  for (const [i, layer] of layers.entries()) {
    if (layer.kind === 'embedding' || layer.kind === 'vector') continue; // no GEMM
    const name = scalesimName(layer.name);
    const passes = Array.isArray(shares) ? shares[i] : shareOf(layer, shares as Split).passes;
    if (passes === undefined) throw new Error(`internal error: no share for layer ${layer.name}`);
    const node = nodes.get(layer.node);
    const geo = node ? convGeometry(node, inferred) : undefined;
    out.fwd.push(...expand(name, passes.fwd, (n, g) => (geo && convRow(n, g, geo)) || gemmRow(n, g)));
    out.inputGrad.push(...expand(name, passes.ig, gemmRow));
    out.weightGrad.push(...expand(name, passes.wg, gemmRow));
    out.fwdGemm.push(...expand(name, passes.fwd, (n, gemm) => ({ name: n, gemm })));
  }
  // The DP rewrite and the _i suffixes of repeated GEMMs can collide with other layers' names.
  for (const rows of [out.fwd, out.inputGrad, out.weightGrad, out.fwdGemm]) makeNamesUnique(rows);
  return out;
}

/** Renames repeated row names in place (`x`, `x_dup2`, ...); the three passes list rows alike. */
function makeNamesUnique(rows: { name: string }[]): void {
  const used = new Set<string>();
  for (const row of rows) {
    let name = row.name;
    for (let i = 2; used.has(name); i++) name = `${row.name}_dup${i}`;
    used.add(name);
    row.name = name;
  }
}

export function convCsv(rows: readonly ConvRow[]): string {
  return [CONV_HEADER, ...rows.map(rowText)].join('\n') + '\n';
}

export function gemmCsv(rows: readonly { name: string; gemm: Gemm }[]): string {
  return [GEMM_HEADER, ...rows.map((r) => `${r.name},${r.gemm.m},${r.gemm.n},${r.gemm.k},`)].join('\n') + '\n';
}

/**
 * A SCALE-sim v2 .cfg for one array of the profile. SCALE-sim's word is 1 byte, so SRAM sizes are
 * given in KiB of words; the DRAM bandwidth is the per-array share in words/cycle (read only in
 * USER mode). SCALE-sim has no clock and one array: times and multi-array splits stay modtrans's.
 */
export function scalesimCfg(profile: HardwareProfile): string {
  const kib = (bytes: number): number => Math.max(1, Math.floor(bytes / profile.elementBytes / 1024));
  const bandwidth = Math.max(1, Math.floor(profile.dramBandwidthWordsPerCycle / profile.arrays));
  return [
    `# modtrans export of hardware profile '${profile.name}' (${profile.clockMHz} MHz, ${profile.arrays} array(s), ${profile.elementBytes}-byte words).`,
    '# SCALE-sim simulates one array; modtrans spreads folds over the arrays and converts cycles with the clock.',
    '[general]',
    `run_name = ${scalesimName(profile.name)}`,
    '',
    '[architecture_presets]',
    `ArrayHeight:    ${profile.arrayRows}`,
    `ArrayWidth:     ${profile.arrayCols}`,
    `IfmapSramSzkB:    ${kib(profile.ifmapSramBytes)}`,
    `FilterSramSzkB:   ${kib(profile.filterSramBytes)}`,
    `OfmapSramSzkB:    ${kib(profile.ofmapSramBytes)}`,
    'IfmapOffset:    0',
    'FilterOffset:   10000000',
    'OfmapOffset:    20000000',
    `Dataflow : ${profile.dataflow}`,
    `Bandwidth : ${bandwidth}`,
    'MemoryBanks: 1',
    '',
    '[run_presets]',
    `InterfaceBandwidth: ${profile.bandwidthMode === 'user' ? 'USER' : 'CALC'}`,
    '',
  ].join('\n');
}

/** File name -> content for `translate --format scalesim -o DIR`. */
export function scalesimExport(stem: string, topo: ScaleSimTopologies, profile: HardwareProfile): Map<string, string> {
  return new Map([
    [`${stem}_fwd.csv`, convCsv(topo.fwd)],
    [`${stem}_input_grad.csv`, convCsv(topo.inputGrad)],
    [`${stem}_weight_grad.csv`, convCsv(topo.weightGrad)],
    [`${stem}_fwd_gemm.csv`, gemmCsv(topo.fwdGemm)],
    [`${scalesimName(profile.name)}.cfg`, scalesimCfg(profile)],
  ]);
}
