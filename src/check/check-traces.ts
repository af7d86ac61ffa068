/**
 * Checks a set of Chakra traces the way ASTRA-sim 2.x will use them (FORMAT.md Parts B and F):
 * files are read one at a time and dropped, keeping only what the cross-rank checks need.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError, mapGet } from '../errors.js';
import { etSchema } from '../writers/chakra-encoding.js';
import { CollectiveMatcher, PointToPointMatcher } from './cross-rank.js';
import { decodeName, EtDecodeError, scanEtFile } from './et-scan.js';
import { sortFindings, type Effect, type Finding } from './findings.js';
import { readCommGroups } from './groups.js';
import type { NodeContext, RooflineConfig } from './node-checks.js';
import { checkRankFile, Signatures } from './rank-checks.js';

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
  if ('bytes' in file) return file.bytes;
  try {
    return readFileSync(file.path);
  } catch (e) {
    throw new InputError(`${file.path}: cannot read the trace (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

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
  const effects: Record<Effect, number> = { crash: 0, hang: 0, 'mis-time': 0, misread: 0 };
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
  const last = world[world.length - 1] ?? -1;
  for (let r = 0; r < last; r++) {
    if (!ranks.has(r)) keep({ kind: 'missing-file', effect: 'crash', rank: r, message: `no trace file for rank ${r} (ranks run 0..${last}); ASTRA-sim aborts: "workload file ... does not exist"` });
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
 * (decimal ranks without leading zeros).
 */
export function findTraceFiles(prefix: string): TraceFile[] {
  const dir = dirname(prefix);
  const base = basename(prefix);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    throw new InputError(`${dir}: cannot list the folder (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const files: TraceFile[] = [];
  for (const name of names) {
    if (!name.startsWith(`${base}.`) || !name.endsWith('.et')) continue;
    const rank = name.slice(base.length + 1, -3);
    if (/^(0|[1-9][0-9]*)$/.test(rank)) files.push({ rank: Number(rank), path: join(dir, name) });
  }
  if (files.length === 0) throw new InputError(`${prefix}: no trace files ${base}.<rank>.et in ${dir}`);
  return files.sort((a, b) => a.rank - b.rank);
}
