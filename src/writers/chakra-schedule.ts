/**
 * Step schedule -> one Chakra .et file per rank plus the communicator-group file ASTRA-sim 2.x
 * takes as --comm-group-configuration. Every collective names its group in `pg_name` (so traces
 * run on any network topology, a 1-D ring included); sends and receives carry comm_src, comm_dst
 * and comm_tag. Node ids are the node's index in its graph (ids need not differ across files).
 * Ranks of one pipeline stage share their graph; only group ids and peers differ, so each graph's
 * compute nodes are encoded once and reused for every rank.
 */
import { at, indexOutOfRange } from '../errors.js';
import type { GroupKind } from '../plan/types.js';
import { GROUP_KINDS, groupIdIndex, rankAlongAxis, rankOnStage, stageOfRank, worldSize } from '../plan/world.js';
import type { StepGraph, StepNode, StepSchedule } from '../schedule/types.js';
import { ET_VERSION, type EtAttr, type EtNode } from './chakra-encoding.js';
import { COMM_TYPE_VALUE, roundingLine, rooflineNumOps, type ChakraTiming, type RoundingSummary } from './chakra-graph.js';
import { chakraToJson } from './chakra-json.js';
import { ByteSink, appendMetadata, appendNode, appendNodeBody, attrEntryBytes, nodeBodySize } from './et-fast.js';
import { fileOrStdout, type Writer } from './output.js';
import { computeDurationNs, nsToWholeUs } from '../units.js';

export interface ScheduleTraceOptions {
  timing: ChakraTiming;
}

const bool = (value: boolean): EtAttr['value'] => ({ kind: 'bool_val', value });
const int64 = (value: number): EtAttr['value'] => ({ kind: 'int64_val', value });
const int32 = (value: number): EtAttr['value'] => ({ kind: 'int32_val', value });

/** The attribute every node carries, one shared object (a 250k-node graph would otherwise build 250k). */
const NOT_CPU_OP: EtAttr = Object.freeze({ name: 'is_cpu_op', value: Object.freeze(bool(false)) });

/** The Chakra node of `node` (index `id` in its graph) as rank `rank` writes it. */
export function etNodeOf(node: StepNode, id: number, rank: number, schedule: StepSchedule, groupId: (rank: number, kind: GroupKind) => number, opts: ScheduleTraceOptions): EtNode {
  // Fields named in one literal per kind (not spread from a base): the writer's per-node path.
  switch (node.kind) {
    case 'compute': {
      const ns = computeDurationNs(node.cycles, schedule.clockMHz);
      const roofline = opts.timing === 'roofline';
      return {
        id,
        name: node.name,
        dataDeps: node.deps,
        type: 'COMP_NODE',
        durationMicros: nsToWholeUs(ns),
        attrs: [
          NOT_CPU_OP,
          { name: 'num_ops', value: int64(roofline ? rooflineNumOps(ns) : Math.max(1, node.flops)) },
          { name: 'tensor_size', value: { kind: 'uint64_val', value: roofline ? 1 : Math.max(1, node.tensorBytes) } },
        ],
      };
    }
    case 'collective':
      return {
        id,
        name: node.name,
        dataDeps: node.deps,
        type: 'COMM_COLL_NODE',
        durationMicros: 0,
        attrs: [
          NOT_CPU_OP,
          { name: 'comm_type', value: int64(COMM_TYPE_VALUE[node.type]) },
          { name: 'comm_size', value: int64(node.bytes) },
          { name: 'pg_name', value: { kind: 'string_val', value: String(groupId(rank, node.group)) } },
        ],
      };
    case 'send':
    case 'recv': {
      const peer = node.peer.axis === 'pp' ? rankOnStage(rank, node.peer.stage, schedule.world) : rankAlongAxis(rank, 'cp', node.peer.offset, schedule.world);
      const [src, dst] = node.kind === 'send' ? [rank, peer] : [peer, rank];
      return {
        id,
        name: node.name,
        dataDeps: node.deps,
        type: node.kind === 'send' ? 'COMM_SEND_NODE' : 'COMM_RECV_NODE',
        durationMicros: 0,
        attrs: [
          NOT_CPU_OP,
          { name: 'comm_src', value: int32(src) },
          { name: 'comm_dst', value: int32(dst) },
          { name: 'comm_tag', value: int32(node.tag) },
          { name: 'comm_size', value: int64(node.bytes) },
        ],
      };
    }
  }
}

