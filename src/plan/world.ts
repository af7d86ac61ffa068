/**
 * Rank layout and communicator groups over the parallel axes (plan/axes.ts: Megatron-core's
 * RankGenerator; default order tp-cp-ep-dp-pp, so rank = t + T x (c + C x (d + D x p))).
 */
import { axesOf, GROUP_AXES, GROUP_KINDS, worldLayout, gridLayout, spannedRanks, stageOfRank, withAxisIndex, worldSize } from './axes.js';
import type { CommGroupDef, GroupKind, WorldShape } from './types.js';

export { GROUP_KINDS, stageOfRank, worldLayout, worldSize };

/** The rank at pipeline stage `stage` with every other index of `rank` kept (a pipeline transfer's peer). */
export const rankOnStage = (rank: number, stage: number, w: WorldShape): number => withAxisIndex(rank, 'pp', stage, gridLayout(w, 'dense'));

/** The rank `offset` steps along `axis` (its index + offset, mod the axis size; every other index kept): a CP ring's neighbour. */
export function rankAlongAxis(rank: number, axis: 'cp', offset: number, w: WorldShape): number {
  const g = gridLayout(w, 'dense');
  const size = g.sizes[axis];
  const index = Math.floor(rank / g.strides[axis]) % size;
  return withAxisIndex(rank, axis, (((index + offset) % size) + size) % size, g);
}

/** The ranks of `kind`'s group that `rank` belongs to, ascending. */
export function groupRanks(kind: GroupKind, rank: number, w: WorldShape): number[] {
  if (kind === 'world') return Array.from({ length: worldSize(w) }, (_, r) => r);
  if (kind === 'embedding') {
    // First and last pipeline stage hold the tied word embedding (Megatron-LM's embedding group, default_embedding_ranks).
    return w.pp === 1 ? [rank] : [rankOnStage(rank, 0, w), rankOnStage(rank, w.pp - 1, w)];
  }
  const { grid, axes } = GROUP_AXES[kind];
  return spannedRanks(rank, axes, axesOf(w).order, gridLayout(w, grid));
}

/** Members of one `kind` group: the product of the sizes of the axes it spans. */
function groupSize(kind: Exclude<GroupKind, 'world' | 'embedding'>, w: WorldShape): number {
  const { grid, axes } = GROUP_AXES[kind];
  const g = gridLayout(w, grid);
  return axes.reduce((n, a) => n * g.sizes[a], 1);
}

/**
 * Every group of size > 1 of the given kinds, numbered from 1 in the order kinds are listed and,
 * within a kind, by the smallest member rank. The world group is id 0 in ASTRA-sim's terms
 * (pg_name "0" = all NPUs) and is not listed. A group's smallest member is its rank at index 0
 * along every axis the group spans, so only those ranks list a group: the work is linear in the
 * world size (listing every rank's group and dropping repeats was quadratic: 57 s at 16,384 ranks).
 * A kind whose group has the members of one listed before (the model-parallel group without
 * pipelining is the TP group; the EP group may be the DP one) is that group's alias: one id.
 */
export function enumerateGroups(w: WorldShape, kinds: readonly GroupKind[]): CommGroupDef[] {
  const out: CommGroupDef[] = [];
  const size = worldSize(w);
  const order = axesOf(w).order;
  const byMembers = new Map<string, CommGroupDef>();
  for (const kind of kinds) {
    if (kind === 'world') continue;
    if (kind === 'embedding') {
      // [first stage, last stage]: listed once, by its first-stage member.
      if (w.pp < 2) continue;
      for (let rank = 0; rank < size; rank++) if (stageOfRank(rank, w) === 0) out.push({ id: out.length + 1, kind, ranks: groupRanks(kind, rank, w) });
      continue;
    }
    if (groupSize(kind, w) < 2) continue;
    const { grid, axes } = GROUP_AXES[kind];
    const g = gridLayout(w, grid);
    const first = (rank: number): boolean => axes.every((a) => Math.floor(rank / g.strides[a]) % g.sizes[a] === 0);
    for (let rank = 0; rank < size; rank++) {
      if (!first(rank)) continue;
      const ranks = spannedRanks(rank, axes, order, g);
      // The same members as a group listed before (the model-parallel group without pipelining is the TP group): that group, under both kinds.
      const key = ranks.join(',');
      const same = byMembers.get(key);
      if (same !== undefined) {
        same.aliases = [...(same.aliases ?? []), kind];
        continue;
      }
      const def: CommGroupDef = { id: out.length + 1, kind, ranks };
      byMembers.set(key, def);
      out.push(def);
    }
  }
  return out;
}

/** Group id per rank and kind, for writing pg_name; 0 for the world. */
export function groupIdIndex(groups: readonly CommGroupDef[], w: WorldShape): (rank: number, kind: GroupKind) => number {
  // One Int32Array per kind, indexed by rank (0 = no group of size > 1): no per-rank key strings.
  const byKind = new Map<GroupKind, Int32Array>();
  for (const g of groups) {
    for (const kind of [g.kind, ...(g.aliases ?? [])]) {
      let ids = byKind.get(kind);
      if (ids === undefined) {
        ids = new Int32Array(worldSize(w));
        byKind.set(kind, ids);
      }
      for (const r of g.ranks) ids[r] = g.id;
    }
  }
  return (rank, kind) => {
    if (kind === 'world') return 0;
    const id = byKind.get(kind)?.[rank] ?? 0;
    if (id === 0) throw new Error(`internal error: rank ${rank} has no ${kind} group of size > 1 (world ${w.tp}x${w.dp}x${w.pp})`);
    return id;
  };
}

/** A plan's layout for summary lines: the world's (worldLayout), then SP and ZeRO where on. */
export const planLayout = (plan: { world: WorldShape; sequenceParallel: boolean; zero: number }): string =>
  `${worldLayout(plan.world)}${plan.sequenceParallel ? ', SP' : ''}${plan.zero > 0 ? `, ZeRO-${plan.zero}` : ''}`;
