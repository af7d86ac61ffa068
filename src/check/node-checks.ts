/**
 * Checks of one node on its own (docs/astra-sim-formats.md B.4, B.5, B.7, B.8, F.1): attribute kinds, required
 * attributes, comm sizes, types and tags, compute nodes that do no work. Each check reads the
 * scanner's NodeView and reports through `report`; nothing here looks at other nodes or ranks.
 */
import { indexOutOfRange } from '../errors.js';
import { MAX_TAG } from '../astra-limits.js';
import type { Effect, FindingKind } from './findings.js';
import type { AttrSlot, KnownAttr, NodeView } from './et-scan.js';

export const NODE_TYPE = { COMP: 4, SEND: 5, RECV: 6, COLL: 7, MAX: 7 } as const;

/** Oneof member each attribute must use so that both feeders read it (B.5). */
const EXPECTED_KIND: Record<KnownAttr, string> = {
  is_cpu_op: 'bool_val', num_ops: 'int64_val', tensor_size: 'uint64_val', comm_type: 'int64_val', comm_size: 'int64_val',
  involved_dim: 'bool_list', comm_priority: 'int32_val', comm_src: 'int32_val', comm_dst: 'int32_val', comm_tag: 'int32_val',
  pg_name: 'string_val',
};

/** Collective comm types ASTRA-sim 2.x simulates (B.8), and the one it only replays. */
const SIMULATED_COMM_TYPES = new Set([0, 2, 6, 7]);
const BROADCAST = 5;

export type Report = (kind: FindingKind, effect: Effect, message: string) => void;

/** Where a collective runs: group 0 is every NPU (no pg_name, "" or "0"). */
export interface CollectiveSite {
  group: number;
  type: number;
  size: number;
  /** involved_dim as T/F letters, '' when absent (relevant only on group 0). */
  dims: string;
}

export interface PointToPoint {
  send: boolean;
  src: number;
  dst: number;
  tag: number;
  size: number;
}

export interface NodeContext {
  rank: number;
  /** Ranks that have a trace file; peers outside it cannot answer. */
  ranks: ReadonlySet<number>;
  groups: ReadonlyMap<number, readonly number[]> | undefined;
  /** Ranks of each group as a set, for membership tests. */
  groupSets: ReadonlyMap<number, ReadonlySet<number>>;
  networkDims: number | undefined;
  /** System-JSON roofline keys, when the run uses roofline mode: compute nodes must last >= 1 ns. */
  roofline: RooflineConfig | undefined;
  commTypeName: (value: number) => string;
}

export interface RooflineConfig {
  /** `peak-perf`, TFLOPS (x 10^12). */
  peakTflops: number;
  /** `local-mem-bw`, GB/s (x 10^9); without it the node is taken as compute-bound. */
  localMemGBps?: number;
}

/** Roofline duration of ASTRA-sim 2.x (B.7), truncated to whole ns. */
export function rooflineNs(numOps: number, tensorBytes: number, r: RooflineConfig): number {
  const computeOpsPerS = r.peakTflops * 1e12;
  const memoryOpsPerS = r.localMemGBps === undefined ? Infinity : (r.localMemGBps * 1e9 * numOps) / tensorBytes;
  return Math.floor((numOps / Math.min(computeOpsPerS, memoryOpsPerS)) * 1e9);
}

const isInt = (a: AttrSlot): boolean => Number.isInteger(a.num);
const COLLECTIVE_ATTRS: readonly KnownAttr[] = ['comm_type', 'comm_size'];
const POINT_TO_POINT_ATTRS: readonly KnownAttr[] = ['comm_src', 'comm_dst', 'comm_tag', 'comm_size'];

function checkKinds(n: NodeView, report: Report): void {
  for (let i = 0; i < n.presentCount; i++) {
    const name = n.present[i] ?? indexOutOfRange(i);
    const kind = n.attrs[name].kind;
    const expected = EXPECTED_KIND[name];
    if (kind === expected) continue;
    if (name === 'involved_dim') report('attribute-kind', 'crash', `involved_dim is ${kind}; ASTRA-sim aborts ("Expected bool_list in involved_dim")`);
    else report('attribute-kind', 'misread', `${name} is ${kind}; ASTRA-sim reads ${expected} (the older feeder reads any other kind as 0, B.5)`);
  }
}

