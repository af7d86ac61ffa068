/**
 * The per-layer report behind `inspect` and `translate --report`: GEMM dims, MACs, parameters,
 * activation sizes and the cost of every training pass, as JSON, CSV or an aligned text table.
 */
import { costLayerPasses } from '../cost/training.js';
import type { CostModel, GemmCost } from '../cost/types.js';
import { ownParameters, uniqueParameterCount } from '../layers/params.js';
import type { Layer } from '../layers/types.js';
import type { LayerPlan, ParallelPlan, PlannedCollective, TpRole } from '../plan/types.js';
import type { PredictionSummary } from '../predict/free-network.js';
import { costLayer } from '../schedule/cost.js';

export interface PassReport {
  cycles: number;
  /** The cycles through the profile's clock, rounded to whole ns (as ASTRA-sim's text columns). */
  ns: number;
  stallCycles: number;
  overallUtilPct: number;
}

export interface LayerReport {
  name: string;
  op: string;
  node: string;
  kind: Layer['kind'];
  outputShape: number[];
  gemm: Layer['gemm'];
  gemmCount: number;
  macs: number;
  params: number;
  weightParams: number;
  biasParams: number;
  paramBytes: number;
  weightBytes: number;
  biasBytes: number;
  inputActivationBytes: number;
  outputActivationBytes: number;
  fwd: PassReport;
  ig: PassReport;
  wg: PassReport;
  updateCycles: number;
  /** Vector layers only: op class, elements processed and forward bytes read and written (model dtype). */
  vector?: { opClass: string; elements: number; bytesIn: number; bytesOut: number };
  updateNs: number;
  /** With a parallel plan: the layer's tensor-parallel role and what one rank runs of it. */
  role?: TpRole;
  roleReason?: string;
  rank?: RankReport;
  /** With a parallel plan: the pipeline stage holding the layer. */
  stage?: number;
}

/** A pipeline stage: its layers (first and last name) and one rank's forward + backward time per micro-batch. */
export interface StageReport {
  stage: number;
  layers: number;
  first: string;
  last: string;
  /** Model chunks (interleaved schedule): each chunk's first and last layer. */
  chunks: { first: string; last: string }[];
  cycles: number;
  ns: number;
}

/** One rank's share of a layer per micro-batch (what the traces hold), with its collectives. */
export interface RankReport {
  fwdCycles: number;
  igCycles: number;
  wgCycles: number;
  weightParams: number;
  biasParams: number;
  collectives: { where: string; type: string; bytes: number; group: string }[];
}

function rankColumns(plan: ParallelPlan, l: LayerPlan, model: CostModel): Pick<LayerReport, 'role' | 'roleReason' | 'rank' | 'stage'> {
  const c = costLayer(plan, l, model);
  const collectives = Object.entries(l.collectives).flatMap(([where, list]) => (list as PlannedCollective[]).map((x) => ({ where, type: x.type, bytes: x.bytes, group: x.group })));
  return {
    role: l.role,
    roleReason: l.reason,
    stage: l.stage,
    rank: { fwdCycles: c.fwd.cycles, igCycles: l.needsInputGrad ? c.ig.cycles : 0, wgCycles: c.wg.cycles, weightParams: l.weightParamsHeld, biasParams: l.biasParamsHeld, collectives },
  };
}

export interface ModelReport {
  model: string;
  hardware: string;
  costModel: string;
  /** calc: DRAM reads never stall; user: bandwidth-limited, stalls counted. */
  bandwidthMode: string;
  clockMHz: number;
  layers: LayerReport[];
  /** With pipeline parallelism: each stage's layers and time (the plan's cut). */
  stages?: StageReport[];
  totals: {
    layers: number;
    macs: number;
    /** Parameters of the model: a tensor several layers hold counts once. */
    params: number;
    paramBytes: number;
    fwdCycles: number;
    igCycles: number;
    wgCycles: number;
    updateCycles: number;
    stallCycles: number;
    fwdNs: number;
    igNs: number;
    wgNs: number;
    updateNs: number;
    /** Cycles of the vector layers (all passes), included in the pass totals; only when there are vector layers. */
    vectorCycles?: number;
  };
  /** translate: the step predicted with communication free (src/predict). */
  prediction?: PredictionSummary;
}

