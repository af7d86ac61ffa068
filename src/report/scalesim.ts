/**
 * What `translate --format scalesim` exports, built from the plan: the GEMMs one rank runs as
 * SCALE-sim v2 topology rows, and the profile's numbers in SCALE-sim's config units. The writer
 * (writers/scalesim-topology.ts) prints them.
 *
 * SCALE-sim's rules (docs/scalesim-model.md §2-3): ofmap = ceil((H - R + s) / s), no padding, and a
 * name containing "DP" expands into per-channel layers (so "DP" never appears in our names).
 * - Forward conv rows keep the conv's shape. Padding is folded into the ifmap size, H' = (E_h - 1)
 *   x s + R, so SCALE-sim's arithmetic gives our output size; the batch and the NPU's share of
 *   output rows fold into the height (E_h = per-NPU M / E_w, when that is whole).
 * - Everything else (GEMM layers, backward passes, convs whose share is not whole output rows) is
 *   the "mnk" conv row H=M, W=K, R=1, S=K, C=1, N: SCALE-sim's own convention for fwd, input-
 *   gradient (M, K, N) and weight-gradient (K, N, M) GEMMs.
 * - A pass of `count` GEMMs (groups, time steps x gates, heads) is `count` rows `name_<i>`.
 */
import type { ConvShape } from '../cost/access/layer.js';
import type { ScaleSimConfig } from '../cost/scalesim-config.js';
import type { HardwareProfile } from '../cost/types.js';
import type { Node } from '../ir/graph.js';
import type { Gemm, GemmWork, Layer, LayerPasses } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';

/** A topology row in SCALE-sim's conv format: the cost model's conv shape, named. */
export interface ConvRow extends ConvShape {
  name: string;
}

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
  const [, channelsPerGroup, kernelH, kernelW] = weight as number[];
  const [strideH, strideW] = ints(node, 'strides') ?? [1, 1];
  if (channelsPerGroup === undefined || kernelH === undefined || strideH === undefined) return undefined;
  // A 1-D conv is a 2-D one of height 1.
  let kernel: [number, number] = [1, kernelH];
  let stride: [number, number] = [1, strideH];
  if (kernelW !== undefined) {
    if (strideW === undefined) return undefined;
    kernel = [kernelH, kernelW];
    stride = [strideH, strideW];
  }
  const outWidth = out[out.length - 1];
  if (typeof outWidth !== 'number') return undefined;
  return { kernel, strides: stride, outWidth, channelsPerGroup };
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
 * `shares`: each layer's GEMMs on one rank as the parallel plan gives them (`plan.layers[i].passes`,
 * what the traces hold); without, each layer's whole GEMMs (one NPU).
 */
export function scalesimTopologies(layers: readonly Layer[], inferred: InferredModel, shares?: readonly LayerPasses[]): ScaleSimTopologies {
  const nodes = new Map(inferred.order.map((n) => [n.name, n]));
  const out: ScaleSimTopologies = { fwd: [], inputGrad: [], weightGrad: [], fwdGemm: [] };
  for (const [i, layer] of layers.entries()) {
    if (layer.kind === 'embedding' || layer.kind === 'vector') continue; // no GEMM
    const name = scalesimName(layer.name);
    const passes = shares === undefined ? layer.passes : shares[i];
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

/**
 * A SCALE-sim v2 .cfg for one array of a profile: the file's values (the type its reader returns)
 * and the profile's figures its header comment names.
 */
export interface ScaleSimCfgExport extends ScaleSimConfig {
  /** The profile's name as given, for the header comment. */
  profileName: string;
  clockMHz: number;
  arrays: number;
  elementBytes: number;
}

/** The operand address offsets SCALE-sim's own shipped configs use. */
const ADDRESS_OFFSETS = { ifmapOffset: 0, filterOffset: 10_000_000, ofmapOffset: 20_000_000 };

/**
 * SCALE-sim's word is 1 byte, so SRAM sizes are KiB of words; the DRAM bandwidth is the per-array
 * share in words/cycle. SCALE-sim has no clock and one array: times and multi-array splits stay modtrans's.
 */
export function scalesimConfigOf(profile: HardwareProfile): ScaleSimCfgExport {
  const kib = (bytes: number): number => Math.max(1, Math.floor(bytes / profile.elementBytes / 1024));
  return {
    profileName: profile.name,
    runName: scalesimName(profile.name),
    clockMHz: profile.clockMHz,
    arrays: profile.arrays,
    elementBytes: profile.elementBytes,
    arrayHeight: profile.arrayRows,
    arrayWidth: profile.arrayCols,
    ifmapSramKiB: kib(profile.ifmapSramBytes),
    filterSramKiB: kib(profile.filterSramBytes),
    ofmapSramKiB: kib(profile.ofmapSramBytes),
    ...ADDRESS_OFFSETS,
    dataflow: profile.dataflow,
    // One array's share of the DRAM bandwidth in words per cycle (at least 1; SCALE-sim reads it in USER mode only).
    bandwidths: [Math.max(1, Math.floor(profile.dramBandwidthWordsPerCycle / profile.arrays))],
    bandwidthMode: profile.bandwidthMode,
  };
}
