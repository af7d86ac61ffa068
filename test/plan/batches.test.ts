/** Global batch, micro-batches and the world shape from the options: every rule of the README's "Batches". */
import { describe, expect, it } from 'vitest';
import { planRequestOf } from '../../src/cli/plan-request.js';
import { batchPlanOf } from '../../src/plan/build.js';
import { enumerateGroups, rankOnStage, stageOfRank } from '../../src/plan/world.js';

describe('batches', () => {
  it('B / (b x D) micro-batches; unset values follow from the others', () => {
    expect(batchPlanOf({ globalBatch: 16, microBatch: 2 }, 2, 1)).toEqual({ globalBatch: 16, microBatch: 2, microBatches: 4 });
    expect(batchPlanOf({ batch: 8 }, 4, 1)).toEqual({ globalBatch: 32, microBatch: 8, microBatches: 1 });
    expect(batchPlanOf({ batch: 8, microBatch: 2 }, 4, 1)).toEqual({ globalBatch: 32, microBatch: 2, microBatches: 4 });
    expect(batchPlanOf({ globalBatch: 12 }, 3, 1)).toEqual({ globalBatch: 12, microBatch: 4, microBatches: 1 });
    // Nothing given: the exported batch per replica.
    expect(batchPlanOf({}, 8, 1)).toEqual({ globalBatch: 8, microBatch: 1, microBatches: 1 });
  });

  it('refuses splits that do not divide or leave a replica without a sample', () => {
    expect(() => batchPlanOf({ globalBatch: 10, microBatch: 2 }, 4, 1)).toThrow(/does not divide over 4 data-parallel replicas/);
    expect(() => batchPlanOf({ globalBatch: 12, microBatch: 4 }, 2, 1)).toThrow(/do not split into micro-batches of 4/);
    expect(() => batchPlanOf({ globalBatch: 2 }, 8, 1)).toThrow(/less than one sample/);
    expect(() => batchPlanOf({ batch: 4, globalBatch: 16 }, 2, 1)).toThrow(/not --global-batch 16/);
  });
});

describe('world shape', () => {
  const base = { dtype: 'fp32', params: 'all' };
  it('--tp/--dp, --npus agreeing; legacy -p through the same plan', () => {
    expect(planRequestOf({ ...base, tp: 4, dp: 2 }).world).toEqual({ tp: 4, dp: 2, pp: 1 });
    expect(planRequestOf({ ...base, tp: 4, npus: 16 }).world).toEqual({ tp: 4, dp: 4, pp: 1 });
    expect(planRequestOf({ ...base }).world).toEqual({ tp: 1, dp: 8, pp: 1 });
    expect(planRequestOf({ ...base, parallelism: 'model', npus: 4 }).world).toEqual({ tp: 4, dp: 1, pp: 1 });
    expect(planRequestOf({ ...base, parallelism: 'HYBRID_DATA_MODEL', npus: 16, mpGroup: 4 }).world).toEqual({ tp: 4, dp: 4, pp: 1 });
  });

  it('says what is wrong in one line', () => {
    expect(() => planRequestOf({ ...base, tp: 4, dp: 2, npus: 16 })).toThrow(/--npus 16 disagrees with --tp 4 x --dp 2 x --pp 1 = 8/);
    expect(() => planRequestOf({ ...base, tp: 2, parallelism: 'DATA' })).toThrow(/give one or the other/);
    expect(() => planRequestOf({ ...base, parallelism: 'DATA', mpGroup: 2 })).toThrow(/--mp-group 2 does not apply to -p DATA/);
    expect(() => planRequestOf({ ...base, sp: true })).toThrow(/--sp .* needs --tp 2 or more/);
  });

  it('Megatron-LM rank order: t fastest, then d, then p; groups of size > 1 numbered from 1', () => {
    const w = { tp: 2, dp: 3, pp: 2 };
    expect(Array.from({ length: 12 }, (_, r) => stageOfRank(r, w))).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]);
    expect(rankOnStage(7, 0, w)).toBe(1);
    const groups = enumerateGroups(w, ['tp', 'dp']);
    expect(groups.slice(0, 2).map((g) => g.ranks)).toEqual([[0, 1], [2, 3]]);
    expect(groups.filter((g) => g.kind === 'dp').map((g) => g.ranks)).toEqual([[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9, 11]]);
    expect(groups.map((g) => g.id)).toEqual(Array.from({ length: groups.length }, (_, i) => i + 1));
  });
});
