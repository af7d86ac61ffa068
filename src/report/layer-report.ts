/**
 * The per-layer report behind `inspect` and `translate --report`: GEMM dims, MACs, parameters,
 * activation sizes and the cost of every training pass, and with a plan each layer's per-rank
 * share and the pipeline stages. Built here from the costed plan (costed/); writers/layer-report.ts
 * prints it as JSON, CSV or an aligned text table.
 */
import type { GemmCost } from '../cost/types.js';
import type { CostedLayer, CostedModel, CostedPlan } from '../costed/costed-plan.js';
import { at, last } from '../errors.js';
import { uniqueParameterCount } from '../layers/params.js';
import type { Layer } from '../layers/types.js';
import { heldParams } from '../plan/held-params.js';
import type { LayerPlan, PlannedCollective, TpRole } from '../plan/types.js';
import { sumOverPasses } from '../passes.js';
import type { PredictionSummary } from '../predict/free-network.js';
import { cyclesToWholeNs } from '../units.js';

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

function rankColumns(l: LayerPlan, c: CostedLayer): Pick<LayerReport, 'role' | 'roleReason' | 'rank' | 'stage'> {
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

const pass = (c: GemmCost, clockMHz: number): PassReport => ({
  cycles: c.cycles, ns: cyclesToWholeNs(c.cycles, clockMHz), stallCycles: c.stallCycles, overallUtilPct: round(c.overallUtilPct, 4),
});

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The report of a costed model (whole layers), or of a costed plan (with each layer's per-rank share and the stages). */
export function buildReport(modelPath: string, costed: CostedModel | CostedPlan): ModelReport {
  const { clockMHz, modelLayers: layers, wholeLayers } = costed;
  const plan = 'plan' in costed ? costed.plan : undefined;
  const rows = layers.map((l, i): LayerReport => {
    const { cost } = at(wholeLayers, i);
    const v = l.vector;
    return {
      name: l.name, op: l.op, node: l.node, kind: l.kind, outputShape: l.outputShape, gemm: l.gemm, gemmCount: l.gemmCount,
      macs: l.macs, params: l.weightParams + l.biasParams, weightParams: l.weightParams, biasParams: l.biasParams,
      paramBytes: l.weightBytes + l.biasBytes, weightBytes: l.weightBytes, biasBytes: l.biasBytes,
      inputActivationBytes: l.inputActivationBytes, outputActivationBytes: l.outputActivationBytes,
      fwd: pass(cost.fwd, clockMHz), ig: pass(cost.ig, clockMHz), wg: pass(cost.wg, clockMHz),
      updateCycles: cost.updateCycles, updateNs: cyclesToWholeNs(cost.updateCycles, clockMHz),
      ...('plan' in costed ? rankColumns(at(costed.plan.layers, i), at(costed.layers, i)) : {}),
      ...(v ? { vector: { opClass: v.opClass, elements: v.elements, bytesIn: v.bytesIn, bytesOut: v.bytesOut } } : {}),
    };
  });
  const sum = (f: (r: LayerReport) => number): number => rows.reduce((a, r) => a + f(r), 0);
  return {
    model: modelPath,
    hardware: costed.profile.name,
    costModel: costed.costModel,
    bandwidthMode: costed.profile.bandwidthMode,
    clockMHz,
    layers: rows,
    ...('plan' in costed && costed.plan.world.pp > 1 ? { stages: stageReports(costed) } : {}),
    ...(plan === undefined ? {} : { rankParams: { tp: plan.world.tp, stages: plan.pipeline.stages.map((_, stage) => ({ stage, params: Math.round(heldParams(plan, stage)) })), outsideLayers: plan.otherParams } }),
    totals: {
      layers: rows.length,
      macs: sum((r) => r.macs),
      params: uniqueParameterCount(layers),
      paramBytes: wholeLayers.reduce((a, w) => a + w.ownParamBytes, 0),
      fwdCycles: sum((r) => r.fwd.cycles),
      igCycles: sum((r) => r.ig.cycles),
      wgCycles: sum((r) => r.wg.cycles),
      updateCycles: sum((r) => r.updateCycles),
      stallCycles: sum((r) => sumOverPasses(r, (p) => p.stallCycles)),
      fwdNs: sum((r) => r.fwd.ns),
      igNs: sum((r) => r.ig.ns),
      wgNs: sum((r) => r.wg.ns),
      updateNs: sum((r) => r.updateNs),
      ...(rows.some((r) => r.vector) ? { vectorCycles: sum((r) => (r.vector ? sumOverPasses(r, (p) => p.cycles) : 0)) } : {}),
    },
  };
}

export function stageReports({ plan, clockMHz }: CostedPlan): StageReport[] {
  const name = (i: number): string => at(plan.layers, i).layer.name;
  return plan.pipeline.stages.map((s, stage) => ({
    stage,
    layers: s.layers.length,
    first: name(at(s.layers, 0)),
    last: name(last(s.layers, `stage ${stage}'s layers`)),
    chunks: s.chunks.map((c) => ({ first: name(at(c, 0)), last: name(last(c, `a chunk of stage ${stage}`)) })),
    cycles: s.cycles,
    ns: cyclesToWholeNs(s.cycles, clockMHz),
  }));
}
