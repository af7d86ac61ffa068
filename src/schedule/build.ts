/**
 * Costed plan -> each pipeline stage's step graph, in the order Megatron-LM / PyTorch issue
 * the work: the stage's micro-batch forwards and backwards in its pipeline schedule's order
 * (pipeline-order.ts), each unit after the previous one; per unit the forward of every layer of
 * the chunk (tensor-parallel collectives blocking, as they are in the framework) or the backward
 * from its last layer (recomputed forward, input gradient, its reduction, weight gradient), the
 * activation received from the previous stage before and sent to the next after (gradients the
 * other way); data-parallel gradient buckets reduced as their last layer's backward of the last
 * micro-batch completes; the tied embedding's gradient all-reduced between the first and last
 * stage; the optimizer step; under ZeRO the parameter all-gathers. Iterations after the first
 * wait for the previous optimizer step.
 */
import type { CostedLayer, CostedPlan, PassCost, StepPass } from '../costed/costed-plan.js';
import { gradientGroupOf, gradientGroupSize, gradientParams } from '../plan/held-params.js';
import type { GroupKind, LayerPlan, ParallelPlan, PlannedCollective } from '../plan/types.js';
import { checkTraceSize } from '../plan/limits.js';
import { enumerateGroups, worldSize } from '../plan/world.js';
import { GROUP_KINDS } from '../plan/axes.js';
import { at, InputError, indexOutOfRange } from '../errors.js';
import { gradientBuckets, type GradientBucket } from './data-parallel.js';
import { DONE, GraphBuilder, joinHandles, joinTwo, type Handle } from './graph-builder.js';
import { stageOrder, type PipelineUnit } from './pipeline-order.js';
import { MAX_TAG } from '../astra-limits.js';
import { cpBackward, cpCoresOf, cpForward, type CpCores } from './context-parallel.js';
import { boundaryBytes, partsOf, tiedEmbeddingBytes, transferTag } from './pipeline-transfers.js';
import type { StepGraph, StepSchedule } from './types.js';

export interface ScheduleOptions {
  /** Training iterations in each graph (Chakra's --num-passes). */
  iterations?: number;
  /** false (--no-limits): no bound on one rank's trace size (plan/limits.ts). */
  limits?: boolean;
}


interface StageContext {
  plan: ParallelPlan;
  costed: readonly CostedLayer[];
  stage: number;
  /** The stage's layers, ascending. */
  layers: readonly number[];
  /** The model's parts in order (part g = chunk floor(g / P) of stage g mod P). */
  parts: readonly number[][];
  iteration: number;
  updateCycles: number;
  /** Roofline work of the optimizer step: one multiply-add per parameter, weight and gradient read, weight written. */
  updateWork: { flops: number; tensorBytes: number };
  b: GraphBuilder;
  /** Iterations the graph holds (context-parallel tags are numbered above all their pipeline tags). */
  iterations: number;
  /** With context parallelism: which layers are an attention core, issued at its context product (context-parallel.ts). */
  cpCores: CpCores | undefined;
}

const collectiveName = (l: LayerPlan, phase: string, c: PlannedCollective, mb: number): string => `${l.layer.name}.${phase}.${c.type}.${c.label}.mb${mb}`;

function collectives(ctx: StageContext, l: LayerPlan, phase: string, list: readonly PlannedCollective[], mb: number, deps: Handle): Handle {
  let h = deps;
  for (const c of list) h = ctx.b.collective(collectiveName(l, phase, c, mb), c, h);
  return h;
}

/** ZeRO-3: a layer's parameters are gathered from their data-parallel shards before each use. */
function zero3Gather(ctx: StageContext, l: LayerPlan, phase: string, mb: number, deps: Handle): Handle {
  const { plan } = ctx;
  const group = gradientGroupOf(l);
  const ways = gradientGroupSize(plan, group);
  if (plan.zero < 3 || ways < 2) return DONE;
  const bytes = Math.ceil(gradientParams(plan, l)) * plan.elementBytes;
  return ctx.b.collective(`${l.layer.name}.${phase}.ALLGATHER.params.mb${mb}`, { type: 'ALLGATHER', bytes: Math.ceil(bytes / ways), group, label: 'params' }, deps);
}

