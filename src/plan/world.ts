/** Rank layout and communicator groups (Megatron-LM order: tensor rank fastest, then data, then pipeline). */
import type { CommGroupDef, GroupKind, RankCoord, WorldShape } from './types.js';

export const worldSize = (w: WorldShape): number => w.tp * w.dp * w.pp;

export function rankOf(c: RankCoord, w: WorldShape): number {
  return c.t + w.tp * (c.d + w.dp * c.p);
}

export function coordOf(rank: number, w: WorldShape): RankCoord {
  return { t: rank % w.tp, d: Math.floor(rank / w.tp) % w.dp, p: Math.floor(rank / (w.tp * w.dp)) };
}

/** The ranks of `kind`'s group that `rank` belongs to, in group order. */
export function groupRanks(kind: GroupKind, rank: number, w: WorldShape): number[] {
  const c = coordOf(rank, w);
  switch (kind) {
    case 'tp':
      return Array.from({ length: w.tp }, (_, t) => rankOf({ ...c, t }, w));
    case 'dp':
      return Array.from({ length: w.dp }, (_, d) => rankOf({ ...c, d }, w));
    case 'pp':
      return Array.from({ length: w.pp }, (_, p) => rankOf({ ...c, p }, w));
    case 'embedding':
      // First and last pipeline stage hold the tied word embedding (Megatron-LM's embedding group).
      return w.pp === 1 ? [rank] : [rankOf({ ...c, p: 0 }, w), rankOf({ ...c, p: w.pp - 1 }, w)];
    case 'world':
      return Array.from({ length: worldSize(w) }, (_, r) => r);
  }
}

/** A rank's place along `kind`'s axis (0 for the world), and the axis length: group members differ only there. */
function axisOf(kind: Exclude<GroupKind, 'world' | 'embedding'>, c: RankCoord, w: WorldShape): { at: number; size: number } {
  if (kind === 'tp') return { at: c.t, size: w.tp };
  if (kind === 'dp') return { at: c.d, size: w.dp };
  return { at: c.p, size: w.pp };
}

/**
 * Every group of size > 1 of the given kinds, numbered from 1 in the order kinds are listed and,
 * within a kind, by the smallest member rank. The world group is id 0 in ASTRA-sim's terms
 * (pg_name "0" = all NPUs) and is not listed. A group's smallest member is its rank at
 * coordinate 0 along the kind's axis, so only those ranks list a group: the work is linear in the
 * world size (listing every rank's group and dropping repeats was quadratic: 57 s at 16,384 ranks).
 */
export function enumerateGroups(w: WorldShape, kinds: readonly GroupKind[]): CommGroupDef[] {
  const out: CommGroupDef[] = [];
  const size = worldSize(w);
  for (const kind of kinds) {
    if (kind === 'world') continue;
    for (let rank = 0; rank < size; rank++) {
      const c = coordOf(rank, w);
      if (kind === 'embedding') {
        // [first stage, last stage]: listed once, by its first-stage member.
        if (w.pp < 2 || c.p !== 0) continue;
      } else {
        const axis = axisOf(kind, c, w);
        if (axis.size < 2 || axis.at !== 0) continue;
      }
      out.push({ id: out.length + 1, kind, ranks: groupRanks(kind, rank, w) });
    }
  }
  return out;
}

/** Group id per rank and kind, for writing pg_name; 0 for the world. */
export function groupIdIndex(groups: readonly CommGroupDef[], w: WorldShape): (rank: number, kind: GroupKind) => number {
  // One Int32Array per kind, indexed by rank (0 = no group of size > 1): no per-rank key strings.
  const byKind = new Map<GroupKind, Int32Array>();
  for (const g of groups) {
    let ids = byKind.get(g.kind);
    if (ids === undefined) {
      ids = new Int32Array(worldSize(w));
      byKind.set(g.kind, ids);
    }
    for (const r of g.ranks) ids[r] = g.id;
  }
  return (rank, kind) => {
    if (kind === 'world') return 0;
    const id = byKind.get(kind)?.[rank] ?? 0;
    if (id === 0) throw new Error(`internal error: rank ${rank} has no ${kind} group of size > 1 (world ${w.tp}x${w.dp}x${w.pp})`);
    return id;
  };
}
