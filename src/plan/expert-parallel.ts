/**
 * Expert parallelism as Megatron-core's all-to-all token dispatcher runs it
 * (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher:375-386: permute,
 * A2A over EP, all-gather over the expert TP group, experts, reduce-scatter over it, A2A back).
 * The E experts of a mixture spread over the EP ranks, E / EP each (moe_layer.py:186-187;
 * rank e of the EP group holds experts e x E / EP onwards); each expert's weights split over ETP
 * ranks as column / row layers. Uniform routing is assumed, as for the expert rows without EP
 * (plan/build.ts, expertShares): every rank sends each expert ceil(T x k x capacity / E) of its
 * T tokens. Ranks of a stage run one graph, so the graph is EP rank 0's: its experts run, the
 * others' layers are held elsewhere (no work, no parameters on this rank).
 */
import { at, indexOutOfRange, InputError } from '../errors.js';
import type { Layer } from '../layers/types.js';
import type { ModelStructure } from '../structure/types.js';
import { axesOf } from './axes.js';
import type { LayerCollectives, PlannedCollective, WorldShape } from './types.js';

export interface ExpertOnRank {
  /** Whether EP rank 0 (the graph's rank) holds this expert. */
  local: boolean;
  /**
   * Vector work inside the expert (its activation, the gate product): the share of the graph's
   * elements it runs on per rank (the dispatcher's rows over the graph's, over ETP).
   */
  vectorShare?: number;
  /** Rows the expert's GEMMs run on, per rank: EP sources x ETP gathered x the rows one rank sends one expert. */
  rows: number;
  /** The dispatcher's collectives around the layer: on the first and last local expert layers of each mixture. */
  collectives?: LayerCollectives;
}

export interface ExpertParallelInput {
  structure: ModelStructure;
  layers: readonly Layer[];
  world: WorldShape;
  sequenceParallel: boolean;
  elementBytes: number;
  /** Per mixture (index into structure.mlps): top-k and capacity factor, as plan/build.ts resolved them. */
  routing: (mlp: number) => { topK: number; capacity: number };
}

/** Whether the plan runs the expert grid apart from the dense one (EP > 1, or an ETP other than TP). */
export function expertParallel(world: WorldShape): boolean {
  const a = axesOf(world);
  return a.ep > 1 || a.etp !== a.tp;
}

/** Every expert layer's place on the graph's rank, by layer index; empty when the plan is not expert-parallel. */
export function expertsOnRank(input: ExpertParallelInput): Map<number, ExpertOnRank> {
  const out = new Map<number, ExpertOnRank>();
  const { structure, layers, world } = input;
  if (!expertParallel(world)) return out;
  const a = axesOf(world);
  const moes = structure.mlps.flatMap((m, i) => (m.kind === 'moe' && m.experts !== undefined ? [{ m, i, experts: m.experts }] : []));
  if (moes.length === 0) throw new InputError(`--ep ${a.ep}${a.etp !== a.tp ? ` / --etp ${a.etp}` : ''}: the model has no mixture of experts for expert parallelism to spread`);
  // moe_layer.py:636: MoE with tensor parallelism trains with sequence parallelism.
  if (a.tp > 1 && !input.sequenceParallel) throw new InputError(`--ep ${a.ep} with --tp ${a.tp} needs --sp: Megatron-LM trains a mixture of experts under tensor parallelism with sequence parallelism (moe_layer.py)`);
  for (const { m, i, experts } of moes) {
    const routerLayer = at(layers, m.router ?? at(m.down, 0));
    const E = experts.length;
    if (E % a.ep !== 0) throw new InputError(`--ep ${a.ep}: the mixture at '${routerLayer.name}' has ${E} experts; --ep must divide them (Megatron-LM: num_moe_experts % expert_model_parallel_size == 0)`);
    const { topK, capacity } = input.routing(i);
    // The mixture's tokens on this rank: the sequence shard under SP, of the rank's S / C under CP.
    const tokens = routerLayer.gemm.fwd.m / ((input.sequenceParallel ? a.tp : 1) * a.cp);
    if (!Number.isInteger(tokens)) throw new InputError(`layer ${routerLayer.name}: ${routerLayer.gemm.fwd.m} tokens do not split over --tp ${a.tp}${a.cp > 1 ? ` x --cp ${a.cp}` : ''} (sequence and context parallelism)`);
    const perExpert = Math.max(1, Math.min(tokens, Math.ceil((tokens * topK * capacity) / E)));
    const rows = a.ep * a.etp * perExpert;
    const localCount = E / a.ep;
    const expertLayers = (e: number): number[] => {
      const mlp = at(structure.mlps, at(experts, e));
      return [...mlp.up, ...mlp.gate, ...mlp.down];
    };
    const local: number[] = [];
    const vectors = expertVectorLayers(structure, layers, experts);
    experts.forEach((_, e) => {
      const graphRows = at(layers, at(at(structure.mlps, at(experts, e)).up, 0)).gemm.fwd.m;
      for (const l of expertLayers(e)) {
        out.set(l, { local: e < localCount, rows });
        if (e < localCount) local.push(l);
      }
      for (const l of vectors.get(e) ?? []) out.set(l, { local: e < localCount, rows, vectorShare: rows / (graphRows * a.etp) });
    });
    // The experts' input features: the model's hidden width the tokens carry.
    const hidden = at(layers, at(at(structure.mlps, at(experts, 0)).up, 0)).gemm.fwd.k;
    const routed = E * perExpert;
    const tokenBytes = routed * hidden * input.elementBytes;
    const probBytes = routed * input.elementBytes;
    const first = Math.min(...local);
    const last = Math.max(...local);
    const dispatch = dispatcherCollectives(a.ep, a.etp, tokenBytes, probBytes);
    const entry = (l: number): ExpertOnRank => out.get(l) ?? indexOutOfRange(l);
    out.set(first, { ...entry(first), collectives: { ...emptyCollectives(), beforeFwd: dispatch.dispatch, afterIg: dispatch.dispatchGrad } });
    const lastCollectives = entry(last).collectives ?? emptyCollectives();
    out.set(last, { ...entry(last), collectives: { ...lastCollectives, afterFwd: dispatch.combine, beforeBwd: dispatch.combineGrad } });
  }
  return out;
}