/** A node as every rank of its stage writes it: none for sends and receives (their peers differ by rank), a collective without its pg_name (always its last attribute). */
function sharedEtNode(n: StepNode, id: number, schedule: StepSchedule, opts: ScheduleTraceOptions): EtNode | undefined {
  if (n.kind === 'send' || n.kind === 'recv') return undefined;
  const et = etNodeOf(n, id, 0, schedule, () => 0, opts);
  if (n.kind === 'collective') et.attrs.pop();
  return et;
}

/** Encoded bytes a node takes, on average, for the first guess at a template's buffer (a wrong guess only grows it). */
const GUESSED_NODE_BYTES = 96;

/** The graph a rank runs. */
export function graphOfRank(schedule: StepSchedule, rank: number): StepGraph {
  return at(schedule.graphs, stageOfRank(rank, schedule.world));
}

/**
 * Every rank's .et bytes, one at a time (memory stays at one file). Each graph's nodes are
 * encoded once; a collective's message is its shared body followed by its rank's `pg_name`
 * entry (attributes are the message's last field), so a rank costs little more than a copy.
 */
export function* scheduleTraceFiles(schedule: StepSchedule, prefix: string, opts: ScheduleTraceOptions): Generator<{ path: string; bytes: Uint8Array }> {
  const groupId = groupIdIndex(schedule.groups, schedule.world);
  const pgEntries = new Map<number, Uint8Array>();
  const pgEntry = (id: number): Uint8Array => {
    let bytes = pgEntries.get(id);
    if (bytes === undefined) {
      bytes = attrEntryBytes({ name: 'pg_name', value: { kind: 'string_val', value: String(id) } });
      pgEntries.set(id, bytes);
    }
    return bytes;
  };
  // Per graph and per pg_name length (its varint prefix depends on it): runs of fixed bytes,
  // each followed by the group whose pg_name entry goes after it.
  const templates = new Map<string, { fixed: Uint8Array; group?: GroupKind; node?: number }[]>();
  // Each node is encoded straight into the template with its length prefix, its size computed
  // first: no buffer of bodies copied again (the chain's 250k-node graph moved 20 MB twice).
  const templateOf = (graph: StepGraph, entryLength: (kind: GroupKind) => number, key: string) => {
    const cached = templates.get(key);
    if (cached !== undefined) return cached;
    // One buffer for the whole template, its runs views of it (a sink per run allocated 64 KiB each: thousands per template).
    const all = new ByteSink(graph.nodes.length * GUESSED_NODE_BYTES + 64);
    const runs: { start: number; end: number; group?: GroupKind; node?: number }[] = [];
    let start = 0;
    const close = (extra: { group?: GroupKind; node?: number }): void => {
      runs.push({ start, end: all.length, ...extra });
      start = all.length;
    };
    for (const [id, n] of graph.nodes.entries()) {
      const et = sharedEtNode(n, id, schedule, opts);
      if (et === undefined) {
        close({ node: id });
        continue;
      }
      const extra = n.kind === 'collective' ? entryLength(n.group) : 0;
      all.varint(nodeBodySize(et) + extra);
      appendNodeBody(all, et);
      if (n.kind === 'collective') close({ group: n.group });
    }
    close({});
    const bytes = all.view();
    const t = runs.map(({ start: from, end, ...extra }) => ({ fixed: bytes.subarray(from, end), ...extra }));
    templates.set(key, t);
    return t;
  };
  const metadata = new ByteSink(64);
  appendMetadata(metadata, ET_VERSION);
  const metadataBytes = metadata.view();
  // A rank's own nodes (sends and receives, whose peers are its own) encoded first, so its file is allocated at its exact size.
  const own = new ByteSink(1 << 16);
  const ownEnds: number[] = [];
  const kindsUsed = schedule.graphs.map((g) => GROUP_KINDS.filter((k) => g.nodes.some((n) => n.kind === 'collective' && n.group === k)));
  let previous: { signature: string; bytes: Uint8Array } | undefined;
  for (let rank = 0; rank < worldSize(schedule.world); rank++) {
    const graph = graphOfRank(schedule, rank);
    const entry = (kind: GroupKind): Uint8Array => pgEntry(groupId(rank, kind));
    const key = `${graph.stage}:${(kindsUsed[graph.stage] ?? indexOutOfRange(graph.stage)).map((k) => entry(k).length).join(',')}`;
    const template = templateOf(graph, (kind) => entry(kind).length, key);
    // A rank with no transfers of its own and its stage's groups' ids the previous rank's
    // (data-parallel replicas of a 1-D world) writes that rank's bytes: no second 20 MB copy.
    const signature = template.some((part) => part.node !== undefined) ? undefined : `${key}|${(kindsUsed[graph.stage] ?? []).map((k) => groupId(rank, k)).join(',')}`;
    if (signature !== undefined && previous?.signature === signature) {
      yield { path: `${prefix}.${rank}.et`, bytes: previous.bytes };
      continue;
    }
    own.reset();
    ownEnds.length = 0;
    let size = metadataBytes.length;
    for (const part of template) {
      size += part.fixed.length + (part.group === undefined ? 0 : entry(part.group).length);
      if (part.node !== undefined) {
        appendNode(own, etNodeOf(graph.nodes[part.node] ?? indexOutOfRange(part.node), part.node, rank, schedule, groupId, opts));
        ownEnds.push(own.length);
      }
    }
    size += own.length;
    const out = new ByteSink(size);
    out.bytes(metadataBytes);
    const ownBytes = own.view();
    let k = 0;
    let from = 0;
    for (const part of template) {
      out.bytes(part.fixed);
      if (part.group !== undefined) out.bytes(entry(part.group));
      if (part.node !== undefined) {
        const end = ownEnds[k++] ?? indexOutOfRange(k);
        out.bytes(ownBytes.subarray(from, end));
        from = end;
      }
    }
    if (out.length !== size) throw new Error(`internal error: rank ${rank}'s trace is ${out.length} bytes, sized ${size}`);
    const bytes = out.view();
    previous = signature === undefined ? undefined : { signature, bytes };
    yield { path: `${prefix}.${rank}.et`, bytes };
  }
}


