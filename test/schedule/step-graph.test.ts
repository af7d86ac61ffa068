/**
 * A rank's step graph: micro-batches in order, forward then backward, data-parallel gradient
 * reduction as PyTorch DDP and ZeRO stages issue it, every dependency earlier in the file.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gptModel, gptParameterCount } from '../../bench/models/gpt-graph.js';
import { idealCostModel } from '../../src/cost/ideal.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import type { ZeroStage } from '../../src/plan/types.js';
import { analyseModel, planOf, scheduleOf } from '../../src/pipeline.js';
import type { StepNode } from '../../src/schedule/types.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-step-'));
const file = join(dir, 'gpt.onnx');
writeFileSync(file, gptModel({ layers: 2, hidden: 256, heads: 8, seq: 64, batch: 2, vocab: 1000 }));
const analysed = analyseModel(file);
const model = idealCostModel(await loadHardwareProfile('tpu-256'), { optimizer: 'sgd' });

function graph(zero: ZeroStage, microBatches = 3, dpBucketMiB = 25): StepNode[] {
  const plan = planOf(analysed, {
    world: { tp: 2, dp: 2, pp: 1 }, batch: { globalBatch: 4 * microBatches, microBatch: 2, microBatches },
    sequenceParallel: false, zero, dtype: 'bf16', dpBucketMiB, ddp: 'torch',
  });
  return present(scheduleOf(plan, model).graphs[0], 'stage 0 graph').nodes;
}

/** The plan's stage graphs under Megatron-LM's DDP (the default), over 2 pipeline stages. */
function megatronGraphs(overlapGradReduce: boolean, dpBucketMiB?: number) {
  const plan = planOf(analysed, {
    world: { tp: 1, dp: 2, pp: 2 }, batch: { globalBatch: 8, microBatch: 2, microBatches: 2 },
    sequenceParallel: false, zero: 0, dtype: 'bf16', ...(dpBucketMiB === undefined ? {} : { dpBucketMiB }), overlapGradReduce,
  }, model);
  return scheduleOf(plan, model).graphs;
}

const layers = analysed.layers.length;
const paramLayers = analysed.layers.filter((l) => l.weightParams + l.biasParams > 0).length;

