/**
 * The converter graph of the legacy per-layer table (schedule/converter-graph.ts: the dependency
 * shape Chakra's text converter builds, docs/astra-sim-formats.md Part D) -> per-NPU Chakra nodes,
 * improved as D.8 suggests: compute in real microseconds, `is_cpu_op = false`, `num_ops` /
 * `tensor_size` on compute nodes, `involved_dim` on hybrid collectives.
 *
 * Every NPU file holds the same graph; ids run on across ranks and passes as the converter's do
 * (rank r's ids start at r x nodes-per-file), which also gives MICRO files the id = rank of
 * ASTRA-sim's shipped microbenchmarks.
 */
import type { CommGroup, Parallelism } from '../plan/legacy.js';
import type { CollectiveType } from '../plan/types.js';
import type { ConverterGraph, ConverterNode } from '../schedule/converter-graph.js';
import type { EtAttr, EtNode } from './chakra-encoding.js';
import { formatDurationNs } from './time.js';
import { cyclesToWholeNs, nsToWholeUs } from '../units.js';

export type ChakraTiming = 'replay' | 'roofline';

export interface ChakraOptions {
  /** replay: real num_ops/tensor_size; roofline: num_ops encodes the exact ns (see rooflineAttrs). */
  timing?: ChakraTiming;
  /** Network dimensions for `involved_dim` of hybrid collectives (default 2: [first, second]). */
  networkDims?: number;
  /** Name every comm node this (ASTRA-sim's microbenchmarks use e.g. "all_reduce_8npus_1MB"). */
  commNodeName?: string;
}

/** CollectiveCommType values (et_def.proto). */
export const COMM_TYPE_VALUE: Record<Exclude<CollectiveType, 'NONE'>, number> = {
  ALLREDUCE: 0,
  ALLGATHER: 2,
  ALLTOALL: 6,
  REDUCESCATTER: 7,
};

/**
 * Roofline encoding of an exact duration (ASTRA-sim 2.x, B.7): with `peak-perf` 1 (TFLOPS) and
 * `tensor_size` 1, a node is compute-bound whenever `local-mem-bw` >= 2 (GB/s), and lasts
 * num_ops / 10^12 s = num_ops / 1000 ns, truncated to whole ns. num_ops = 1000 ns + 500 lands
 * half a nanosecond above the target, so float error can never truncate it to ns - 1.
 */
export const ROOFLINE_PEAK_TFLOPS = 1;
export function rooflineNumOps(ns: number): number {
  return ns * 1000 + 500;
}

/**
 * involved_dim for a collective: DATA and MODEL span every dimension (attribute absent).
 * HYBRID_DATA_MODEL (1.0's semantics, docs/astra-sim-formats.md A.4): model-parallel collectives on dim 0, data-
 * parallel ones on dims 1..; HYBRID_MODEL_DATA the reverse (model on dims 1.., data on dim 0).
 */
export function involvedDims(parallelism: Parallelism, group: CommGroup, dims: number): boolean[] | undefined {
  if (group === 'all' || dims < 2 || (parallelism !== 'HYBRID_DATA_MODEL' && parallelism !== 'HYBRID_MODEL_DATA')) return undefined;
  const modelOnDim0 = parallelism === 'HYBRID_DATA_MODEL';
  const onDim0 = (group === 'model') === modelOnDim0;
  return Array.from({ length: dims }, (_, d) => (d === 0) === onDim0);
}

const bool = (value: boolean): EtAttr['value'] => ({ kind: 'bool_val', value });
const int64 = (value: number): EtAttr['value'] => ({ kind: 'int64_val', value });

/** A node of the file before ids are fixed, with its exact compute time to report the whole-µs rounding. */
interface DraftNode extends Omit<EtNode, 'id' | 'dataDeps'> {
  exactNs?: number;
}

