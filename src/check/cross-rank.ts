/**
 * Checks across ranks (docs/astra-sim-formats.md F.1, F.2): every send meets its receive on (src, dst, tag, size),
 * and every member of a group issues the same collectives on it, in the same order. Ranks are
 * added one at a time so that files can be dropped once read.
 */
import { at, mapGet } from '../errors.js';
import type { Finding } from './findings.js';
import { listed } from './groups.js';
import type { RankPointToPoint, RankSummary } from './rank-checks.js';

/** Node names by rank, looked up only for the nodes a finding names. */
export type NameLookup = (rank: number, ids: ReadonlySet<number>) => Map<number, string>;

interface SequenceClass {
  /** Signatures of the first rank that had this sequence. */
  sigs: number[];
  ranks: number[];
}

const ordinal = (k: number): string => {
  const n = k + 1;
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th';
  return `${n}${s}`;
};

/** Per group, ranks grouped by their whole collective sequence; most ranks agree. */
export class CollectiveMatcher {
  private readonly classes = new Map<number, Map<string, SequenceClass>>();
  private readonly ids = new Map<number, Map<number, number[]>>();

  constructor(private readonly describe: (sig: number) => string) {}

  add(s: RankSummary): void {
    for (const [group, seq] of s.collectives) {
      let byKey = this.classes.get(group);
      if (byKey === undefined) {
        byKey = new Map();
        this.classes.set(group, byKey);
      }
      const key = seq.sigs.join(',');
      const cls = byKey.get(key);
      if (cls === undefined) byKey.set(key, { sigs: seq.sigs, ranks: [s.rank] });
      else cls.ranks.push(s.rank);
      let idsOf = this.ids.get(group);
      if (idsOf === undefined) {
        idsOf = new Map();
        this.ids.set(group, idsOf);
      }
      idsOf.set(s.rank, seq.ids);
    }
  }

  /** `members(group)`: the ranks (with a trace file) that must take part in the group's collectives. */
  finish(members: (group: number) => readonly number[], names: NameLookup): Finding[] {
    const findings: Finding[] = [];
    const wanted = new Map<number, Set<number>>();
    for (const [group, byKey] of this.classes) {
      const idsOf = mapGet(this.ids, group, 'collective ids by group');
      const absent = members(group).filter((r) => !idsOf.has(r));
      if (absent.length > 0) byKey.set('', { sigs: [], ranks: absent });
      if (byKey.size < 2) continue;
      const classes = [...byKey.values()].sort((a, b) => b.ranks.length - a.ranks.length || Math.min(...a.ranks) - Math.min(...b.ranks));
      const major = at(classes, 0); // byKey.size >= 2
      const where = group === 0 ? 'all NPUs (no pg_name)' : `group ${group}`;
      for (const cls of classes.slice(1)) {
        let k = 0;
        while (k < cls.sigs.length && k < major.sigs.length && cls.sigs[k] === major.sigs[k]) k++;
        // Every rank that agrees with the majority at position k, whatever it does later.
        const agree = classes.filter((c) => (k < major.sigs.length ? c.sigs[k] === major.sigs[k] : c.sigs.length === k)).flatMap((c) => c.ranks).sort((a, b) => a - b);
        const witness = major.ranks.reduce((a, b) => Math.min(a, b));
        const theirs = k < major.sigs.length
          ? `rank(s) ${listed(agree)} issue ${this.describe(at(major.sigs, k))} (rank ${witness} node ${mapGet(idsOf, witness, `collective ids of group ${group}`)[k]})`
          : `rank(s) ${listed(agree)} have only ${k}`;
        for (const rank of cls.ranks) {
          const rankIds = idsOf.get(rank) ?? [];
          if (k < cls.sigs.length) {
            const id = at(rankIds, k);
            let ids = wanted.get(rank);
            if (ids === undefined) {
              ids = new Set();
              wanted.set(rank, ids);
            }
            ids.add(id);
            findings.push({
              kind: 'collective-mismatch', effect: 'hang', rank, node: { id, name: '' },
              message: `${ordinal(k)} collective on ${where} is ${this.describe(at(cls.sigs, k))}, but ${theirs}; it never completes`,
            });
          } else {
            findings.push({
              kind: 'collective-missing', effect: 'hang', rank,
              message: `issues ${cls.sigs.length} collective(s) on ${where}, and ${theirs} as the ${ordinal(k)}; they wait for this rank forever`,
            });
          }
        }
      }
    }
    for (const [rank, ids] of wanted) {
      const byId = names(rank, ids);
      for (const f of findings) if (f.rank === rank && f.node !== undefined && ids.has(f.node.id)) f.node.name = byId.get(f.node.id) ?? '';
    }
    return findings;
  }
}

interface Ends {
  sends: { rank: number; p: RankPointToPoint }[];
  recvs: { rank: number; p: RankPointToPoint }[];
}

/** Sends and receives paired on (src, dst, tag, size), as ASTRA-sim's CallbackTracker does (F.1). */
export class PointToPointMatcher {
  private readonly byKey = new Map<string, Ends>();
  sends = 0;
  recvs = 0;

  add(s: RankSummary): void {
    for (const p of s.p2p) {
      if (p.send) this.sends++;
      else this.recvs++;
      const key = `${p.src},${p.dst},${p.tag},${p.size}`;
      let ends = this.byKey.get(key);
      if (ends === undefined) {
        ends = { sends: [], recvs: [] };
        this.byKey.set(key, ends);
      }
      // Paired as they arrive (first with first), so only the unpaired ends stay in memory: a
      // million ring transfers of 1,024 ranks held whole made check-trace mostly garbage collection.
      const other = p.send ? ends.recvs : ends.sends;
      if (other.length > 0) {
        other.shift();
        if (ends.sends.length === 0 && ends.recvs.length === 0) this.byKey.delete(key);
        continue;
      }
      (p.send ? ends.sends : ends.recvs).push({ rank: s.rank, p });
    }
  }

  finish(): Finding[] {
    const findings: Finding[] = [];
    // Unpaired ends by (src, dst, tag), to name a near miss (usually a size that differs).
    const unpaired = new Map<string, RankPointToPoint[]>();
    const loose: { rank: number; p: RankPointToPoint }[] = [];
    for (const ends of this.byKey.values()) {
      const pairs = Math.min(ends.sends.length, ends.recvs.length);
      for (const e of [...ends.sends.slice(pairs), ...ends.recvs.slice(pairs)]) {
        loose.push(e);
        const k = `${e.p.src},${e.p.dst},${e.p.tag}`;
        const same = unpaired.get(k);
        if (same === undefined) unpaired.set(k, [e.p]);
        else same.push(e.p);
      }
    }
    for (const { rank, p } of loose) {
      const near = mapGet(unpaired, `${p.src},${p.dst},${p.tag}`, 'unpaired ends').find((q) => q.send !== p.send);
      const hint = near === undefined ? '' : ` (node ${near.id} there has the same tag but comm_size ${near.size})`;
      findings.push(
        p.send
          ? { kind: 'unmatched-send', effect: 'hang', rank, node: { id: p.id, name: p.name }, message: `COMM_SEND_NODE to rank ${p.dst} (tag ${p.tag}, ${p.size} B) has no matching COMM_RECV_NODE in rank ${p.dst}'s file${hint}` }
          : { kind: 'unmatched-recv', effect: 'hang', rank, node: { id: p.id, name: p.name }, message: `COMM_RECV_NODE from rank ${p.src} (tag ${p.tag}, ${p.size} B) has no matching COMM_SEND_NODE in rank ${p.src}'s file${hint}` },
      );
    }
    return findings;
  }
}