function checkCompute(n: NodeView, ctx: NodeContext, report: Report): void {
  const { num_ops: ops, tensor_size: bytes, is_cpu_op: cpu } = n.attrs;
  if (cpu.kind !== undefined && cpu.num === 1) return; // CPU ops are always replayed (B.7).
  const noOps = ops.kind !== undefined && !(ops.num > 0);
  const noBytes = bytes.kind !== undefined && bytes.num === 0;
  const what = [noOps ? `num_ops ${ops.num}` : '', noBytes ? 'tensor_size 0' : ''].filter(Boolean).join(', ');
  // tensor_size 0 is checked first by ASTRA-sim: the node is skipped before any event is queued.
  if (noBytes) report('no-work', 'hang', `compute node does no work (${what}): roofline mode skips it without starting its successors (F.1)`);
  else if (noOps) report('no-work', 'crash', `compute node does no work (${what}): roofline mode aborts on its 0 ns event (F.1)`);
  else if (ctx.roofline !== undefined && ops.kind !== undefined && bytes.kind !== undefined && rooflineNs(ops.num, bytes.num, ctx.roofline) === 0) {
    const bw = ctx.roofline.localMemGBps === undefined ? '' : `, local-mem-bw ${ctx.roofline.localMemGBps} GB/s`;
    report('no-work', 'crash', `num_ops ${ops.num}, tensor_size ${bytes.num} last 0 ns at peak-perf ${ctx.roofline.peakTflops} TFLOPS${bw}; roofline mode aborts on the 0 ns event (F.1)`);
  }
  if (ops.kind === undefined && ctx.roofline !== undefined) {
    report('missing-attribute', 'crash', 'compute node without num_ops: roofline mode aborts on it (B.7)');
  } else if (ops.kind === undefined && n.durationMicros === 0) {
    report('no-work', 'mis-time', 'compute node does no work: duration_micros 0 and no num_ops (replayed as 1 ns; roofline mode aborts without num_ops)');
  }
}

function requireAttrs(n: NodeView, names: readonly KnownAttr[], what: string, report: Report): boolean {
  let ok = true;
  for (let i = 0; i < names.length && ok; i++) ok = isInt(n.attrs[names[i] ?? indexOutOfRange(i)]);
  if (ok) return true;
  const missing = names.filter((a) => n.attrs[a].kind === undefined);
  const unusable = names.filter((a) => n.attrs[a].kind !== undefined && !isInt(n.attrs[a]));
  const parts = [missing.length > 0 ? `without ${missing.join(', ')}` : '', unusable.length > 0 ? `with no integer in ${unusable.join(', ')}` : ''];
  report('missing-attribute', 'crash', `${what} ${parts.filter(Boolean).join(' and ')}`);
  return false;
}

function checkSize(size: number, send: boolean | undefined, report: Report): void {
  if (size > 0) return;
  if (send !== undefined) report('comm-size', 'hang', `comm_size ${size}: a ${send ? 'send' : 'receive'} must move at least one byte (F.1)`);
  else if (size === 0) report('comm-size', 'mis-time', 'comm_size 0: ASTRA-sim still simulates a small non-empty collective (B.8)');
  else report('comm-size', 'crash', `comm_size ${size} is negative`);
}

/** Where the collective runs, or undefined when ASTRA-sim cannot run it at all. */
function collectiveGroup(n: NodeView, ctx: NodeContext, report: Report): number | undefined {
  const pg = n.attrs.pg_name;
  const text = pg.kind === 'string_val' ? pg.text ?? '' : pg.kind === undefined ? '' : String(pg.num);
  if (text === '' || text === '0') return 0;
  if (!/^[0-9]+$/.test(text)) {
    report('pg-name', 'crash', `pg_name "${text}" is not a decimal group id (ASTRA-sim parses it with stoi)`);
    return undefined;
  }
  const id = Number(text);
  const members = ctx.groupSets.get(id);
  if (members === undefined) {
    const why = ctx.groups === undefined ? 'no comm-groups file was given' : 'the comm-groups file has no such group';
    report('unknown-group', 'crash', `pg_name "${text}": ${why}; the run aborts`);
    return undefined;
  }
  if (!members.has(ctx.rank)) {
    report('not-in-group', 'hang', `pg_name "${text}": group ${id} does not contain rank ${ctx.rank}`);
    return undefined;
  }
  return id;
}

