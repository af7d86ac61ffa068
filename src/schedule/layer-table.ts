/**
 * A plan as ASTRA-sim's legacy per-layer table (the text format): one rank's compute per pass
 * over all micro-batches of a step, the collective of each pass, the optimizer step. The table
 * has one collective per pass and layer, no pipeline, no sequence parallelism and no ZeRO; plans
 * it cannot express are refused with a pointer to the Chakra format.
 */
import { InputError, at } from '../errors.js';
import type { CostedPlan } from '../costed/costed-plan.js';
import { type Collective, keywordOfWorld, NO_COLLECTIVE, type Parallelism } from '../plan/legacy.js';
import type { LayerPlan, ParallelPlan, PlannedCollective } from '../plan/types.js';
import { gradientParams } from '../plan/held-params.js';
import type { LayerTable, LayerTableRow, PassWork } from './types.js';

/** The text keyword of a plan: the legacy one when given, else what the world shape says. */
export function keywordOf(plan: ParallelPlan, legacy: Parallelism | undefined): Parallelism {
  return legacy ?? keywordOfWorld(plan.world);
}

/** Whether the text format can express the plan; the reason when it cannot. */
export function textInexpressible(plan: ParallelPlan): string | undefined {
  if (plan.world.pp > 1) return 'pipeline parallelism';
  if (plan.sequenceParallel) return 'sequence parallelism';
  if (plan.zero > 0) return `ZeRO stage ${plan.zero}`;
  return undefined;
}

/** Collectives of one pass merged into the table's one column (same type: sizes add up). */
function oneCollective(l: LayerPlan, pass: string, before: readonly PlannedCollective[], after: readonly PlannedCollective[]): Collective {
  // Most layers have none: no joined list to build.
  if (before.length === 0 && after.length === 0) return NO_COLLECTIVE;
  const list = [...before, ...after];
  const first = at(list, 0);
  const types = new Set(list.map((c) => c.type));
  if (types.size > 1) throw new InputError(`layer ${l.layer.name}: its ${pass} needs ${[...types].join(' and ')}, which the text format cannot express; use --format chakra`);
  return { type: first.type, bytes: list.reduce((a, c) => a + c.bytes, 0), group: 'model' };
}

export interface LayerTableOptions {
  /** Each row's per-pass work (MACs, bytes; on by default), for Chakra's converter graph: the text format reads only cycles. */
  work?: boolean;
  /**
   * `separate` (default): a row per vector layer. `fold`: each vector layer's work joins the row of
   * the GEMM-like layer it follows (those before the first, the first's), as the layer-wise format
   * means its lines: ASTRA-sim's reference ResNet-50 has its 54 GEMM layers and no others, and
   * Chakra's text converter turns a vector row's `NONE 0` columns into 0-byte all-reduces.
   */
  vectorLayers?: 'separate' | 'fold';
}

export function layerTable(costedPlan: CostedPlan, legacy?: Parallelism, options: LayerTableOptions = {}): LayerTable {
  const { plan } = costedPlan;
  const why = textInexpressible(plan);
  if (why !== undefined) throw new InputError(`the text format cannot express ${why}; use --format chakra`);
  const m = plan.batch.microBatches;
  const withWork = options.work ?? true;
  const updates = costedPlan.layerUpdateCycles;
  // One data-parallel all-reduce per gradient size, shared by the rows (folding replaces a row's collective, never changes it).
  const allReduces = new Map<number, Collective>();
  const gradientAllReduce = (bytes: number): Collective => {
    let c = allReduces.get(bytes);
    if (c === undefined) {
      c = Object.freeze({ type: 'ALLREDUCE', bytes, group: 'data' });
      allReduces.set(bytes, c);
    }
    return c;
  };
  /** Row i of the table, its own object (folding may add to it). */
  const rowAt = (i: number): LayerTableRow => {
    const l = at(plan.layers, i);
    const c = at(costedPlan.layers, i);
    const grads = gradientParams(plan, l) * plan.gradientBytes;
    const row: LayerTableRow = {
      name: l.layer.name,
      fwdCycles: m * c.fwd.cycles,
      igCycles: m * c.ig.cycles,
      wgCycles: m * c.wg.cycles,
      updateCycles: at(updates, i),
      fwdComm: oneCollective(l, 'forward', l.collectives.beforeFwd, l.collectives.afterFwd),
      igComm: l.needsInputGrad ? oneCollective(l, 'backward', l.collectives.beforeBwd, l.collectives.afterIg) : NO_COLLECTIVE,
      wgComm: plan.world.dp > 1 && grads > 0 ? gradientAllReduce(grads) : NO_COLLECTIVE,
    };
    if (withWork) row.work = { fwd: scaled(c.fwd, m), ig: scaled(c.ig, m), wg: scaled(c.wg, m) };
    return row;
  };
  const count = plan.layers.length;
  let layers: LayerTableRow[];
  if (options.vectorLayers === 'fold') layers = foldVectorRows(plan, rowAt);
  else {
    layers = new Array<LayerTableRow>(count);
    for (let i = 0; i < count; i++) layers[i] = rowAt(i);
  }
  const { tp, dp } = plan.world;
  return {
    config: { parallelism: keywordOf(plan, legacy), npus: tp * dp, mpGroup: tp, dtype: plan.dtype, params: plan.gradientParams },
    split: { dataWays: dp, modelWays: tp },
    clockMHz: costedPlan.clockMHz,
    hardware: costedPlan.profile.name,
    costModel: costedPlan.costModel,
    layers,
  };
}