/**
 * A compute node's name, LAYER.PASS.mbN, joined into one flat string: a template literal makes a
 * chain of four concatenation cells (~130 bytes per node), each kept and then flattened again
 * when the trace is encoded (the chain's 250k compute nodes).
 */
const passNodeName = (l: LayerPlan, pass: StepPass, mb: number): string => [l.layer.name, pass, `mb${mb}`].join('.');

/** The compute node of one of a layer's passes (the costed plan's pass lists). */
function passNode(ctx: StageContext, i: number, l: LayerPlan, pass: StepPass, c: PassCost, mb: number, deps: Handle): Handle {
  if (!(c.cycles > 0)) return deps; // GraphBuilder.compute drops it: no name to build
  return ctx.b.compute({ name: passNodeName(l, pass, mb), pass, layer: i, microBatch: mb, cycles: c.cycles, flops: c.flops, tensorBytes: c.tensorBytes }, deps);
}

/**
 * ZeRO-3's parameter gathers, prefetched one layer ahead as FSDP's forward_prefetch and
 * backward_prefetch (BACKWARD_PRE) and DeepSpeed's prefetch bucket issue them: a layer's gather
 * starts when the parameter layer before it starts computing, one after the other on the gather stream.
 */
class Prefetch {
  private lastGather: Handle = DONE;
  private previousStart: Handle;
  constructor(start: Handle) {
    this.previousStart = start;
  }

  /** The gather of a layer about to start at `start` (issued when the previous layer started). */
  gather(ctx: StageContext, l: LayerPlan, phase: string, mb: number, start: Handle): Handle {
    const gathered = zero3Gather(ctx, l, phase, mb, joinTwo(this.lastGather, this.previousStart));
    // Layers without parameters (attention products, vector work) gather nothing and are no unit to prefetch for.
    if (gathered !== DONE && gradientParams(ctx.plan, l) > 0) {
      this.lastGather = gathered;
      this.previousStart = start;
    }
    return gathered;
  }
}

function forward(ctx: StageContext, layers: readonly number[], mb: number, start: Handle): Handle {
  let h = start;
  const prefetch = new Prefetch(start);
  for (const i of layers) {
    const core = ctx.cpCores?.coreOf.get(i);
    if (core !== undefined) {
      if (i === at(ctx.plan.contextParallel?.attentions ?? [], core).context) h = cpForward(ctx, core, mb, h);
      continue;
    }
    const l = ctx.plan.layers[i] ?? indexOutOfRange(i);
    const c = ctx.costed[i] ?? indexOutOfRange(i);
    const gathered = prefetch.gather(ctx, l, 'fwd', mb, h);
    h = collectives(ctx, l, 'fwd', l.collectives.beforeFwd, mb, joinTwo(h, gathered));
    for (const p of c.forward) h = passNode(ctx, i, l, p.pass, p.cost, mb, h);
    h = collectives(ctx, l, 'fwd', l.collectives.afterFwd, mb, h);
  }
  return h;
}

/**
 * Backward of one micro-batch, each layer's passes in the costed plan's order (recomputed
 * forward, input gradient, weight gradient); `onGradient(i, handle)` sees each layer's weight
 * gradient done. The weight gradient waits for the input gradient, not for its reduction.
 */