/**
 * The vector layers inside each expert, by data flow: work on the activations of an expert's up
 * or gate projection (or of such work), up to its down projection; by expert position.
 */
function expertVectorLayers(structure: ModelStructure, layers: readonly Layer[], experts: readonly number[]): Map<number, number[]> {
  const owner = new Map<string, number>();
  experts.forEach((mlp, e) => {
    const m = at(structure.mlps, mlp);
    for (const l of [...m.up, ...m.gate]) owner.set(at(layers, l).output, e);
  });
  const found = new Map<number, number[]>();
  layers.forEach((layer, i) => {
    if (layer.kind !== 'vector') return;
    const owners = new Set(layer.activationInputs.flatMap((v) => (owner.has(v) ? [owner.get(v) ?? -1] : [])));
    if (owners.size !== 1) return;
    const e = [...owners][0] ?? -1;
    owner.set(layer.output, e);
    found.set(e, [...(found.get(e) ?? []), i]);
  });
  return found;
}

const emptyCollectives = (): LayerCollectives => ({ beforeFwd: [], afterFwd: [], beforeBwd: [], afterIg: [] });

/**
 * The dispatcher's collectives per micro-batch: forward, the tokens' and routing probabilities'
 * all-to-alls over EP (token_dispatch:705-723) and their all-gathers over ETP (dispatch_postprocess:741-752);
 * after the experts, the reduce-scatter over ETP (combine_preprocess:824-833) and the tokens' all-to-all back
 * (token_combine:864). Backward runs each one's adjoint in reverse: an all-to-all's is an
 * all-to-all, an all-gather's a reduce-scatter and back. ASTRA-sim's comm_size: an all-gather's
 * per-rank input, the others' whole buffer (the tokens this rank routes: E experts x rows each).
 */
function dispatcherCollectives(ep: number, etp: number, tokenBytes: number, probBytes: number): Record<'dispatch' | 'combine' | 'combineGrad' | 'dispatchGrad', PlannedCollective[]> {
  const a2a = (bytes: number, label: string): PlannedCollective[] => (ep > 1 ? [{ type: 'ALLTOALL', bytes, group: 'ep', label }] : []);
  const gather = (bytes: number, label: string): PlannedCollective[] => (etp > 1 ? [{ type: 'ALLGATHER', bytes, group: 'etp', label }] : []);
  const scatter = (bytes: number, label: string): PlannedCollective[] => (etp > 1 ? [{ type: 'REDUCESCATTER', bytes: bytes * etp, group: 'etp', label }] : []);
  return {
    dispatch: [...a2a(tokenBytes, 'dispatch'), ...a2a(probBytes, 'dispatch-probs'), ...gather(tokenBytes, 'dispatch'), ...gather(probBytes, 'dispatch-probs')],
    combine: [...scatter(tokenBytes, 'combine'), ...a2a(tokenBytes, 'combine')],
    combineGrad: [...a2a(tokenBytes, 'combine-grad'), ...gather(tokenBytes, 'combine-grad')],
    dispatchGrad: [...scatter(tokenBytes, 'dispatch-grad'), ...scatter(probBytes, 'dispatch-probs-grad'), ...a2a(tokenBytes, 'dispatch-grad'), ...a2a(probBytes, 'dispatch-probs-grad')],
  };
}
