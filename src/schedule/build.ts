/**
 * Plan + cost model -> each rank's step graph, in the order Megatron-LM / PyTorch issue the work:
 * per micro-batch the forward of every layer (tensor-parallel collectives blocking, as they are in
 * the framework), then the backward from the last layer (input gradient, its reduction, weight
 * gradient); data-parallel gradient buckets reduced as their last layer's backward of the last
 * micro-batch completes; the optimizer step; under ZeRO the parameter all-gathers. Iterations
 * after the first wait for the previous optimizer step.
 */
import type { CostModel } from '../cost/types.js';
import type { GroupKind, LayerPlan, ParallelPlan, PlannedCollective } from '../plan/types.js';
import { enumerateGroups } from '../plan/world.js';
import { costLayer, costUpdate, gradientParams, updatedParams, type CostedLayer } from './cost.js';
import { gradientBuckets } from './data-parallel.js';
import { DONE, GraphBuilder, joinHandles, type Handle } from './graph-builder.js';
import type { StepGraph, StepSchedule } from './types.js';

export interface ScheduleOptions {
  /** Training iterations in each graph (Chakra's --num-passes). */
  iterations?: number;
}

/** Group ids are numbered in this order of kinds. */
const GROUP_ORDER: readonly GroupKind[] = ['tp', 'dp', 'pp', 'embedding'];

interface StageContext {
  plan: ParallelPlan;
  costed: readonly CostedLayer[];
  layers: readonly number[];
  updateCycles: number;
  /** Roofline work of the optimizer step: one multiply-add per parameter, weight and gradient read, weight written. */
  updateWork: { flops: number; tensorBytes: number };
  b: GraphBuilder;
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
  if (plan.zero < 3 || plan.world.dp < 2) return DONE;
  const bytes = Math.ceil(gradientParams(plan, l)) * plan.elementBytes;
  return ctx.b.collective(`${l.layer.name}.${phase}.ALLGATHER.params.mb${mb}`, { type: 'ALLGATHER', bytes: Math.ceil(bytes / plan.world.dp), group: 'dp', label: 'params' }, deps);
}

function forward(ctx: StageContext, mb: number, start: Handle): Handle {
  let h = start;
  for (const i of ctx.layers) {
    const l = ctx.plan.layers[i]!;
    const c = ctx.costed[i]!;
    const gathered = zero3Gather(ctx, l, 'fwd', mb, h);
    h = collectives(ctx, l, 'fwd', l.collectives.beforeFwd, mb, joinHandles(h, gathered));
    h = ctx.b.compute({ name: `${l.layer.name}.fwd.mb${mb}`, pass: 'fwd', layer: i, microBatch: mb, cycles: c.fwd.cycles, flops: c.fwd.flops, tensorBytes: c.fwd.tensorBytes }, h);
    h = collectives(ctx, l, 'fwd', l.collectives.afterFwd, mb, h);
  }
  return h;
}

/** Backward of one micro-batch; `onGradient(i, handle)` sees each layer's weight gradient done. */
function backward(ctx: StageContext, mb: number, start: Handle, onGradient: (layer: number, done: Handle) => void): Handle {
  let h = start;
  for (let k = ctx.layers.length - 1; k >= 0; k--) {
    const i = ctx.layers[k]!;
    const l = ctx.plan.layers[i]!;
    const c = ctx.costed[i]!;
    const gathered = zero3Gather(ctx, l, 'bwd', mb, h);
    h = collectives(ctx, l, 'bwd', l.collectives.beforeBwd, mb, joinHandles(h, gathered));
    // The first layer's input is the data (and an embedding's, indices): no input gradient.
    const ig = l.needsInputGrad ? ctx.b.compute({ name: `${l.layer.name}.ig.mb${mb}`, pass: 'ig', layer: i, microBatch: mb, cycles: c.ig.cycles, flops: c.ig.flops, tensorBytes: c.ig.tensorBytes }, h) : h;
    const reduced = l.needsInputGrad ? collectives(ctx, l, 'bwd', l.collectives.afterIg, mb, ig) : ig;
    const wg = ctx.b.compute({ name: `${l.layer.name}.wg.mb${mb}`, pass: 'wg', layer: i, microBatch: mb, cycles: c.wg.cycles, flops: c.wg.flops, tensorBytes: c.wg.tensorBytes }, ig);
    onGradient(i, wg);
    h = joinHandles(reduced, wg);
  }
  return h;
}

