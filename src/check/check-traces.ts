/**
 * Checks a set of Chakra traces the way ASTRA-sim 2.x will use them (docs/astra-sim-formats.md Parts B and F):
 * files are read one at a time and dropped, keeping only what the cross-rank checks need.
 */
import { mapGet } from '../errors.js';
import { etSchema } from '../writers/chakra-encoding.js';
import { CollectiveMatcher, PointToPointMatcher } from './cross-rank.js';
import { decodeName, EtDecodeError, scanEtFile } from './et-scan.js';
import { sortFindings, type Effect, type Finding } from './findings.js';
import { readCommGroups } from './groups.js';
import type { NodeContext, RooflineConfig } from './node-checks.js';
import { checkRankFile, Signatures } from './rank-checks.js';
import { MAX_TRACE_BYTES, openTraceSet, readRegularFile } from './trace-set.js';

/** One rank's trace: a file, or bytes already in memory. */
export type TraceFile = { rank: number; path: string } | { rank: number; bytes: Uint8Array };

export interface CheckOptions {
  /** Dimensions of the network (entries of npus_count); involved_dim must have this length. */
  networkDims?: number;
  /** Where the groups came from, for messages (ASTRA-sim ignores paths containing "empty"). */
  groupsSource?: string;
  /** Roofline-mode keys of the system JSON: then compute nodes that last 0 ns are reported (F.1). */
  roofline?: RooflineConfig;
  /** Findings kept in the result (default 100,000); the rest are only counted, so memory stays bounded. */
  maxFindings?: number;
  /** Ranks the set should have (its manifest's): files missing below it are reported. */
  expectedRanks?: number;
  /** Findings about the files as files (trace-set.ts openTraceSet), reported with the rest. */
  fileFindings?: readonly Finding[];
}

export interface CheckStats {
  files: number;
  nodes: number;
  collectives: number;
  sends: number;
  recvs: number;
}

export interface CheckResult {
  /** The first maxFindings findings, by rank and node id within what was kept. */
  findings: Finding[];
  /** All findings by effect, the ones not kept included. */
  effects: Record<Effect, number>;
  /** Findings beyond maxFindings, counted but not kept. */
  omitted: number;
  stats: CheckStats;
}

function bytesOf(file: TraceFile): Uint8Array {
  return 'bytes' in file ? file.bytes : readRegularFile(file.path, MAX_TRACE_BYTES, 'trace');
}

/** Missing ranks in a run longer than this are one finding (a stray high rank must not make millions). */
const MISSING_LISTED = 3;

let typeNames: Map<number, string> | undefined;
function commTypeName(value: number): string {
  typeNames ??= new Map(Object.entries(etSchema().node.root.lookupEnum('ChakraProtoMsg.CollectiveCommType').values).map(([k, v]) => [v, k]));
  return typeNames.get(value) ?? 'not a CollectiveCommType';
}

/** "ALL_REDUCE of 1048576 B (involved_dim TF)". */
function describeCollective(c: { type: number; size: number; dims: string }): string {
  return `${commTypeName(c.type)} of ${c.size} B${c.dims ? ` (involved_dim ${c.dims})` : ''}`;
}