const toNs = (cycles: number, clockMHz: number): number => Math.round((cycles * 1000) / clockMHz);
const pass = (c: GemmCost, clockMHz: number): PassReport => ({
  cycles: c.cycles, ns: toNs(c.cycles, clockMHz), stallCycles: c.stallCycles, overallUtilPct: round(c.overallUtilPct, 4),
});

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function buildReport(modelPath: string, layers: readonly Layer[], model: CostModel, plan?: ParallelPlan): ModelReport {
  const clockMHz = model.profile.clockMHz;
  const own = ownParameters(layers);
  // Bytes of the parameters no earlier layer holds (shared tensors are updated once).
  const ownBytes = layers.map((l, i) => {
    const params = l.weightParams + l.biasParams;
    return params > 0 ? Math.round(((own[i]!.weightParams + own[i]!.biasParams) / params) * (l.weightBytes + l.biasBytes)) : 0;
  });
  const rows = layers.map((l, i): LayerReport => {
    const cost = costLayerPasses(l.passes, ownBytes[i]!, model);
    const v = l.vector;
    return {
      name: l.name, op: l.op, node: l.node, kind: l.kind, outputShape: l.outputShape, gemm: l.gemm, gemmCount: l.gemmCount,
      macs: l.macs, params: l.weightParams + l.biasParams, weightParams: l.weightParams, biasParams: l.biasParams,
      paramBytes: l.weightBytes + l.biasBytes, weightBytes: l.weightBytes, biasBytes: l.biasBytes,
      inputActivationBytes: l.inputActivationBytes, outputActivationBytes: l.outputActivationBytes,
      fwd: pass(cost.fwd, clockMHz), ig: pass(cost.ig, clockMHz), wg: pass(cost.wg, clockMHz),
      updateCycles: cost.updateCycles, updateNs: toNs(cost.updateCycles, clockMHz),
      ...(plan === undefined ? {} : rankColumns(plan, plan.layers[i]!, model)),
      ...(v ? { vector: { opClass: v.opClass, elements: v.elements, bytesIn: v.bytesIn, bytesOut: v.bytesOut } } : {}),
    };
  });
  const sum = (f: (r: LayerReport) => number): number => rows.reduce((a, r) => a + f(r), 0);
  return {
    model: modelPath,
    hardware: model.profile.name,
    costModel: model.name,
    bandwidthMode: model.profile.bandwidthMode,
    clockMHz: model.profile.clockMHz,
    layers: rows,
    ...(plan !== undefined && plan.world.pp > 1 ? { stages: stageReports(plan, clockMHz) } : {}),
    totals: {
      layers: rows.length,
      macs: sum((r) => r.macs),
      params: uniqueParameterCount(layers),
      paramBytes: ownBytes.reduce((a, b) => a + b, 0),
      fwdCycles: sum((r) => r.fwd.cycles),
      igCycles: sum((r) => r.ig.cycles),
      wgCycles: sum((r) => r.wg.cycles),
      updateCycles: sum((r) => r.updateCycles),
      stallCycles: sum((r) => r.fwd.stallCycles + r.ig.stallCycles + r.wg.stallCycles),
      fwdNs: sum((r) => r.fwd.ns),
      igNs: sum((r) => r.ig.ns),
      wgNs: sum((r) => r.wg.ns),
      updateNs: sum((r) => r.updateNs),
      ...(rows.some((r) => r.vector) ? { vectorCycles: sum((r) => (r.vector ? r.fwd.cycles + r.ig.cycles + r.wg.cycles : 0)) } : {}),
    },
  };
}

export function stageReports(plan: ParallelPlan, clockMHz: number): StageReport[] {
  const name = (i: number): string => plan.layers[i]!.layer.name;
  return plan.pipeline.stages.map((s, stage) => ({
    stage,
    layers: s.layers.length,
    first: name(s.layers[0]!),
    last: name(s.layers[s.layers.length - 1]!),
    chunks: s.chunks.map((c) => ({ first: name(c[0]!), last: name(c[c.length - 1]!) })),
    cycles: s.cycles,
    ns: toNs(s.cycles, clockMHz),
  }));
}

/** Flat columns shared by the CSV and the text table. */
const COLUMNS: [string, (r: LayerReport) => string | number][] = [
  ['name', (r) => r.name],
  ['op', (r) => r.op],
  ['role', (r) => r.role ?? ''],
  ['stage', (r) => r.stage ?? ''],
  ['kind', (r) => r.kind],
  ['op_class', (r) => r.vector?.opClass ?? ''],
  ['elements', (r) => r.vector?.elements ?? ''],
  ['output_shape', (r) => r.outputShape.join('x')],
  ['fwd_m', (r) => r.gemm.fwd.m],
  ['fwd_n', (r) => r.gemm.fwd.n],
  ['fwd_k', (r) => r.gemm.fwd.k],
  ['gemm_count', (r) => r.gemmCount],
  ['macs', (r) => r.macs],
  ['weight_params', (r) => r.weightParams],
  ['bias_params', (r) => r.biasParams],
  ['param_bytes', (r) => r.paramBytes],
  ['in_act_bytes', (r) => r.inputActivationBytes],
  ['out_act_bytes', (r) => r.outputActivationBytes],
  ['fwd_cycles', (r) => r.fwd.cycles],
  ['ig_cycles', (r) => r.ig.cycles],
  ['wg_cycles', (r) => r.wg.cycles],
  ['update_cycles', (r) => r.updateCycles],
  ['stall_cycles', (r) => r.fwd.stallCycles + r.ig.stallCycles + r.wg.stallCycles],
  ['fwd_ns', (r) => r.fwd.ns],
  ['ig_ns', (r) => r.ig.ns],
  ['wg_ns', (r) => r.wg.ns],
  ['update_ns', (r) => r.updateNs],
  ['rank_fwd_cycles', (r) => r.rank?.fwdCycles ?? ''],
  ['rank_ig_cycles', (r) => r.rank?.igCycles ?? ''],
  ['rank_wg_cycles', (r) => r.rank?.wgCycles ?? ''],
  ['rank_collectives', (r) => (r.rank?.collectives ?? []).map((c) => `${c.type}:${c.bytes}@${c.group}`).join(' ')],
  ['fwd_util_pct', (r) => r.fwd.overallUtilPct.toFixed(2)],
  ['ig_util_pct', (r) => r.ig.overallUtilPct.toFixed(2)],
  ['wg_util_pct', (r) => r.wg.overallUtilPct.toFixed(2)],
];

