/**
 * Context parallelism in the step graph (plan/context-parallel.ts has the model and its sources):
 * each self-attention's core (scores, the vector work between, context) is issued at its context
 * product's place, after every projection it reads, with TransformerEngine's K/V exchange around it.
 * - p2p (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
 *   AttnFuncWithCPAndKVP2P): forward, the core in C chunks, chunk j on the K/V chunk of the CP rank
 *   j steps back; step j < C - 1 sends the K/V chunk held to the next CP rank and receives the
 *   previous rank's, issued once step j - 1's transfer is done (:1698-1716: wait, then
 *   flash_attn_p2p_communicate, then the chunk's attention), so it overlaps chunk j's compute;
 *   chunk j waits for step j - 1's transfer and chunk j - 1. Backward (:2459-2497), C steps: step
 *   j sends the K/V chunk (j = 0), the K/V chunk and the dK/dV accumulated so far (0 < j < C - 1),
 *   or dK/dV alone (j = C - 1), after step j - 1's transfer and chunk j - 1 (whose dK/dV it
 *   carries); the rank's own dK/dV arrives with the last receive, which the K and V projections'
 *   backward waits for. With recomputation, the core's forward (with its ring) runs again first,
 *   as Megatron-LM's checkpointed core attention re-runs TE's attention function.
 * - a2a (AttnFuncWithCPAndQKVOA2A): all-to-alls of Q, K, V before the core and of the context
 *   after it (:4339, :4485); backward of the output gradient before and dQ, dK, dV after (:4677,
 *   :4837); the core computed once, on S tokens of H/C heads.
 * A chunk's compute is 1/C of each core layer's costed passes (cycles, FLOPs and bytes split into C
 * whole parts where they are whole), summed into one node per chunk: TE's fused kernel per step.
 */
import type { CostedLayer, CostedPass, PassCost } from '../costed/costed-plan.js';
import { at, InputError } from '../errors.js';
import { MAX_TAG } from '../astra-limits.js';
import type { CpAttention, ParallelPlan, PlannedCollective } from '../plan/types.js';
import { type GraphBuilder, type Handle, joinTwo } from './graph-builder.js';

export interface CpContext {
  plan: ParallelPlan;
  costed: readonly CostedLayer[];
  b: GraphBuilder;
  /** Iterations in the graph (the tags are numbered above all their pipeline tags) and this one. */
  iterations: number;
  iteration: number;
}

/** Where each attention core sits: its layers (skipped where they stand) and its anchor, the context product. */
export interface CpCores {
  /** Layer index -> the attention (index into plan.contextParallel.attentions) whose core it is in. */
  coreOf: Map<number, number>;
}

export function cpCoresOf(plan: ParallelPlan): CpCores | undefined {
  const cp = plan.contextParallel;
  if (cp === undefined) return undefined;
  const coreOf = new Map<number, number>();
  cp.attentions.forEach((a, k) => {
    for (const i of a.core) coreOf.set(i, k);
  });
  return { coreOf };
}

/** Transfers per attention and micro-batch: C - 1 forward, C backward, C - 1 in a recomputed forward. */
const transfersPerAttention = (c: number): number => 3 * c - 2;

/**
 * Tag of a CP ring transfer, above every pipeline tag of the step (those are below
 * 1 + 2 x parts x micro-batches x iterations: pipeline-transfers.ts transferTag): unique per
 * transfer of a rank's step, and the same on the sender and the receiver, which run the same
 * graph (a ring's ranks are on one stage). Slots per attention and micro-batch: forward 0 to C - 2,
 * backward C - 1 to 2C - 2, a recomputed forward 2C - 1 to 3C - 3.
 */
export function cpTransferTag(plan: ParallelPlan, iterations: number, iteration: number, microBatch: number, attention: number, slot: number): number {
  const cp = plan.contextParallel;
  if (cp === undefined) throw new Error('internal error: a CP transfer without context parallelism');
  const m = plan.batch.microBatches;
  const base = 1 + 2 * plan.world.pp * plan.pipeline.virtualStages * m * iterations;
  const tag = base + ((iteration * m + microBatch) * cp.attentions.length + attention) * transfersPerAttention(cp.size) + slot;
  if (tag >= MAX_TAG) throw new InputError(`context-parallel transfer tags exceed ${MAX_TAG}: too many micro-batches x attention layers x --cp steps x iterations`);
  return tag;
}

