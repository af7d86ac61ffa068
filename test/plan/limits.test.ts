/**
 * Issue 22 row 7: what a plan implies is bounded (world size, micro-batches, iterations, trace
 * size), each a one-line exit-2 error naming the limit and the options; group enumeration is
 * linear in the world size.
 */
import { describe, expect, it } from 'vitest';
import { planRequestOf } from '../../src/cli/plan-request.js';
import { InputError } from '../../src/errors.js';
import { batchPlanOf } from '../../src/plan/build.js';
import { checkTraceSize, MAX_MICRO_BATCHES, MAX_TRACE_LAYER_PASSES, MAX_WORLD_RANKS } from '../../src/plan/limits.js';
import type { GroupKind, WorldShape } from '../../src/plan/types.js';
import { enumerateGroups, groupIdIndex } from '../../src/plan/world.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { ROOT } from '../helpers/models.js';

const planOpts = { dtype: 'fp32', params: 'all' };

/** The groups by their definition (Megatron-LM's layout, rank = t + T(d + D p)), written out naively. */
function referenceGroups(w: WorldShape, kinds: readonly GroupKind[]): { kind: GroupKind; ranks: number[] }[] {
  const rank = (t: number, d: number, p: number): number => t + w.tp * (d + w.dp * p);
  const out: { kind: GroupKind; ranks: number[] }[] = [];
  for (const kind of kinds) {
    const groups: number[][] = [];
    if (kind === 'tp' && w.tp > 1) for (let p = 0; p < w.pp; p++) for (let d = 0; d < w.dp; d++) groups.push(Array.from({ length: w.tp }, (_, t) => rank(t, d, p)));
    if (kind === 'dp' && w.dp > 1) for (let p = 0; p < w.pp; p++) for (let t = 0; t < w.tp; t++) groups.push(Array.from({ length: w.dp }, (_, d) => rank(t, d, p)));
    if (kind === 'pp' && w.pp > 1) for (let d = 0; d < w.dp; d++) for (let t = 0; t < w.tp; t++) groups.push(Array.from({ length: w.pp }, (_, p) => rank(t, d, p)));
    if (kind === 'embedding' && w.pp > 1) for (let d = 0; d < w.dp; d++) for (let t = 0; t < w.tp; t++) groups.push([rank(t, d, 0), rank(t, d, w.pp - 1)]);
    // Numbered by the smallest member rank within a kind.
    groups.sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0));
    for (const ranks of groups) out.push({ kind, ranks });
  }
  return out;
}

describe('communicator groups', () => {
  const kinds: GroupKind[] = ['tp', 'dp', 'pp', 'embedding'];
  it('lists every group once, numbered from 1 by kind and smallest member', () => {
    for (const w of [{ tp: 2, dp: 3, pp: 2 }, { tp: 4, dp: 1, pp: 3 }, { tp: 1, dp: 5, pp: 1 }, { tp: 3, dp: 2, pp: 4 }, { tp: 1, dp: 1, pp: 1 }]) {
      const groups = enumerateGroups(w, kinds);
      expect(groups.map(({ kind, ranks }) => ({ kind, ranks })), JSON.stringify(w)).toEqual(referenceGroups(w, kinds));
      expect(groups.map((g) => g.id)).toEqual(groups.map((_, i) => i + 1));
      const id = groupIdIndex(groups, w);
      for (const g of groups) for (const r of g.ranks) expect(id(r, g.kind)).toBe(g.id);
      expect(id(0, 'world')).toBe(0);
    }
  });

  it('is linear in the world size: 65,536 ranks in one data-parallel group', () => {
    // Listing each rank's group and dropping repeats was quadratic (57 s at 16,384 ranks): this
    // case did not finish within the test's time.
    const w = { tp: 1, dp: 65536, pp: 1 };
    const groups = enumerateGroups(w, ['dp']);
    expect(groups).toHaveLength(1);
    expect(groups[0]?.ranks).toHaveLength(65536);
    expect(groupIdIndex(groups, w)(65535, 'dp')).toBe(1);
  });
});