function backward(ctx: StageContext, layers: readonly number[], mb: number, start: Handle, onGradient: (layer: number, done: Handle) => void): Handle {
  let h = start;
  const prefetch = new Prefetch(start);
  for (let k = layers.length - 1; k >= 0; k--) {
    const i = layers[k] ?? indexOutOfRange(k);
    const core = ctx.cpCores?.coreOf.get(i);
    if (core !== undefined) {
      if (i === at(ctx.plan.contextParallel?.attentions ?? [], core).context) h = cpBackward(ctx, core, mb, h, onGradient);
      continue;
    }
    const l = ctx.plan.layers[i] ?? indexOutOfRange(i);
    const c = ctx.costed[i] ?? indexOutOfRange(i);
    const gathered = prefetch.gather(ctx, l, 'bwd', mb, h);
    h = joinTwo(h, gathered);
    // Until the first backward compute: the output gradient's collectives not issued yet.
    let gradientIn: Handle | undefined;
    let reduced: Handle = h;
    for (const p of c.backward) {
      if (p.pass === 'recompute') {
        h = recomputeForward(ctx, i, p.cost, mb, h);
        continue;
      }
      if (gradientIn === undefined) {
        h = collectives(ctx, l, 'bwd', l.collectives.beforeBwd, mb, h);
        gradientIn = h;
        reduced = h;
      }
      if (p.pass === 'ig') {
        h = passNode(ctx, i, l, 'ig', p.cost, mb, h);
        reduced = collectives(ctx, l, 'bwd', l.collectives.afterIg, mb, h);
      } else {
        const wg = passNode(ctx, i, l, p.pass, p.cost, mb, h);
        onGradient(i, wg);
        h = joinTwo(reduced, wg);
      }
    }
  }
  return h;
}

/** Activation recomputation: the layer's forward (and its tensor-parallel collectives) again, right before its backward. */
function recomputeForward(ctx: StageContext, i: number, c: PassCost, mb: number, start: Handle): Handle {
  const l = ctx.plan.layers[i] ?? indexOutOfRange(i);
  const unit = ctx.b.unit;
  if (unit !== undefined) ctx.b.unit = { ...unit, phase: 'recompute' };
  let h = collectives(ctx, l, 'recompute', l.collectives.beforeFwd, mb, start);
  h = passNode(ctx, i, l, 'recompute', c, mb, h);
  h = collectives(ctx, l, 'recompute', l.collectives.afterFwd, mb, h);
  ctx.b.unit = unit;
  return h;
}

/**
 * One forward or backward of a micro-batch on one chunk, after `start` (the previous unit): the
 * activation (gradient) received from the neighbouring stage first, the result sent on after.
 * Sends are not waited on by later compute (Megatron-LM's isend); they join the step's end.
 */
function runUnit(ctx: StageContext, u: PipelineUnit, start: Handle, sends: Handle[], onGradient: (layer: number, done: Handle) => void): Handle {
  const { plan, b } = ctx;
  const pp = plan.world.pp;
  const g = u.chunk * pp + ctx.stage;
  const lastPart = ctx.parts.length - 1;
  const layers = at(ctx.parts, g);
  const mb = u.microBatch;
  b.unit = { microBatch: mb, phase: u.pass, chunk: u.chunk };
  const tag = (boundary: number): number => {
    const t = transferTag(plan, ctx.iteration, mb, boundary, u.pass);
    if (t >= MAX_TAG) throw new InputError(`pipeline transfer tags exceed ${MAX_TAG}: too many micro-batches x stages x iterations`);
    return t;
  };
  // Forward: from part g - 1, to part g + 1 (boundary g - 1, then g); backward the other way.
  const [inBoundary, outBoundary] = u.pass === 'fwd' ? [g - 1, g] : [g, g - 1];
  const [fromPart, toPart] = u.pass === 'fwd' ? [g - 1, g + 1] : [g + 1, g - 1];
  const what = u.pass === 'fwd' ? 'act' : 'grad';
  const hasIn = fromPart >= 0 && fromPart <= lastPart;
  const hasOut = toPart >= 0 && toPart <= lastPart;
  const received = hasIn ? b.transfer('recv', `pp.recv.${what}.b${inBoundary}.mb${mb}`, { axis: 'pp', stage: fromPart % pp }, boundaryBytes(plan, ctx.parts, inBoundary), tag(inBoundary), start) : DONE;
  const body = u.pass === 'fwd' ? forward(ctx, layers, mb, joinTwo(start, received)) : backward(ctx, layers, mb, joinTwo(start, received), onGradient);
  if (hasOut) sends.push(b.transfer('send', `pp.send.${what}.b${outBoundary}.mb${mb}`, { axis: 'pp', stage: toPart % pp }, boundaryBytes(plan, ctx.parts, outBoundary), tag(outBoundary), body));
  b.unit = undefined;
  return body;
}

