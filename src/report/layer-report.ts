/**
 * The per-layer report behind `inspect` and `translate --report`: GEMM dims, MACs, parameters,
 * activation sizes and the cost of every training pass, and with a plan each layer's per-rank
 * share and the pipeline stages. Built here, where the costing happens; writers/layer-report.ts
 * prints it as JSON, CSV or an aligned text table.
 */
import { LayerPassesCosts, costLayerPasses } from '../cost/training.js';
import { at, last } from '../errors.js';
import type { CostModel, GemmCost } from '../cost/types.js';
import { ownParameters, uniqueParameterCount } from '../layers/params.js';
import type { Layer } from '../layers/types.js';
import type { LayerPlan, ParallelPlan, PlannedCollective, TpRole } from '../plan/types.js';
import type { PredictionSummary } from '../predict/free-network.js';
import { heldParams } from '../schedule/cost.js';

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

function rankColumns(l: LayerPlan, costs: LayerPassesCosts): Pick<LayerReport, 'role' | 'roleReason' | 'rank' | 'stage'> {
  const c = costs.of(l.passes);
  const { beforeFwd, afterFwd, beforeBwd, afterIg } = l.collectives;
  const none = beforeFwd.length === 0 && afterFwd.length === 0 && beforeBwd.length === 0 && afterIg.length === 0;
  const collectives = none ? [] : Object.entries(l.collectives).flatMap(([where, list]) => (list as PlannedCollective[]).map((x) => ({ where, type: x.type, bytes: x.bytes, group: x.group })));
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
  /**
   * With a plan: the parameters one rank of each pipeline stage holds (its tensor-parallel shares,
   * a shared tensor once, the parameters outside every layer on the last stage), and the plan's T.
   */
  rankParams?: { tp: number; stages: { stage: number; params: number }[]; outsideLayers: number };
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
    const owned = at(own, i);
    return params > 0 ? Math.round(((owned.weightParams + owned.biasParams) / params) * (l.weightBytes + l.biasBytes)) : 0;
  });
  // One rank's cycles: costLayer's, from the passes alone (shared passes costed once).
  const rankCosts = new LayerPassesCosts(model);
  const rows = layers.map((l, i): LayerReport => {
    const cost = costLayerPasses(l.passes, at(ownBytes, i), model);
    const v = l.vector;
    return {
      name: l.name, op: l.op, node: l.node, kind: l.kind, outputShape: l.outputShape, gemm: l.gemm, gemmCount: l.gemmCount,
      macs: l.macs, params: l.weightParams + l.biasParams, weightParams: l.weightParams, biasParams: l.biasParams,
      paramBytes: l.weightBytes + l.biasBytes, weightBytes: l.weightBytes, biasBytes: l.biasBytes,
      inputActivationBytes: l.inputActivationBytes, outputActivationBytes: l.outputActivationBytes,
      fwd: pass(cost.fwd, clockMHz), ig: pass(cost.ig, clockMHz), wg: pass(cost.wg, clockMHz),
      updateCycles: cost.updateCycles, updateNs: toNs(cost.updateCycles, clockMHz),
      ...(plan === undefined ? {} : rankColumns(at(plan.layers, i), rankCosts)),
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
    ...(plan === undefined ? {} : { rankParams: { tp: plan.world.tp, stages: plan.pipeline.stages.map((_, stage) => ({ stage, params: Math.round(heldParams(plan, stage)) })), outsideLayers: plan.otherParams } }),
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
  const name = (i: number): string => at(plan.layers, i).layer.name;
  return plan.pipeline.stages.map((s, stage) => ({
    stage,
    layers: s.layers.length,
    first: name(at(s.layers, 0)),
    last: name(last(s.layers, `stage ${stage}'s layers`)),
    chunks: s.chunks.map((c) => ({ first: name(at(c, 0)), last: name(last(c, `a chunk of stage ${stage}`)) })),
    cycles: s.cycles,
    ns: toNs(s.cycles, clockMHz),
  }));
}