function checkCollective(n: NodeView, ctx: NodeContext, report: Report): CollectiveSite | undefined {
  const { comm_type: type, comm_size: size, involved_dim: dims } = n.attrs;
  if (!requireAttrs(n, COLLECTIVE_ATTRS, 'collective', report)) return undefined;
  checkSize(size.num, undefined, report);
  if (type.num === BROADCAST) report('comm-type', 'mis-time', 'comm_type BROADCAST is only replayed from duration_micros, not simulated (B.8)');
  else if (!SIMULATED_COMM_TYPES.has(type.num)) {
    report('comm-type', 'crash', `comm_type ${type.num} (${ctx.commTypeName(type.num)}): ASTRA-sim throws "Unsupported collective comm type" (B.8)`);
    return undefined;
  }
  const group = collectiveGroup(n, ctx, report);
  if (group === undefined) return undefined;
  const mask = dims.bools;
  // involved_dim is used only when no group is given (F.2).
  if (group === 0 && mask !== undefined && ctx.networkDims !== undefined && mask.length !== ctx.networkDims) {
    report('involved-dim', 'hang', `involved_dim has ${mask.length} entries for a ${ctx.networkDims}-dimension network; the collective never completes (F.1)`);
  }
  const usedMask = group === 0 && mask !== undefined ? mask.map((b) => (b ? 'T' : 'F')).join('') : '';
  return { group, type: type.num, size: size.num, dims: usedMask };
}

function checkPointToPoint(n: NodeView, send: boolean, ctx: NodeContext, report: Report): PointToPoint | undefined {
  const what = send ? 'COMM_SEND_NODE' : 'COMM_RECV_NODE';
  if (!requireAttrs(n, POINT_TO_POINT_ATTRS, what, report)) return undefined;
  const p: PointToPoint = { send, src: n.attrs.comm_src.num, dst: n.attrs.comm_dst.num, tag: n.attrs.comm_tag.num, size: n.attrs.comm_size.num };
  checkSize(p.size, send, report);
  if (p.tag < 0 || p.tag >= MAX_TAG) report('comm-tag', 'hang', `comm_tag ${p.tag} is outside 0..${MAX_TAG - 1} (ASTRA-sim's own tags start at ${MAX_TAG})`);
  const own = send ? p.src : p.dst;
  const peer = send ? p.dst : p.src;
  if (own !== ctx.rank) {
    report(send ? 'send-src' : 'recv-dst', 'hang', `${send ? 'comm_src' : 'comm_dst'} ${own} is not this file's rank ${ctx.rank}`);
    return undefined;
  }
  if (!ctx.ranks.has(peer)) {
    report('peer-rank', 'crash', `${send ? 'comm_dst' : 'comm_src'} ${peer} is a rank without a trace file`);
    return undefined;
  }
  return p;
}

/** A collective's site or a send/recv; undefined for other nodes and for unusable ones. */
export type NodeRole = CollectiveSite | PointToPoint | undefined;

/** Every single-node check; returns what the cross-rank checks need to know about the node. */
export function checkNode(n: NodeView, ctx: NodeContext, report: Report): NodeRole {
  checkKinds(n, report);
  if (n.type > NODE_TYPE.MAX) {
    report('unknown-node-type', 'crash', `node type ${n.type} is not a Chakra NodeType`);
    return undefined;
  }
  const comm = n.type === NODE_TYPE.SEND || n.type === NODE_TYPE.RECV || n.type === NODE_TYPE.COLL;
  if (comm && n.attrs.is_cpu_op.num === 1) report('cpu-op-comm', 'crash', 'is_cpu_op is true on a communication node; ASTRA-sim aborts (B.4)');
  if (n.type === NODE_TYPE.COMP) checkCompute(n, ctx, report);
  else if (n.type === NODE_TYPE.COLL) {
    return checkCollective(n, ctx, report);
  } else if (n.type === NODE_TYPE.SEND || n.type === NODE_TYPE.RECV) {
    return checkPointToPoint(n, n.type === NODE_TYPE.SEND, ctx, report);
  }
  return undefined;
}