/** Part j of C of a pass's cost: whole parts where the figure is whole, the first parts taking the remainder. */
function chunkOf(value: number, c: number, j: number): number {
  if (!Number.isInteger(value)) return value / c;
  const base = Math.floor(value / c);
  return base + (j < value - base * c ? 1 : 0);
}

/**
 * Chunk j of C of the core's passes `passes` as one node: TE runs each ring step's attention as
 * one fused kernel (flash attention forward, or its backward computing dQ, dK and dV at once), so
 * a chunk is one node of the sum of the core layers' parts, named and placed at the core's
 * context product (`pass` the chunk's: fwd, recompute, or ig for the backward kernel).
 */
function chunkNode(ctx: CpContext, anchor: number, passes: readonly CostedPass[], pass: CostedPass['pass'], mb: number, c: number, j: number, deps: Handle): Handle {
  if (passes.length === 0) return deps;
  const l = at(ctx.plan.layers, anchor);
  let cycles = 0;
  let flops = 0;
  let tensorBytes = 0;
  for (const p of passes) {
    const cost: PassCost = p.cost;
    cycles += chunkOf(cost.cycles, c, j);
    flops += chunkOf(cost.flops, c, j);
    tensorBytes += chunkOf(cost.tensorBytes, c, j);
  }
  return ctx.b.compute({ name: `${l.layer.name}.core.${pass}.mb${mb}${c > 1 ? `.cp${j}` : ''}`, pass, layer: anchor, microBatch: mb, cycles, flops, tensorBytes }, deps);
}

function collectiveList(ctx: CpContext, name: string, list: readonly PlannedCollective[], deps: Handle): Handle {
  let h = deps;
  for (const c of list) h = ctx.b.collective(`${name}.${c.type}.${c.label}`, c, h);
  return h;
}

/**
 * One ring of C chunks over attention k: step j's transfer (the first `transfers` steps) sends
 * what(j) to the next CP rank and receives the same from the previous one, once step j - 1's
 * transfer is done and, where it carries the chunk's dK/dV (backward), chunk j - 1; chunk j
 * computes after chunk j - 1 and step j - 1's transfer (the K/V it works on).
 */
function ring(ctx: CpContext, k: number, mb: number, transfers: number, what: (j: number) => { label: string; bytes: number; slot: number }, chunk: (j: number, deps: Handle) => Handle, start: Handle, carriesChunk: boolean): Handle {
  const c = ctx.plan.contextParallel?.size ?? 1;
  let previousTransfer: Handle = start;
  let computed: Handle = start;
  for (let j = 0; j < c; j++) {
    let transfer: Handle | undefined;
    if (j < transfers) {
      const t = what(j);
      const deps = carriesChunk ? joinTwo(previousTransfer, computed) : previousTransfer;
      const tag = cpTransferTag(ctx.plan, ctx.iterations, ctx.iteration, mb, k, t.slot);
      const sent = ctx.b.transfer('send', `cp.send.${t.label}.a${k}.s${j}.mb${mb}`, { axis: 'cp', offset: 1 }, t.bytes, tag, deps);
      const received = ctx.b.transfer('recv', `cp.recv.${t.label}.a${k}.s${j}.mb${mb}`, { axis: 'cp', offset: -1 }, t.bytes, tag, deps);
      transfer = joinTwo(sent, received);
    }
    computed = chunk(j, joinTwo(computed, previousTransfer));
    if (transfer !== undefined) previousTransfer = transfer;
  }
  return joinTwo(computed, previousTransfer);
}