/** `{"1": [ranks...], ...}` for --comm-group-configuration. */
export function commGroupsJson(schedule: StepSchedule): string {
  const out: Record<string, number[]> = {};
  for (const g of schedule.groups) out[String(g.id)] = g.ranks;
  return `${JSON.stringify(out, null, 1).replace(/\[\s+([^\]]*?)\s+\]/g, (_, body: string) => `[${body.replace(/\s+/g, ' ')}]`)}\n`;
}

/** Every rank's nodes as Chakra nodes (for the JSON dump and tests). */
export function scheduleEtNodes(schedule: StepSchedule, rank: number, opts: ScheduleTraceOptions): EtNode[] {
  const groupId = groupIdIndex(schedule.groups, schedule.world);
  return graphOfRank(schedule, rank).nodes.map((n, id) => etNodeOf(n, id, rank, schedule, groupId, opts));
}

/** Whole-µs rounding of one rank's compute (docs/astra-sim-formats.md C.3), as the legacy traces report it. */
export function scheduleRounding(schedule: StepSchedule): RoundingSummary {
  // One pass, summed in node order as before (no arrays of 250k durations for the chain).
  let computeNodes = 0;
  let exactNs = 0;
  let replayNs = 0;
  let subHalfMicroNodes = 0;
  for (const n of schedule.graphs[0]?.nodes ?? []) {
    if (n.kind !== 'compute') continue;
    const ns = computeDurationNs(n.cycles, schedule.clockMHz);
    const micros = nsToWholeUs(ns);
    computeNodes++;
    exactNs += ns;
    replayNs += micros === 0 ? 1 : micros * 1000;
    if (micros === 0) subHalfMicroNodes++;
  }
  return { computeNodes, exactNs, replayNs, subHalfMicroNodes };
}

/** `--format chakra -o PREFIX`: the communicator groups, then each rank's .et file as it is encoded. */
export const scheduleEtWriter: Writer<StepSchedule, ScheduleTraceOptions & { prefix: string }> = (schedule, o) => {
  const ranks = worldSize(schedule.world);
  return {
    files: [{ path: `${o.prefix}.comm-groups.json`, bytes: commGroupsJson(schedule) }],
    stream: scheduleTraceFiles(schedule, o.prefix, o),
    notes: [roundingLine(scheduleRounding(schedule), o.timing)],
    what: `${ranks} files ${o.prefix}.<0..${ranks - 1}>.et + ${o.prefix}.comm-groups.json (${schedule.groups.length} group${schedule.groups.length === 1 ? '' : 's'})`,
  };
};

/** `--format chakra-json`: every rank's nodes and the communicator groups as JSON, `meta` first. */
export const scheduleJsonWriter: Writer<StepSchedule, ScheduleTraceOptions & { output?: string; meta: Record<string, unknown> }> = (schedule, o) => {
  const ranks = Array.from({ length: worldSize(schedule.world) }, (_, r) => scheduleEtNodes(schedule, r, o));
  const rounding = scheduleRounding(schedule);
  const json = chakraToJson({ ranks, rounding }, { ...o.meta, comm_groups: JSON.parse(commGroupsJson(schedule)) });
  return fileOrStdout(o.output, json, [roundingLine(rounding, o.timing)]);
};