/**
 * Gradient reduction and the optimizer step. ZeRO 0: all-reduce per bucket after the last
 * micro-batch; ZeRO-1: reduce-scatter per bucket after the last micro-batch, all-gather of the
 * updated shards; ZeRO-2: reduce-scatter per bucket on every micro-batch (gradients stay
 * sharded), then as ZeRO-1; ZeRO-3: per-layer reduce-scatter on every micro-batch, and the
 * parameters are gathered where they are used.
 */
/** A gradient buffer of one group (Megatron keeps the expert parameters' apart): its buckets and their names. */
interface GradientBuffer {
  group: 'dp' | 'edp';
  ways: number;
  prefix: string;
  buckets: GradientBucket[];
}

function trainStage(ctx: StageContext, start: Handle): Handle {
  const { plan, b } = ctx;
  const m = plan.batch.microBatches;
  const lastStage = ctx.stage === plan.world.pp - 1;
  // Megatron-LM keeps one buffer on pipeline stages after the first (distributed_data_parallel.py).
  const bucketBytes = ctx.stage > 0 && !plan.ddp.bucketsAfterFirstStage ? Number.POSITIVE_INFINITY : plan.dpBucketBytes;
  const buffers: GradientBuffer[] = (['dp', 'edp'] as const).flatMap((group): GradientBuffer[] => {
    const ways = gradientGroupSize(plan, group);
    const layers = ctx.layers.filter((i) => gradientGroupOf(at(plan.layers, i)) === group);
    if (ways < 2 || (group === 'edp' && layers.length === 0)) return [];
    return [{ group, ways, prefix: group === 'dp' ? 'bucket' : 'expert-bucket', buckets: gradientBuckets(plan, layers, lastStage && group === 'dp', bucketBytes) }];
  });
  const bucketOf = new Map(buffers.flatMap((buffer) => buffer.buckets.map((bucket, k) => [bucket.closedBy, { buffer, k }] as const)));
  // Without overlap (Megatron's default), ZeRO 0 and 1 reduce every bucket after the schedule.
  const afterSchedule = !plan.ddp.overlap && plan.zero < 2;
  const type = plan.zero === 0 ? 'ALLREDUCE' : 'REDUCESCATTER';
  const gradientDone: Handle[] = [];
  const sends: Handle[] = [];
  let h = start;
  for (const u of stageOrder(plan.pipeline.schedule, ctx.stage, plan.world.pp, m, plan.pipeline.virtualStages)) {
    const mb = u.microBatch;
    // Every micro-batch's backward of a chunk runs in micro-batch order, so the last one closes the buckets.
    const last = mb === m - 1;
    if (u.pass === 'fwd') {
      h = runUnit(ctx, u, h, sends, () => undefined);
      continue;
    }
    h = runUnit(ctx, u, h, sends, (i, wg) => {
      const l = plan.layers[i] ?? indexOutOfRange(i);
      const group = gradientGroupOf(l);
      if (gradientGroupSize(plan, group) < 2) return;
      if (plan.zero === 3) {
        const bytes = gradientParams(plan, l) * plan.gradientBytes;
        gradientDone.push(b.collective(`${l.layer.name}.grad.REDUCESCATTER.mb${mb}`, { type: 'REDUCESCATTER', bytes, group, label: 'grad' }, wg));
        return;
      }
      const closes = bucketOf.get(i);
      if (closes === undefined || (!last && plan.zero < 2) || afterSchedule) return;
      const { buffer, k } = closes;
      gradientDone.push(b.collective(`${buffer.prefix}${k}.grad.${type}.mb${mb}`, { type, bytes: at(buffer.buckets, k).bytes, group: buffer.group, label: 'grad' }, wg));
    });
  }
  b.unit = { microBatch: m - 1, phase: 'step', chunk: 0 };
  if (afterSchedule) {
    // finalize_model_grads (core/distributed/finalize_model_grads.py): after the schedule's last
    // backward and its sends, the whole buffer (finish_grad_sync), never ahead of a pipeline send.
    const scheduleDone = joinHandles(h, ...sends);
    for (const buffer of buffers) {
      for (const [k, bucket] of buffer.buckets.entries()) gradientDone.push(b.collective(`${buffer.prefix}${k}.grad.${type}.mb${m - 1}`, { type, bytes: bucket.bytes, group: buffer.group, label: 'grad' }, scheduleDone));
    }
  }
  // Megatron-LM's finalize_model_grads: after the data-parallel reduction, the gradients of the
  // parameters sequence parallelism replicates (norms, row-parallel biases) summed over the TP
  // group in one coalesced all-reduce; then the tied embedding's over the first and last stage.
  const spBytes = plan.sequenceParallel && plan.world.tp > 1 ? sequenceParallelGradParams(plan, ctx.layers, lastStage) * plan.gradientBytes : 0;
  const replicated = b.collective('sp.norms.grad.ALLREDUCE', { type: 'ALLREDUCE', bytes: spBytes, group: 'tp', label: 'grad' }, joinHandles(h, ...gradientDone));
  const embeddingBytes = ctx.stage === 0 || lastStage ? tiedEmbeddingBytes(plan) : 0;
  // Megatron-LM's _allreduce_embedding_grads: the tied word embedding's gradient summed over the first and last stage.
  const embedding = b.collective('embedding.grad.ALLREDUCE', { type: 'ALLREDUCE', bytes: embeddingBytes, group: 'embedding', label: 'grad' }, joinHandles(h, replicated, ...gradientDone));
  const stats = gradientStatistics(ctx, joinHandles(h, replicated, embedding, ...gradientDone));
  const update = b.compute({ name: 'optimizer.step', pass: 'update', layer: -1, microBatch: m - 1, cycles: ctx.updateCycles, ...ctx.updateWork }, joinHandles(h, replicated, embedding, stats, ...gradientDone, ...sends));
  if (plan.zero === 0 || plan.zero === 3 || buffers.length === 0) {
    b.unit = undefined;
    return update;
  }
  const gathers = buffers.flatMap((buffer) =>
    buffer.buckets.map((bucket, k) => b.collective(`${buffer.prefix}${k}.params.ALLGATHER`, { type: 'ALLGATHER', bytes: Math.ceil(bucket.bytes / buffer.ways), group: buffer.group, label: 'params' }, update)),
  );
  b.unit = undefined;
  return joinHandles(update, ...gathers);
}

