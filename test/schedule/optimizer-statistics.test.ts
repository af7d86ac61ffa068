/**
 * Megatron-LM's optimizer statistics before the update (core/optimizer/optimizer.py step ->
 * prepare_grads -> found_inf all-reduce MAX with fp16's grad scaler; clip_grad_norm ->
 * clip_grads.py get_grad_norm_fp32's all-reduce, clip_grad 1.0 by default): one fp32 each over
 * the grad-stats group, the model-parallel group TP x PP (get_model_parallel_group), or every
 * rank with the distributed optimizer; PyTorch DDP has neither.
 */
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../../src/cost/ideal.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { analyseModel, planOf, scheduleOf } from '../../src/pipeline.js';
import type { PlanOptions } from '../../src/plan/build.js';
import type { StepSchedule } from '../../src/schedule/types.js';
import { modelPath } from '../helpers/models.js';

const gpt2 = analyseModel(modelPath('gpt2_small_like'), { batch: 2 });
const base: PlanOptions = { world: { tp: 2, dp: 2, pp: 2 }, batch: { globalBatch: 8, microBatch: 2, microBatches: 2 }, sequenceParallel: false, zero: 0, dtype: 'bf16', layerCycles: () => 1 };

async function statistics(options: Partial<PlanOptions>): Promise<{ schedule: StepSchedule; nodes: { name: string; bytes: number; ranks: number[] | 'world' }[] }> {
  const schedule = scheduleOf(planOf(gpt2, { ...base, ...options }), idealCostModel(await loadHardwareProfile('tpu-v4')));
  const nodes = (schedule.graphs[0]?.nodes ?? []).flatMap((n) => {
    if (n.kind !== 'collective' || !n.name.startsWith('optimizer.')) return [];
    const group = schedule.groups.find((g) => (g.kind === n.group || g.aliases?.includes(n.group)) && g.ranks.includes(0));
    return [{ name: n.name, bytes: n.bytes, ranks: n.group === 'world' ? ('world' as const) : (group?.ranks ?? []) }];
  });
  return { schedule, nodes };
}

describe("Megatron's found-inf and gradient-norm all-reduces", () => {
  it('bf16, plain DDP: the gradient norm over the model-parallel group of rank 0 (TP x PP: ranks 0, 1 and stage 1\'s 4, 5)', async () => {
    // rank = t + T x (d + D x p): T 2, D 2, so stage 1 starts at rank 4.
    expect((await statistics({})).nodes).toEqual([{ name: 'optimizer.grad-norm.ALLREDUCE', bytes: 4, ranks: [0, 1, 4, 5] }]);
  });

  it("fp16: the grad scaler's found-inf flag first, then the norm", async () => {
    expect((await statistics({ dtype: 'fp16' })).nodes.map((n) => n.name)).toEqual(['optimizer.found-inf.ALLREDUCE', 'optimizer.grad-norm.ALLREDUCE']);
  });

  it('the distributed optimizer (ZeRO 1) reduces the statistics over every rank', async () => {
    expect((await statistics({ zero: 1 })).nodes).toEqual([{ name: 'optimizer.grad-norm.ALLREDUCE', bytes: 4, ranks: 'world' }]);
  });

  it('PyTorch DDP and one rank have none; without pipelining the model-parallel group is the TP group, one id', async () => {
    expect((await statistics({ ddp: 'torch' })).nodes).toEqual([]);
    expect((await statistics({ world: { tp: 1, dp: 1, pp: 1 }, batch: { globalBatch: 2, microBatch: 2, microBatches: 1 } })).nodes).toEqual([]);
    const { schedule, nodes } = await statistics({ world: { tp: 2, dp: 2, pp: 1 }, batch: { globalBatch: 8, microBatch: 2, microBatches: 2 } });
    expect(nodes).toEqual([{ name: 'optimizer.grad-norm.ALLREDUCE', bytes: 4, ranks: [0, 1] }]);
    expect(schedule.groups.filter((g) => g.ranks.join() === '0,1')).toHaveLength(1);
  });
});
