import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { axesOf, checkAxes, parseAxisOrder, type AxisName } from '../../src/plan/axes.js';
import type { GroupKind, WorldShape } from '../../src/plan/types.js';
import { enumerateGroups, groupRanks, rankOnStage, stageOfRank, worldSize } from '../../src/plan/world.js';

/** Groups Megatron-core's RankGenerator printed (test/fixtures/megatron/README.md). */
interface RecordedWorld {
  name: string;
  world: { tp: number; cp: number; ep: number; etp: number; dp: number; pp: number; order: string };
  dense: Record<string, number[][]>;
  expert: Record<string, number[][]>;
}
const recorded = JSON.parse(readFileSync(new URL('../fixtures/megatron/rank-generator-groups.json', import.meta.url), 'utf8')) as RecordedWorld[];

/** Megatron's get_ranks token -> modtrans's group kind. */
const DENSE: Record<string, GroupKind> = { tp: 'tp', cp: 'cp', 'dp-cp': 'dp', pp: 'pp', 'tp-pp': 'mp' };
const EXPERT: Record<string, GroupKind> = { tp: 'etp', ep: 'ep', dp: 'edp' };

const worldOf = (r: RecordedWorld): WorldShape => ({ tp: r.world.tp, cp: r.world.cp, ep: r.world.ep, etp: r.world.etp, dp: r.world.dp, pp: r.world.pp, order: parseAxisOrder(r.world.order) });
const sorted = (groups: number[][]): number[][] => [...groups].sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0));

describe("parallel axes: Megatron-core's RankGenerator groups", () => {
  for (const r of recorded) {
    it(`${r.name}: every group kind equals Megatron's, dense and expert grids`, () => {
      const w = worldOf(r);
      checkAxes(w);
      for (const [table, kinds] of [
        [r.dense, DENSE],
        [r.expert, EXPERT],
      ] as const) {
        for (const [token, kind] of Object.entries(kinds)) {
          const expected = table[token];
          if (expected === undefined) continue;
          const multi = expected.filter((g) => g.length > 1);
          expect(sorted(enumerateGroups(w, [kind]).map((g) => g.ranks)), `${kind} (${token})`).toEqual(sorted(multi));
          // And each rank's own group, size 1 included.
          for (const g of expected) for (const rank of g) expect(groupRanks(kind, rank, w)).toEqual(g);
        }
      }
    });
  }

  it('the pipeline stage and the peer on another stage follow the order (pp not last)', () => {
    const w: WorldShape = { tp: 2, dp: 2, pp: 2, order: parseAxisOrder('tp-pp-dp') };
    // Megatron's docstring example (parallel_state.py): order tp-pp-dp, sizes 2-2-2: pp groups [0, 2], [1, 3], [4, 6], [5, 7].
    expect(Array.from({ length: 8 }, (_, r) => stageOfRank(r, w))).toEqual([0, 0, 1, 1, 0, 0, 1, 1]);
    expect(rankOnStage(5, 1, w)).toBe(7);
    expect(worldSize(w)).toBe(8);
  });

  it('--order: Megatron appends the axes it leaves out; a typo or a repeat is a one-line error', () => {
    expect(parseAxisOrder('tp-pp-dp')).toEqual(['tp', 'pp', 'dp', 'cp', 'ep'] satisfies AxisName[]);
    expect(parseAxisOrder('TP-CP-EP-DP-PP')).toEqual(['tp', 'cp', 'ep', 'dp', 'pp']);
    expect(() => parseAxisOrder('tp-xp-dp')).toThrow(/--order tp-xp-dp: 'xp' is not an axis/);
    expect(() => parseAxisOrder('tp-dp-tp')).toThrow(/--order tp-dp-tp: name each axis once/);
  });

  it("the expert grid's data-parallel size is world / (ETP x EP x PP), and must be whole", () => {
    expect(axesOf({ tp: 2, dp: 4, pp: 2, ep: 4, etp: 1 }).edp).toBe(2);
    expect(axesOf({ tp: 4, dp: 2, pp: 1 }).etp).toBe(4);
    expect(() => checkAxes({ tp: 2, dp: 3, pp: 1, ep: 4, etp: 1 })).toThrow(/--etp 1 x --ep 4 x --pp 1 = 4 does not divide the world of 6 ranks/);
  });
});