/** The vector columns only appear when some layer is a vector layer (GEMM-only reports keep their columns). */
const VECTOR_COLUMNS = new Set(['op_class', 'elements']);
/** The stage column only with pipeline parallelism. */
function columnsOf(report: ModelReport): typeof COLUMNS {
  const hidden = new Set([...(report.layers.some((r) => r.vector) ? [] : VECTOR_COLUMNS), ...(report.stages === undefined ? ['stage'] : [])]);
  return COLUMNS.filter(([h]) => !hidden.has(h));
}

export async function reportToCsv(report: ModelReport): Promise<string> {
  const { stringify } = await import('csv-stringify/sync');
  const columns = columnsOf(report);
  const records = report.layers.map((r) => columns.map(([, f]) => f(r)));
  return stringify(records, { header: true, columns: columns.map(([h]) => h) });
}

export function reportToJson(report: ModelReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}

export function reportToTable(report: ModelReport): string {
  const hidden = ['kind', 'bias_params', 'in_act_bytes', 'out_act_bytes', 'rank_collectives'];
  // Per-rank columns only when a rank differs from the whole layer (tensor parallelism).
  if (!report.layers.some((r) => r.rank !== undefined && (r.rank.fwdCycles !== r.fwd.cycles || r.rank.collectives.length > 0))) hidden.push('rank_fwd_cycles', 'rank_ig_cycles', 'rank_wg_cycles');
  const shown = columnsOf(report).filter(([h]) => !hidden.includes(h));
  const header = shown.map(([h]) => h);
  const body = report.layers.map((r) => shown.map(([, f]) => String(f(r))));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const numeric = shown.map(([h]) => !['name', 'op', 'role', 'op_class', 'output_shape'].includes(h));
  const line = (cells: string[]): string => cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const t = report.totals;
  const footer = [
    `${t.layers} layers, ${t.macs.toLocaleString('en-US')} MACs, ${t.params.toLocaleString('en-US')} params (${t.paramBytes.toLocaleString('en-US')} B)`,
    `cycles on ${report.hardware} (${report.costModel}, ${report.bandwidthMode} bandwidth, ${report.clockMHz} MHz): fwd ${t.fwdCycles.toLocaleString('en-US')}, ig ${t.igCycles.toLocaleString('en-US')}, wg ${t.wgCycles.toLocaleString('en-US')}, update ${t.updateCycles.toLocaleString('en-US')}, stalls ${t.stallCycles.toLocaleString('en-US')}`,
    `ns (cycles x 1000 / ${report.clockMHz} MHz): fwd ${t.fwdNs.toLocaleString('en-US')}, ig ${t.igNs.toLocaleString('en-US')}, wg ${t.wgNs.toLocaleString('en-US')}, update ${t.updateNs.toLocaleString('en-US')}`,
  ];
  for (const s of report.stages ?? []) {
    footer.push(`stage ${s.stage}: ${s.layers} layers ${s.chunks.map((c) => `${c.first} .. ${c.last}`).join(', ')}; fwd + bwd ${s.cycles.toLocaleString('en-US')} cycles (${s.ns.toLocaleString('en-US')} ns) per micro-batch on one rank`);
  }
  const vectorLayers = report.layers.filter((r) => r.vector).length;
  if (vectorLayers > 0) {
    const all = t.fwdCycles + t.igCycles + t.wgCycles;
    const vectorCycles = t.vectorCycles ?? 0;
    footer.push(`vector ops: ${vectorLayers} layers, ${vectorCycles.toLocaleString('en-US')} cycles (${all > 0 ? ((100 * vectorCycles) / all).toFixed(1) : '0.0'}% of compute; stalls of vector layers are their memory-bound excess)`);
  }
  return [line(header), ...body.map(line), '', ...footer].join('\n') + '\n';
}