describe('step graph', () => {
  it('runs each micro-batch forward then backward, in order, with dependencies on earlier nodes only', () => {
    const nodes = graph(0);
    for (const [i, n] of nodes.entries()) expect(n.deps.every((d) => d < i)).toBe(true);
    const compute = nodes.filter((n) => n.kind === 'compute' && n.pass !== 'update');
    const order = compute.map((n) => (n.kind === 'compute' ? `${n.microBatch}${n.pass === 'fwd' ? 'F' : 'B'}` : ''));
    const collapsed = order.filter((x, i) => i === 0 || x !== order[i - 1]);
    expect(collapsed).toEqual(['0F', '0B', '1F', '1B', '2F', '2B']);
    expect(nodes[nodes.length - 1]).toMatchObject({ kind: 'compute', pass: 'update' });
  });

  it("Megatron-LM's DDP (default): one buffer per stage, all-reduced after the schedule's last backward and its sends (finalize_model_grads)", () => {
    for (const g of megatronGraphs(false)) {
      const dpNodes = g.nodes.filter((n) => n.kind === 'collective' && n.group === 'dp');
      expect(dpNodes.map((n) => (n.kind === 'collective' ? n.type : '')), `stage ${g.stage}`).toEqual(['ALLREDUCE']);
      const at = g.nodes.indexOf(dpNodes[0] as StepNode);
      // Every compute of the schedule and every pipeline send comes before it.
      const lastBackward = g.nodes.findLastIndex((n) => n.kind === 'compute' && n.pass !== 'update');
      expect(at).toBeGreaterThan(lastBackward);
      const sends = g.nodes.flatMap((n, i) => (n.kind === 'send' ? [i] : []));
      for (const send of sends) expect(g.nodes[at]?.deps, `stage ${g.stage}: the reduction waits for send ${send}`).toContain(send);
    }
  });

  it('--overlap-grad-reduce: buckets reduced as backward fills them on the first stage, one buffer on the others (distributed_data_parallel.py)', () => {
    // 1 KiB buckets (instead of max(40 M, 1 M x D) elements) so that the first stage has several.
    const [first, second] = megatronGraphs(true, 1 / 1024);
    const dp = (g: typeof first) => (g?.nodes ?? []).filter((n) => n.kind === 'collective' && n.group === 'dp');
    expect(dp(first).length).toBeGreaterThan(1);
    expect(dp(second)).toHaveLength(1);
    // A bucket on the first stage is reduced before the last backward compute ends.
    const lastBackward = (first?.nodes ?? []).findLastIndex((n) => n.kind === 'compute' && n.pass !== 'update');
    expect((first?.nodes ?? []).indexOf(dp(first)[0] as StepNode)).toBeLessThan(lastBackward);
  });

  it('DDP: one all-reduce per bucket after the last micro-batch; buckets cover every gradient once', () => {
    const oneBucket = graph(0).filter((n) => n.kind === 'collective' && n.group === 'dp');
    expect(oneBucket).toHaveLength(1);
    // 1 KiB buckets: one per parameter-holding layer (every layer's gradients exceed 1 KiB) plus the norms.
    const small = graph(0, 3, 1 / 1024).filter((n) => n.kind === 'collective' && n.group === 'dp');
    expect(small.length).toBe(paramLayers);
    expect(small.reduce((a, n) => a + (n.kind === 'collective' ? n.bytes : 0), 0)).toBe(oneBucket[0]?.kind === 'collective' ? oneBucket[0].bytes : -1);
  });

  it("gradients reduce in Megatron-LM's width: fp32 for bf16 training (--grad-reduce-in-bf16: bf16), fp16 for fp16 (--accumulate-allreduce-grads-in-fp32: fp32)", () => {
    const dpBytes = (world: { tp: number; dp: number; pp: number }, dtype: 'bf16' | 'fp16', gradReduce?: 'megatron' | 'fp32' | 'param') => {
      const plan = planOf(analysed, {
        world, batch: { globalBatch: 2 * world.dp, microBatch: 2, microBatches: 1 },
        sequenceParallel: false, zero: 0, dtype, dpBucketMiB: 1 << 20, ...(gradReduce === undefined ? {} : { gradReduce }),
      });
      return present(scheduleOf(plan, model).graphs[0], 'graph').nodes.reduce((a, n) => a + (n.kind === 'collective' && n.group === 'dp' ? n.bytes : 0), 0);
    };
    // One rank holds every parameter at T = 1: 4 bytes each, the initializers' count, with the
    // embedding's and the LM head's vocabulary padded to a multiple of 128 (Megatron-LM: 1000 -> 1024 rows).
    const parameters = gptParameterCount({ layers: 2, hidden: 256, heads: 8, seq: 64, batch: 2, vocab: 1000 }) + 2 * (1024 - 1000) * 256;
    const single = { tp: 1, dp: 2, pp: 1 };
    expect(dpBytes(single, 'bf16')).toBe(4 * parameters);
    expect(dpBytes(single, 'bf16', 'param')).toBe(2 * parameters);
    expect(dpBytes(single, 'fp16')).toBe(2 * parameters);
    expect(dpBytes(single, 'fp16', 'fp32')).toBe(4 * parameters);
    const split = { tp: 2, dp: 2, pp: 1 };
    expect(dpBytes(split, 'bf16')).toBe(2 * dpBytes(split, 'bf16', 'param'));
  });

  it("--sp: the norms' and row-parallel biases' gradients, partial per TP rank, all-reduced over TP once per step, coalesced, in the gradient width (Megatron-LM's finalize_model_grads)", () => {
    const h = 256;
    // Per block LayerNorms ln_1, ln_2 (scale and shift) and the biases of the attention output and
    // MLP down projections (row-parallel); then ln_f. fp32 main gradients for bf16.
    const params = 2 * (2 * 2 * h + 2 * h) + 2 * h;
    for (const vectorOps of [false, true]) {
      const a = analyseModel(file, {}, {}, { vectorOps });
      const plan = planOf(a, { world: { tp: 2, dp: 1, pp: 1 }, batch: { globalBatch: 2, microBatch: 2, microBatches: 1 }, sequenceParallel: true, zero: 0, dtype: 'bf16', dpBucketMiB: 25 });
      const nodes = present(scheduleOf(plan, model).graphs[0], 'graph').nodes;
      const sp = nodes.filter((n) => n.kind === 'collective' && n.name.startsWith('sp.'));
      expect(sp.map((n) => (n.kind === 'collective' ? [n.type, n.group, n.bytes] : [])), `vector ops ${vectorOps}`).toEqual([['ALLREDUCE', 'tp', params * 4]]);
      // Before the optimizer step, after the last backward.
      const step = nodes.findIndex((n) => n.kind === 'compute' && n.pass === 'update');
      expect(nodes[step]?.deps).toContain(nodes.indexOf(present(sp[0], 'sp all-reduce')));
      const noSp = planOf(a, { world: { tp: 2, dp: 1, pp: 1 }, batch: { globalBatch: 2, microBatch: 2, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'bf16', dpBucketMiB: 25 });
      expect(present(scheduleOf(noSp, model).graphs[0], 'graph').nodes.some((n) => n.kind === 'collective' && n.name.startsWith('sp.'))).toBe(false);
    }
  });

  it('ZeRO-1 reduces at the end, ZeRO-2 on every micro-batch, ZeRO-3 gathers parameters before each use', () => {
    const dp = (nodes: StepNode[], type: string) => nodes.filter((n) => n.kind === 'collective' && n.group === 'dp' && n.type === type).length;
    const z1 = graph(1);
    expect([dp(z1, 'REDUCESCATTER'), dp(z1, 'ALLGATHER'), dp(z1, 'ALLREDUCE')]).toEqual([1, 1, 0]);
    const z2 = graph(2);
    expect([dp(z2, 'REDUCESCATTER'), dp(z2, 'ALLGATHER')]).toEqual([3, 1]);
    const z3 = graph(3);
    // Per micro-batch: a gather before each parameter-holding layer's forward and backward, a reduce-scatter after its backward.
    expect([dp(z3, 'ALLGATHER'), dp(z3, 'REDUCESCATTER')]).toEqual([3 * 2 * paramLayers, 3 * paramLayers]);
    expect(layers).toBeGreaterThan(paramLayers);
  });

  it("ZeRO-3 prefetches one layer ahead (FSDP's forward_prefetch / backward_prefetch): a layer's gather waits for the one before it and for the previous layer's start, not for its compute", () => {
    const nodes = graph(3, 1);
    const gathers = nodes.flatMap((n, i) => (n.kind === 'collective' && n.name.includes('.fwd.ALLGATHER.params.mb0') ? [i] : []));
    expect(gathers.length).toBe(paramLayers);
    const forwardOf = (gather: number): number => nodes.findIndex((n) => n.kind === 'compute' && n.pass === 'fwd' && n.name === (nodes[gather]?.name ?? '').replace('.fwd.ALLGATHER.params.mb0', '.fwd.mb0'));
    for (let k = 1; k < gathers.length; k++) {
      const gather = present(nodes[gathers[k] ?? -1], 'gather');
      // The previous gather comes first on the gather stream...
      expect(gather.deps, gather.name).toContain(gathers[k - 1]);
      // ...and the previous parameter layer's forward is not waited for (it runs while this gathers).
      expect(gather.deps, gather.name).not.toContain(forwardOf(gathers[k - 1] ?? -1));
    }
  });
});