/**
 * Gradient reduction and the optimizer step. ZeRO 0: all-reduce per bucket after the last
 * micro-batch; ZeRO-1: reduce-scatter per bucket after the last micro-batch, all-gather of the
 * updated shards; ZeRO-2: reduce-scatter per bucket on every micro-batch (gradients stay
 * sharded), then as ZeRO-1; ZeRO-3: per-layer reduce-scatter on every micro-batch, and the
 * parameters are gathered where they are used.
 */
function trainStage(ctx: StageContext, start: Handle): Handle {
  const { plan, b } = ctx;
  const dp = plan.world.dp;
  const m = plan.batch.microBatches;
  const buckets = gradientBuckets(plan, ctx.layers, true);
  const bucketOf = new Map(buckets.map((bucket, k) => [bucket.closedBy, k]));
  const gradientDone: Handle[] = [];
  let h = start;
  for (let mb = 0; mb < m; mb++) {
    h = forward(ctx, mb, h);
    const last = mb === m - 1;
    h = backward(ctx, mb, h, (i, wg) => {
      if (dp < 2) return;
      const l = plan.layers[i]!;
      if (plan.zero === 3) {
        const bytes = gradientParams(plan, l) * plan.elementBytes;
        gradientDone.push(b.collective(`${l.layer.name}.grad.REDUCESCATTER.mb${mb}`, { type: 'REDUCESCATTER', bytes, group: 'dp', label: 'grad' }, wg));
        return;
      }
      const k = bucketOf.get(i);
      if (k === undefined || (!last && plan.zero < 2)) return;
      const type = plan.zero === 0 ? 'ALLREDUCE' : 'REDUCESCATTER';
      gradientDone.push(b.collective(`bucket${k}.grad.${type}.mb${mb}`, { type, bytes: buckets[k]!.bytes, group: 'dp', label: 'grad' }, wg));
    });
  }
  const update = b.compute({ name: 'optimizer.step', pass: 'update', layer: -1, microBatch: m - 1, cycles: ctx.updateCycles, ...ctx.updateWork }, joinHandles(h, ...gradientDone));
  if (dp < 2 || plan.zero === 0 || plan.zero === 3) return update;
  return joinHandles(
    update,
    ...buckets.map((bucket, k) => b.collective(`bucket${k}.params.ALLGATHER`, { type: 'ALLGATHER', bytes: Math.ceil(bucket.bytes / dp), group: 'dp', label: 'params' }, update)),
  );
}

export function buildStepSchedule(plan: ParallelPlan, model: CostModel, options: ScheduleOptions = {}): StepSchedule {
  const iterations = options.iterations ?? 1;
  const costed = plan.layers.map((l) => costLayer(plan, l, model));
  const updateCycles = costUpdate(plan, model);
  const params = updatedParams(plan);
  const updateWork = { flops: 2 * params, tensorBytes: 3 * params * plan.elementBytes };
  const graphs: StepGraph[] = [];
  for (let stage = 0; stage < plan.world.pp; stage++) {
    const b = new GraphBuilder();
    const ctx: StageContext = { plan, costed, layers: plan.layers.map((_, i) => i), updateCycles, updateWork, b };
    let h: Handle = DONE;
    for (let it = 0; it < iterations; it++) h = trainStage(ctx, h);
    graphs.push({ stage, nodes: b.nodes });
  }
  const used = new Set(graphs.flatMap((g) => g.nodes.flatMap((n) => (n.kind === 'collective' ? [n.group] : []))));
  const groups = enumerateGroups(plan.world, GROUP_ORDER.filter((k) => used.has(k)));
  return { world: plan.world, graphs, groups, clockMHz: model.profile.clockMHz };
}
