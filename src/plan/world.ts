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

/**
 * Every group of size > 1 of the given kinds, numbered from 1 in the order kinds are listed and,
 * within a kind, by the smallest member rank. The world group is id 0 in ASTRA-sim's terms
 * (pg_name "0" = all NPUs) and is not listed.
 */
export function enumerateGroups(w: WorldShape, kinds: readonly GroupKind[]): CommGroupDef[] {
  const out: CommGroupDef[] = [];
  for (const kind of kinds) {
    if (kind === 'world') continue;
    const seen = new Set<string>();
    for (let rank = 0; rank < worldSize(w); rank++) {
      const ranks = groupRanks(kind, rank, w);
      const key = ranks.join(',');
      if (ranks.length < 2 || seen.has(key)) continue;
      seen.add(key);
      out.push({ id: out.length + 1, kind, ranks });
    }
  }
  return out;
}

/** Group id per rank and kind, for writing pg_name; 0 for the world. */
export function groupIdIndex(groups: readonly CommGroupDef[], w: WorldShape): (rank: number, kind: GroupKind) => number {
  const byKey = new Map<string, number>();
  for (const g of groups) for (const r of g.ranks) byKey.set(`${g.kind}:${r}`, g.id);
  return (rank, kind) => {
    if (kind === 'world') return 0;
    const id = byKey.get(`${kind}:${rank}`);
    if (id === undefined) throw new Error(`internal error: rank ${rank} has no ${kind} group of size > 1 (world ${w.tp}x${w.dp}x${w.pp})`);
    return id;
  };
}