/** One column's collective after folding: the GEMM layer's and the vector layer's, of one type (sizes add up). */
function joinCollectives(into: Collective, add: Collective, layer: string, vector: string, pass: string): Collective {
  if (add.type === 'NONE' || add.bytes === 0) return into;
  if (into.type === 'NONE' || into.bytes === 0) return add;
  if (into.type !== add.type) throw new InputError(`layer ${layer}: its ${pass} ${into.type} and the ${add.type} of the vector layer ${vector} after it cannot share a text column; use --text-vector-layers separate or --format chakra`);
  return { ...into, bytes: into.bytes + add.bytes };
}

const addWork = (a: PassWork, b: PassWork): PassWork => ({ macs: a.macs + b.macs, tensorBytes: a.tensorBytes + b.tensorBytes });

/**
 * Vector rows, and attention products that communicate nothing, folded into the row of the
 * GEMM-like layer before them (those ahead of the first GEMM layer into the first). Compute and update times add up, collectives of one type add
 * their sizes. A vector layer's backward goes into the layer's input-gradient column, or into its
 * weight-gradient column when the layer has no input gradient (the first layer: Chakra's converter
 * gives layer 0 no input-gradient node), so no work is dropped.
 * One pass, each row built as it is folded (no table of every row first); a row's own error
 * (rowAt) still comes before any folding error, which is raised once every row is built.
 */
function foldVectorRows(plan: ParallelPlan, rowAt: (i: number) => LayerTableRow): LayerTableRow[] {
  const out: LayerTableRow[] = [];
  const outLayer: LayerPlan[] = [];
  let pending: LayerTableRow[] = [];
  let foldError: unknown;
  const fold = (k: number, v: LayerTableRow): void => {
    if (foldError !== undefined) return;
    try {
      foldRow(at(out, k), at(outLayer, k), v);
    } catch (e) {
      foldError = e;
    }
  };
  const count = plan.layers.length;
  for (let i = 0; i < count; i++) {
    const l = at(plan.layers, i);
    const row = rowAt(i);
    // An attention product has no weights; where it communicates nothing (data parallelism) its
    // NONE 0 columns would become 0-byte all-reduces in Chakra's converter, as a vector layer's would.
    const silentProduct = l.layer.kind === 'activation-gemm' && [row.fwdComm, row.igComm, row.wgComm].every((c) => c.type === 'NONE' || c.bytes === 0);
    if (l.layer.kind === 'vector' || silentProduct) {
      if (out.length === 0) pending.push(row);
      else fold(out.length - 1, row);
      continue;
    }
    // The row is this table's own (rowAt built it): folding may change it.
    out.push(row);
    outLayer.push(l);
    if (out.length === 1) {
      for (const p of pending) fold(0, p);
      pending = [];
    }
  }
  if (foldError !== undefined) throw foldError;
  // A model of vector layers only keeps them (translate refuses a model without GEMM layers first).
  return out.length === 0 ? pending : out;
}

/** Vector row `v` folded into the GEMM-like row `into` of layer `l`. */
function foldRow(into: LayerTableRow, l: LayerPlan, v: LayerTableRow): void {
  const backward = l.needsInputGrad ? 'ig' : 'wg';
  into.fwdCycles += v.fwdCycles;
  into.igCycles += backward === 'ig' ? v.igCycles : 0;
  into.wgCycles += v.wgCycles + (backward === 'wg' ? v.igCycles : 0);
  into.updateCycles += v.updateCycles;
  into.fwdComm = joinCollectives(into.fwdComm, v.fwdComm, into.name, v.name, 'forward');
  into.igComm = joinCollectives(into.igComm, v.igComm, into.name, v.name, 'backward');
  into.wgComm = joinCollectives(into.wgComm, v.wgComm, into.name, v.name, 'weight gradient');
  if (into.work !== undefined && v.work !== undefined) {
    const ig = backward === 'ig' ? addWork(into.work.ig, v.work.ig) : into.work.ig;
    const wg = addWork(into.work.wg, backward === 'wg' ? addWork(v.work.wg, v.work.ig) : v.work.wg);
    into.work = { fwd: addWork(into.work.fwd, v.work.fwd), ig, wg };
  }
}

const scaled = (p: { macs: number; tensorBytes: number }, m: number) => ({ macs: m * p.macs, tensorBytes: m * p.tensorBytes });

/**
 * The one-layer MICRO table of a single collective on `npus` NPUs (what ASTRA-sim's
 * microbenchmark generators and the text format's MICRO keyword describe). Write it with
 * `{ micro: true }`; pass `commNodeName` to match a generator's node name.
 */
export function microLayerTable(collective: Omit<Collective, 'group'>, npus: number, name = 'micro'): LayerTable {
  return {
    config: { parallelism: 'DATA', npus, mpGroup: 1, dtype: 'fp32', params: 'all' },
    split: { dataWays: npus, modelWays: 1 },
    clockMHz: 1000,
    hardware: 'none',
    costModel: 'none',
    layers: [
      {
        name,
        fwdCycles: 0,
        igCycles: 0,
        wgCycles: 0,
        updateCycles: 0,
        fwdComm: NO_COLLECTIVE,
        igComm: NO_COLLECTIVE,
        wgComm: { ...collective, group: 'all' },
      },
    ],
  };
}