/** One fp32 value: the found-inf flag and the squared gradient norm Megatron reduces. */
const STATISTIC_BYTES = 4;

/**
 * Megatron-LM's optimizer step, before the update (core/optimizer/optimizer.py: step,
 * prepare_grads, clip_grad_norm; clip_grads.py get_grad_norm_fp32): with fp16's grad scaler the
 * found-inf flag all-reduced (MAX), then the gradient norm (clip_grad 1.0 by default), each one
 * fp32 over the optimizer's grad-stats group: the model-parallel group (TP x PP), or the whole
 * world for the distributed optimizer (ZeRO 1 and up). PyTorch DDP's and the legacy plans have neither.
 */
function gradientStatistics(ctx: StageContext, deps: Handle): Handle {
  const { plan, b } = ctx;
  if (plan.ddp.kind !== 'megatron') return deps;
  const group = plan.zero >= 1 ? 'world' : 'mp';
  const ranks = group === 'world' ? worldSize(plan.world) : plan.world.tp * plan.world.pp;
  if (ranks < 2) return deps;
  let h = deps;
  if (plan.dtype === 'fp16') h = b.collective('optimizer.found-inf.ALLREDUCE', { type: 'ALLREDUCE', bytes: STATISTIC_BYTES, group, label: 'found-inf' }, h);
  return b.collective('optimizer.grad-norm.ALLREDUCE', { type: 'ALLREDUCE', bytes: STATISTIC_BYTES, group, label: 'grad-norm' }, h);
}

