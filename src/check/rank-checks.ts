/**
 * One rank's file: every per-node check, the dependency graph, and what the cross-rank checks
 * need (the rank's collectives per group in issue order, its sends and receives).
 */
import { innerMap } from '../maps.js';
import { at, indexOutOfRange } from '../errors.js';
import { decodeName, EtDecodeError, scanEtFile } from './et-scan.js';
import type { Finding } from './findings.js';
import { checkNode, type NodeContext, type PointToPoint, type Report } from './node-checks.js';
import { checkGraph, GraphColumns } from './rank-graph.js';

/**
 * A collective's (comm_type, comm_size, involved_dim) as a small integer, the same for every rank
 * of a check, so that sequences compare as numbers and no string is built per collective.
 */
export class Signatures {
  private readonly byKey = new Map<number, Map<number, Map<string, number>>>();
  private readonly parts: { type: number; size: number; dims: string }[] = [];

  id(type: number, size: number, dims: string): number {
    const byDims = innerMap(innerMap(this.byKey, type), size);
    let id = byDims.get(dims);
    if (id === undefined) {
      id = this.parts.length;
      this.parts.push({ type, size, dims });
      byDims.set(dims, id);
    }
    return id;
  }

  get(id: number): { type: number; size: number; dims: string } {
    return this.parts[id] ?? indexOutOfRange(id);
  }
}

/** Reused by every file: checks run one file at a time. */
const scratch = new GraphColumns();

export interface RankPointToPoint extends PointToPoint {
  id: number;
  name: string;
}

export interface RankSummary {
  rank: number;
  nodes: number;
  /** Per group (0 = all NPUs): node ids and signature ids (Signatures), in issue order. */
  collectives: Map<number, { ids: number[]; sigs: number[] }>;
  collectiveCount: number;
  p2p: RankPointToPoint[];
}

/** Checks one rank's bytes; findings go to `out`. A file that does not decode is one finding. */
export function checkRankFile(bytes: Uint8Array, ctx: NodeContext, signatures: Signatures, out: (f: Finding) => void): RankSummary {
  const rank = ctx.rank;
  const summary: RankSummary = { rank, nodes: 0, collectives: new Map(), collectiveCount: 0, p2p: [] };
  const graph = scratch;
  graph.reset();
  /** Collectives in file order: node index, group, signature `type:size:dims`. */
  const siteNode: number[] = [];
  const siteGroup: number[] = [];
  const siteSig: number[] = [];
  // The node being scanned; its name is decoded only when a finding or a send/recv needs it.
  const current = { id: 0, start: 0, end: 0 };
  const currentName = (): string => decodeName(bytes, current.start, current.end);
  const report: Report = (kind, effect, message) => out({ kind, effect, rank, node: { id: current.id, name: currentName() }, message });
  try {
    summary.nodes = scanEtFile(bytes, (n) => {
      current.id = n.id;
      current.start = n.nameStart;
      current.end = n.nameEnd;
      graph.add(n.id, n.nameStart, n.nameEnd, n.deps, n.depCount);
      const role = checkNode(n, ctx, report);
      if (role === undefined) return;
      if ('group' in role) {
        siteNode.push(n.index);
        siteGroup.push(role.group);
        siteSig.push(signatures.id(role.type, role.size, role.dims));
      }
      else summary.p2p.push({ ...role, id: n.id, name: currentName() });
    });
  } catch (e) {
    if (!(e instanceof EtDecodeError)) throw e;
    out({ kind: 'unreadable-file', effect: 'crash', rank, message: `not a Chakra trace: ${e.message}` });
    return summary;
  }
  const order = checkGraph(graph, (i, kind, effect, message) =>
    out({ kind, effect, rank, node: { id: at(graph.ids, i), name: decodeName(bytes, at(graph.nameStart, i), at(graph.nameEnd, i)) }, message }),
  );
  const siteAt = new Int32Array(summary.nodes).fill(-1);
  for (const [k, node] of siteNode.entries()) siteAt[node] = k;
  const count = order === 'file-order' ? summary.nodes : order.length;
  for (let o = 0; o < count; o++) {
    const i = order === 'file-order' ? o : (order[o] ?? indexOutOfRange(o));
    const k = siteAt[i] ?? indexOutOfRange(i);
    if (k < 0) continue;
    const group = siteGroup[k] ?? indexOutOfRange(k);
    let seq = summary.collectives.get(group);
    if (seq === undefined) {
      seq = { ids: [], sigs: [] };
      summary.collectives.set(group, seq);
    }
    seq.ids.push(graph.ids[i] ?? indexOutOfRange(i));
    seq.sigs.push(siteSig[k] ?? indexOutOfRange(k));
  }
  summary.collectiveCount = siteNode.length;
  return summary;
}