function draftNode(node: ConverterNode, graph: ConverterGraph, opts: Required<Omit<ChakraOptions, 'commNodeName'>> & Pick<ChakraOptions, 'commNodeName'>): DraftNode {
  if ('collective' in node) {
    const coll = node.collective;
    if (coll.type === 'NONE') throw new Error(`internal error: ${node.layer} ${node.kind} has no collective`);
    const attrs: EtAttr[] = [
      { name: 'is_cpu_op', value: bool(false) },
      { name: 'comm_type', value: int64(COMM_TYPE_VALUE[coll.type]) },
      { name: 'comm_size', value: int64(coll.bytes) },
    ];
    const dims = involvedDims(graph.parallelism, coll.group, opts.networkDims);
    if (dims !== undefined) attrs.push({ name: 'involved_dim', value: { kind: 'bool_list', value: dims } });
    const name = opts.commNodeName ?? `COMM_COLL_NODE_${node.layer}_${node.kind.replace('COMM', '')}_${coll.type}`;
    return { name, type: 'COMM_COLL_NODE', durationMicros: 0, attrs };
  }
  // The text writer's rounding, so traces and text workloads agree to the ns.
  const ns = cyclesToWholeNs(node.cycles, graph.clockMHz);
  const roofline = opts.timing === 'roofline';
  const attrs: EtAttr[] = [
    { name: 'is_cpu_op', value: bool(false) },
    { name: 'num_ops', value: int64(roofline ? rooflineNumOps(ns) : 2 * (node.work?.macs ?? 0)) },
    { name: 'tensor_size', value: { kind: 'uint64_val', value: roofline ? 1 : node.work?.tensorBytes ?? 0 } },
  ];
  return { name: `COMP_NODE_${node.layer}_${node.kind}`, type: 'COMP_NODE', durationMicros: nsToWholeUs(ns), attrs, exactNs: ns };
}

export interface ChakraTraces {
  /** Nodes of each rank's file, ids final. */
  ranks: EtNode[][];
  nodesPerFile: number;
  rounding: RoundingSummary;
}

export interface RoundingSummary {
  computeNodes: number;
  /** Sum of the exact per-node compute times of one file. */
  exactNs: number;
  /** The same sum as ASTRA-sim replays it: whole µs, and 0 µs read as 1 ns. */
  replayNs: number;
  /** Nodes under 0.5 µs, which replay as 1 ns. */
  subHalfMicroNodes: number;
}

function summarise(nodes: readonly DraftNode[]): RoundingSummary {
  const compute = nodes.flatMap((n) => (n.exactNs === undefined ? [] : [{ exactNs: n.exactNs, durationMicros: n.durationMicros }]));
  return {
    computeNodes: compute.length,
    exactNs: compute.reduce((a, n) => a + n.exactNs, 0),
    replayNs: compute.reduce((a, n) => a + (n.durationMicros === 0 ? 1 : n.durationMicros * 1000), 0),
    subHalfMicroNodes: compute.filter((n) => n.durationMicros === 0).length,
  };
}

/** The converter graph's file, one copy per NPU with ids offset by rank. */
export function buildChakraTraces(graph: ConverterGraph, options: ChakraOptions = {}): ChakraTraces {
  const opts = { timing: 'replay' as ChakraTiming, networkDims: 2, ...options };
  if (!Number.isSafeInteger(opts.networkDims) || opts.networkDims < 1) throw new RangeError(`networkDims must be a positive integer, got ${opts.networkDims}`);
  const nodes = graph.nodes.map((n) => draftNode(n, graph, opts));
  const perFile = nodes.length;
  const ranks = Array.from({ length: graph.npus }, (_, rank) =>
    nodes.map(({ exactNs: _exact, ...node }, index): EtNode => ({
      id: rank * perFile + index,
      ...node,
      dataDeps: (graph.nodes[index]?.deps ?? []).map((d) => rank * perFile + d),
    })),
  );
  return { ranks, nodesPerFile: perFile, rounding: summarise(nodes) };
}

/** The stderr line on whole-µs rounding (docs/astra-sim-formats.md C.3: report the aggregate error). */
export function roundingLine(r: RoundingSummary, timing: ChakraOptions['timing']): string {
  const errNs = r.replayNs - r.exactNs;
  const pct = r.exactNs > 0 ? (100 * errNs) / r.exactNs : 0;
  const sign = errNs >= 0 ? '+' : '-';
  const base =
    `chakra: ${r.computeNodes} compute nodes per file, ${formatDurationNs(r.exactNs)} exact; replayed in whole µs: ` +
    `${formatDurationNs(r.replayNs)} (${sign}${formatDurationNs(Math.abs(errNs))}, ${sign}${Math.abs(pct).toFixed(3)}%), ${r.subHalfMicroNodes} node(s) under 0.5 µs`;
  if (timing === 'roofline') return `${base}; roofline timing encodes the exact ns (system JSON: roofline-enabled 1, peak-perf ${ROOFLINE_PEAK_TFLOPS}, local-mem-bw >= 2)`;
  // Large errors come from sub-µs nodes: say how to avoid them.
  return Math.abs(pct) >= 1 ? `${base}; use --chakra-timing roofline for exact ns` : base;
}