/**
 * Parameters of a stage whose gradients sequence parallelism leaves partial on each TP rank:
 * norm scales and shifts and row-parallel biases, those Megatron-LM marks `sequence_parallel`
 * (core/distributed/finalize_model_grads.py, _allreduce_non_tensor_model_parallel_grads; the
 * RowParallelLinear bias in core/tensor_parallel/layers.py); norm parameters outside every layer
 * (vector work off) are the last stage's, as in the gradient buckets.
 */
function sequenceParallelGradParams(plan: ParallelPlan, layers: readonly number[], lastStage: boolean): number {
  let params = lastStage ? plan.otherParams : 0;
  for (const i of layers) {
    const l = at(plan.layers, i);
    if (plan.structure?.parts[i]?.kind === 'norm') params += l.weightParamsHeld + l.biasParamsHeld;
    else if (l.role === 'row') params += l.biasParamsHeld;
  }
  return params;
}

/**
 * The group kinds the graphs' collectives name. A loop, not a flatMap of one-element arrays: on
 * the 100k-node chain's 250k-node graph that flatMap was ~350 ms of a Chakra translate.
 */
function collectiveGroupsOf(graphs: readonly StepGraph[]): Set<GroupKind> {
  const used = new Set<GroupKind>();
  for (const g of graphs) for (const n of g.nodes) if (n.kind === 'collective') used.add(n.group);
  return used;
}

export function buildStepSchedule(costedPlan: CostedPlan, options: ScheduleOptions = {}): StepSchedule {
  const { plan } = costedPlan;
  const iterations = options.iterations ?? 1;
  checkTraceSize(Math.max(...plan.pipeline.stages.map((s) => s.layers.length)), plan.batch.microBatches, iterations, options.limits !== false);
  const parts = partsOf(plan);
  const cpCores = cpCoresOf(plan);
  const graphs: StepGraph[] = [];
  for (let stage = 0; stage < plan.world.pp; stage++) {
    const b = new GraphBuilder();
    const { updatedParams: params, updateCycles } = at(costedPlan.stages, stage);
    const updateWork = { flops: 2 * params, tensorBytes: 3 * params * plan.elementBytes };
    const layers = at(plan.pipeline.stages, stage).layers;
    const ctx: StageContext = { plan, costed: costedPlan.layers, stage, layers, parts, iteration: 0, updateCycles, updateWork, b, iterations, cpCores };
    let h: Handle = DONE;
    for (let it = 0; it < iterations; it++) h = trainStage({ ...ctx, iteration: it }, h);
    graphs.push({ stage, nodes: b.nodes });
  }
  const used = collectiveGroupsOf(graphs);
  // The CP groups are listed with context parallelism though a p2p ring's transfers name no group (they are its members).
  if (plan.contextParallel !== undefined) used.add('cp');
  const groups = enumerateGroups(plan.world, GROUP_KINDS.filter((k) => used.has(k)));
  return { world: plan.world, graphs, groups, clockMHz: costedPlan.clockMHz };
}
