/**
 * One rank's file: every per-node check, the dependency graph, and what the cross-rank checks
 * need (the rank's collectives per group in issue order, its sends and receives).
 */
import { decodeName, EtDecodeError, scanEtFile } from './et-scan.js';
import type { Finding } from './findings.js';
import { checkNode, type NodeContext, type PointToPoint, type Report } from './node-checks.js';
import { checkGraph, type GraphColumns } from './rank-graph.js';

export interface RankPointToPoint extends PointToPoint {
  id: number;
  name: string;
}

export interface RankSummary {
  rank: number;
  nodes: number;
  /** Per group (0 = all NPUs): node ids and signatures `type:size:dims`, in issue order. */
  collectives: Map<number, { ids: number[]; sigs: string[] }>;
  collectiveCount: number;
  p2p: RankPointToPoint[];
}

/** Checks one rank's bytes; findings go to `out`. A file that does not decode is one finding. */
export function checkRankFile(bytes: Uint8Array, ctx: NodeContext, out: (f: Finding) => void): RankSummary {
  const rank = ctx.rank;
  const summary: RankSummary = { rank, nodes: 0, collectives: new Map(), collectiveCount: 0, p2p: [] };
  const graph: GraphColumns = { ids: [], depStart: [0], deps: [] };
  const nameStart: number[] = [];
  const nameEnd: number[] = [];
  /** Collectives in file order: node index, group, signature `type:size:dims`. */
  const siteNode: number[] = [];
  const siteGroup: number[] = [];
  const siteSig: string[] = [];
  // The node being scanned; its name is decoded only when a finding or a send/recv needs it.
  const current = { id: 0, start: 0, end: 0 };
  const currentName = (): string => decodeName(bytes, current.start, current.end);
  const report: Report = (kind, effect, message) => out({ kind, effect, rank, node: { id: current.id, name: currentName() }, message });
  try {
    summary.nodes = scanEtFile(bytes, (n) => {
      current.id = n.id;
      current.start = n.nameStart;
      current.end = n.nameEnd;
      graph.ids.push(n.id);
      const deps = graph.deps;
      for (let i = 0; i < n.depCount; i++) deps.push(n.deps[i]!);
      graph.depStart.push(graph.deps.length);
      nameStart.push(n.nameStart);
      nameEnd.push(n.nameEnd);
      const role = checkNode(n, ctx, report);
      if (role === undefined) return;
      if ('group' in role) {
        siteNode.push(n.index);
        siteGroup.push(role.group);
        siteSig.push(`${role.type}:${role.size}:${role.dims}`);
      }
      else summary.p2p.push({ ...role, id: n.id, name: currentName() });
    });
  } catch (e) {
    if (!(e instanceof EtDecodeError)) throw e;
    out({ kind: 'unreadable-file', effect: 'crash', rank, message: `not a Chakra trace: ${e.message}` });
    return summary;
  }
  const order = checkGraph(graph, (i, kind, effect, message) =>
    out({ kind, effect, rank, node: { id: graph.ids[i]!, name: decodeName(bytes, nameStart[i]!, nameEnd[i]!) }, message }),
  );
  const siteAt = new Int32Array(summary.nodes).fill(-1);
  siteNode.forEach((node, k) => (siteAt[node] = k));
  const count = order === 'file-order' ? summary.nodes : order.length;
  for (let o = 0; o < count; o++) {
    const i = order === 'file-order' ? o : order[o]!;
    const k = siteAt[i]!;
    if (k < 0) continue;
    let seq = summary.collectives.get(siteGroup[k]!);
    if (seq === undefined) summary.collectives.set(siteGroup[k]!, (seq = { ids: [], sigs: [] }));
    seq.ids.push(graph.ids[i]!);
    seq.sigs.push(siteSig[k]!);
  }
  summary.collectiveCount = siteNode.length;
  return summary;
}