/** The core's forward passes (forward, or the recomputed forward in backward) of attention k over the ring or between the all-to-alls. */
function coreForward(ctx: CpContext, k: number, mb: number, start: Handle, pass: 'fwd' | 'recompute'): Handle {
  const cp = ctx.plan.contextParallel;
  if (cp === undefined) return start;
  const a: CpAttention = at(cp.attentions, k);
  const c = cp.size;
  const phase = pass === 'fwd' ? 'fwd' : 'recompute';
  const passesOf = (i: number): readonly CostedPass[] => (pass === 'fwd' ? at(ctx.costed, i).forward : at(ctx.costed, i).backward.filter((p) => p.pass === 'recompute'));
  const corePasses = a.core.flatMap((i) => passesOf(i));
  const anchor = a.core[a.core.length - 1] ?? -1;
  const compute = (j: number, chunks: number, deps: Handle): Handle => chunkNode(ctx, anchor, corePasses, pass, mb, chunks, j, deps);
  let h = start;
  for (const i of a.core) h = collectiveList(ctx, `${at(ctx.plan.layers, i).layer.name}.${phase}.mb${mb}`, at(ctx.plan.layers, i).collectives.beforeFwd, h);
  if (cp.commType === 'a2a') {
    h = alltoalls(ctx, `cp.${phase}.a${k}.mb${mb}`, [['q', a.qBytes], ['k', a.kBytes], ['v', a.kBytes]], h);
    h = compute(0, 1, h);
    h = alltoalls(ctx, `cp.${phase}.a${k}.mb${mb}`, [['out', a.qBytes]], h);
  } else {
    const slot0 = pass === 'fwd' ? 0 : 2 * c - 1;
    h = ring(ctx, k, mb, c - 1, (j) => ({ label: 'kv', bytes: a.kvBytes, slot: slot0 + j }), (j, deps) => compute(j, c, deps), h, false);
  }
  for (const i of a.core) h = collectiveList(ctx, `${at(ctx.plan.layers, i).layer.name}.${phase}.mb${mb}`, at(ctx.plan.layers, i).collectives.afterFwd, h);
  return h;
}

function alltoalls(ctx: CpContext, name: string, tensors: readonly [string, number][], deps: Handle): Handle {
  let h = deps;
  for (const [label, bytes] of tensors) h = ctx.b.collective(`${name}.ALLTOALL.${label}`, { type: 'ALLTOALL', bytes, group: 'cp', label }, h);
  return h;
}

/** Forward of attention k's core for micro-batch mb, after `start` (its projections done). */
export function cpForward(ctx: CpContext, k: number, mb: number, start: Handle): Handle {
  return coreForward(ctx, k, mb, start, 'fwd');
}

/**
 * Backward of attention k's core for micro-batch mb: the recomputed forward where the core is
 * recomputed, then the input and weight gradients of its layers from the context back to the
 * scores, in C chunks over the ring (p2p) or between the all-to-alls (a2a).
 */
export function cpBackward(ctx: CpContext, k: number, mb: number, start: Handle, onGradient: (layer: number, done: Handle) => void): Handle {
  const cp = ctx.plan.contextParallel;
  if (cp === undefined) return start;
  const a = at(cp.attentions, k);
  const c = cp.size;
  const reversed = [...a.core].reverse();
  const recomputed = a.core.some((i) => at(ctx.costed, i).backward.some((p) => p.pass === 'recompute'));
  let h = recomputed ? coreForward(ctx, k, mb, start, 'recompute') : start;
  for (const i of reversed) h = collectiveList(ctx, `${at(ctx.plan.layers, i).layer.name}.bwd.mb${mb}`, at(ctx.plan.layers, i).collectives.beforeBwd, h);
  // The core holds no parameters: its layers' gradients are done with the last chunk.
  const corePasses = reversed.flatMap((i) => at(ctx.costed, i).backward.filter((p) => p.pass !== 'recompute'));
  const anchor = a.core[a.core.length - 1] ?? -1;
  let lastChunk: Handle = start;
  const compute = (j: number, chunks: number, deps: Handle): Handle => {
    lastChunk = chunkNode(ctx, anchor, corePasses, 'ig', mb, chunks, j, deps);
    return lastChunk;
  };
  if (cp.commType === 'a2a') {
    h = alltoalls(ctx, `cp.bwd.a${k}.mb${mb}`, [['outgrad', a.qBytes]], h);
    h = compute(0, 1, h);
    h = alltoalls(ctx, `cp.bwd.a${k}.mb${mb}`, [['qgrad', a.qBytes], ['kgrad', a.kBytes], ['vgrad', a.kBytes]], h);
  } else {
    const what = (j: number): { label: string; bytes: number; slot: number } => ({
      label: j === 0 ? 'kv' : j === c - 1 ? 'dkv' : 'kv+dkv',
      bytes: j === 0 || j === c - 1 ? a.kvBytes : 2 * a.kvBytes,
      slot: c - 1 + j,
    });
    h = ring(ctx, k, mb, c, what, (j, deps) => compute(j, c, deps), h, true);
  }
  for (const i of reversed) h = collectiveList(ctx, `${at(ctx.plan.layers, i).layer.name}.bwd.mb${mb}`, at(ctx.plan.layers, i).collectives.afterIg, h);
  for (const i of a.core) onGradient(i, lastChunk);
  return h;
}