/** Every check, with counts for the summary line. `groups` is the parsed comm-groups JSON. */
export function checkTraceSet(files: readonly TraceFile[], groups: unknown, options: CheckOptions = {}): CheckResult {
  const findings: Finding[] = [];
  const limit = options.maxFindings ?? 100_000;
  const effects: Record<Effect, number> = { crash: 0, hang: 0, 'mis-time': 0, misread: 0, 'mixed-set': 0 };
  let omitted = 0;
  const keep = (f: Finding): void => {
    effects[f.effect]++;
    if (findings.length < limit) findings.push(f);
    else omitted++;
  };
  const byRank = new Map<number, TraceFile>();
  for (const f of files) if (!byRank.has(f.rank)) byRank.set(f.rank, f);
  const ranks = new Set(byRank.keys());
  const world = [...ranks].sort((a, b) => a - b);
  options.fileFindings?.forEach(keep);
  const found = world[world.length - 1] ?? -1;
  const last = Math.max(found, (options.expectedRanks ?? 0) - 1);
  const why = options.expectedRanks === undefined ? `ranks run 0..${last}` : `the manifest lists ranks 0..${last}`;
  // A rank whose file is there but was not read (a FIFO, too large) is reported as such, not as missing.
  const skipped = new Set((options.fileFindings ?? []).flatMap((f) => (f.rank === undefined ? [] : [f.rank])));
  const absent = (r: number): boolean => !ranks.has(r) && !skipped.has(r);
  for (let r = 0; r <= last; r++) {
    if (!absent(r)) continue;
    let end = r;
    while (end + 1 <= last && absent(end + 1)) end++;
    if (end - r + 1 > MISSING_LISTED) keep({ kind: 'missing-file', effect: 'crash', rank: r, message: `no trace files for ranks ${r}..${end} (${end - r + 1} ranks; ${why}); ASTRA-sim aborts: "workload file ... does not exist"` });
    else for (let m = r; m <= end; m++) keep({ kind: 'missing-file', effect: 'crash', rank: m, message: `no trace file for rank ${m} (${why}); ASTRA-sim aborts: "workload file ... does not exist"` });
    r = end;
  }
  const parsed = groups === undefined ? undefined : readCommGroups(groups, ranks, options.groupsSource);
  parsed?.findings.forEach(keep);
  const groupSets = new Map([...(parsed?.groups ?? new Map<number, number[]>())].map(([id, members]) => [id, new Set(members)]));
  const stats: CheckStats = { files: byRank.size, nodes: 0, collectives: 0, sends: 0, recvs: 0 };
  const signatures = new Signatures();
  const collectives = new CollectiveMatcher((sig) => describeCollective(signatures.get(sig)));
  const p2p = new PointToPointMatcher();
  const unreadable = new Set<number>();
  for (const rank of world) {
    const ctx: NodeContext = { rank, ranks, groups: parsed?.groups, groupSets, networkDims: options.networkDims, roofline: options.roofline, commTypeName };
    const summary = checkRankFile(bytesOf(mapGet(byRank, rank, 'trace files by rank')), ctx, signatures, (f) => {
      if (f.kind === 'unreadable-file') unreadable.add(rank);
      keep(f);
    });
    stats.nodes += summary.nodes;
    stats.collectives += summary.collectiveCount;
    collectives.add(summary);
    p2p.add(summary);
  }
  stats.sends = p2p.sends;
  stats.recvs = p2p.recvs;
  p2p.finish().forEach(keep);
  // An unreadable file is already a finding; its rank's missing collectives would only repeat it.
  const counted = (r: number): boolean => ranks.has(r) && !unreadable.has(r);
  const members = (group: number): number[] => (group === 0 ? world : [...(groupSets.get(group) ?? [])]).filter(counted).sort((a, b) => a - b);
  collectives.finish(members, (rank, ids) => namesOf(bytesOf(mapGet(byRank, rank, 'trace files by rank')), ids)).forEach(keep);
  return { findings: sortFindings(findings), effects, omitted, stats };
}

/** Every way ASTRA-sim 2.x would crash, hang or mis-time the traces; [] when they are clean. */
export function checkTraces(files: readonly TraceFile[], groups: unknown, options: CheckOptions = {}): Finding[] {
  return checkTraceSet(files, groups, options).findings;
}

function namesOf(bytes: Uint8Array, ids: ReadonlySet<number>): Map<number, string> {
  const names = new Map<number, string>();
  try {
    scanEtFile(bytes, (n) => {
      if (ids.has(n.id) && !names.has(n.id)) names.set(n.id, decodeName(bytes, n.nameStart, n.nameEnd));
    });
  } catch (e) {
    if (!(e instanceof EtDecodeError)) throw e;
  }
  return names;
}

/**
 * `PREFIX.<rank>.et` in PREFIX's folder, as ASTRA-sim's --workload-configuration=PREFIX names them
 * (decimal ranks without leading zeros), the forms of `translate -o` accepted (PREFIX.et, a folder
 * holding one set). Files that cannot be read as traces are left out (openTraceSet reports them).
 */
export function findTraceFiles(prefix: string): TraceFile[] {
  return openTraceSet(prefix).files;
}