describe('plan limits', () => {
  it('refuses worlds beyond 65,536 ranks, naming the options', () => {
    expect(MAX_WORLD_RANKS).toBe(65536);
    expect(() => planRequestOf({ ...planOpts, dp: 2 ** 31 })).toThrow(new InputError('--tp 1 x --dp 2147483648 x --pp 1: a world of 2,147,483,648 ranks is more than the limit of 65,536 ranks; --no-limits lifts the bounds'));
    expect(() => planRequestOf({ ...planOpts, parallelism: 'DATA', npus: 2 ** 20 })).toThrow(/^--npus 1048576: a world of 1,048,576 ranks is more than the limit of 65,536 ranks; --no-limits lifts the bounds$/);
    expect(planRequestOf({ ...planOpts, tp: 4, dp: 4096, pp: 4 }).world).toEqual({ tp: 4, dp: 4096, pp: 4 });
    // --no-limits lifts it.
    expect(planRequestOf({ ...planOpts, dp: 2 ** 17, limits: false }).world).toEqual({ tp: 1, dp: 2 ** 17, pp: 1 });
  });

  it('refuses more than 16,384 micro-batches per step', () => {
    expect(MAX_MICRO_BATCHES).toBe(16384);
    expect(() => batchPlanOf({ globalBatch: 1e6, microBatch: 1 }, 1, 1)).toThrow(
      new InputError('--global-batch 1000000 / (--micro-batch 1 x --dp 1): 1,000,000 micro-batches per step are more than the limit of 16,384; raise --micro-batch or lower --global-batch; --no-limits lifts the bounds'),
    );
    expect(batchPlanOf({ globalBatch: 16384, microBatch: 1 }, 1, 1).microBatches).toBe(16384);
    expect(batchPlanOf({ globalBatch: 20000, microBatch: 1, limits: false }, 1, 1).microBatches).toBe(20000);
  });

  it('refuses traces of more than 2^24 layer passes per rank', () => {
    expect(() => checkTraceSize(1024, 1024, 16)).not.toThrow();
    expect(1024 * 1024 * 16).toBe(MAX_TRACE_LAYER_PASSES);
    expect(() => checkTraceSize(1024, 1024, 17)).toThrow(/traces would hold 17,825,792 layer passes per rank \(1,024 layers per stage x 1,024 micro-batches x 17 --iterations\), more than the limit of 16,777,216; lower --iterations or --global-batch, raise --micro-batch or --pp; --no-limits lifts the bounds$/);
    expect(() => checkTraceSize(1024, 1024, 17, false)).not.toThrow();
  });

  it('the CLI exits 2 with one line for each (--dp 2^31, --global-batch 1e6, --iterations 10000, a 2^20-rank world, --chakra-dims 1e6; --passes, the former name, adds its note)', async () => {
    const cwd = ROOT;
    const calls = [
      ['translate', 'gpt2_small_like', '--dp', String(2 ** 31), '-o', '-'],
      ['translate', 'gpt2_small_like', '--global-batch', '1000000', '--micro-batch', '1'],
      ['translate', 'gpt2_small_like', '--iterations', '10000', '--format', 'chakra-json'],
      ['translate', 'gpt2_small_like', '-p', 'DATA', '--npus', String(2 ** 20)],
      ['translate', 'gpt2_small_like', '-p', 'DATA', '--format', 'chakra', '--chakra-dims', '1000000', '-o', '/nonexistent/x'],
      // 16,384 micro-batches of 269 layers (99 GEMM-like, 170 vector) x 4 iterations: 17,629,184 layer passes.
      ['translate', 'gpt2_small_like', '--dp', '1', '--global-batch', '16384', '--micro-batch', '1', '--iterations', '4', '--format', 'chakra-json', '-o', '/nonexistent/x.json'],
      ['translate', 'gpt2_small_like', '--passes', '10000', '--format', 'chakra-json'],
    ].map((args) => ({ args, cwd }));
    const results = await runCliBatch(calls);
    const expected = [
      /^modtrans: --tp 1 x --dp 2147483648 x --pp 1: a world of 2,147,483,648 ranks is more than the limit of 65,536 ranks; --no-limits lifts the bounds\n$/,
      /^modtrans: --global-batch 1000000 \/ \(--micro-batch 1 x --dp 8\): 125,000 micro-batches per step are more than the limit of 16,384/,
      /^modtrans: --iterations 10000: more than the limit of 1,000; --no-limits lifts the bounds\n$/,
      /^modtrans: --npus 1048576: a world of 1,048,576 ranks is more than the limit of 65,536 ranks; --no-limits lifts the bounds\n$/,
      /^modtrans: --chakra-dims 1000000: more than the limit of 64; --no-limits lifts the bounds\n$/,
      /^modtrans: the plan's traces would hold 17,629,184 layer passes per rank \(269 layers per stage x 16,384 micro-batches x 4 --iterations\)/,
      /^modtrans: note: --passes is now --iterations \(training iterations per trace file\); the old name still works\nmodtrans: --iterations 10000: more than the limit of 1,000; --no-limits lifts the bounds\n$/,
    ];
    for (const [i, r] of results.entries()) {
      expect(r.stderr, calls[i]?.args.join(' ')).toMatch(expected[i] ?? /never/);
      expect(r.stderr.split('\n').filter((l) => l !== '')).toHaveLength(calls[i]?.args.includes('--passes') ? 2 : 1);
      expect(r.status).toBe(2);
    }
  });
});
