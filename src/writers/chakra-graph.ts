/**
 * The per-layer table -> per-NPU Chakra graphs, as Chakra's text converter turns a text workload
 * into traces. The per-iteration graph has the dependency shape the converter builds for each parallelism (docs/astra-sim-formats.md Part D), improved as D.8 suggests:
 * compute in real microseconds, `is_cpu_op = false`, `num_ops` / `tensor_size` on compute nodes,
 * `involved_dim` on hybrid collectives, and no node for absent (NONE) or zero-byte collectives
 * (ASTRA-sim would still simulate them, B.8). A dependency on a skipped collective falls back to
 * the compute node it would have followed.
 *
 * Every NPU file holds the same graph; ids run on across ranks and passes as the converter's do
 * (rank r's ids start at r x nodes-per-file), which also gives MICRO files the id = rank of
 * ASTRA-sim's shipped microbenchmarks.
 */
import type { Collective, CommGroup, Parallelism } from '../plan/legacy.js';
import type { CollectiveType } from '../plan/types.js';
import type { LayerTable, LayerTableRow } from '../schedule/types.js';
import type { EtAttr, EtNode } from './chakra-encoding.js';
import { cyclesToUnit } from './time.js';

export type ChakraTiming = 'replay' | 'roofline';

export interface ChakraOptions {
  /** Training iterations in each file, linked by cross-pass edges (converter's --num-passes). */
  passes?: number;
  /** replay: real num_ops/tensor_size; roofline: num_ops encodes the exact ns (see rooflineAttrs). */
  timing?: ChakraTiming;
  /** Network dimensions for `involved_dim` of hybrid collectives (default 2: [first, second]). */
  networkDims?: number;
  /** MICRO (D.2): each layer's weight-gradient collective only, no deps, no compute. */
  micro?: boolean;
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

type Pass = 'FWD' | 'BWD_IG' | 'BWD_WG';
type CommKind = 'FWDCOMM' | 'IGCOMM' | 'WGCOMM';
type Kind = Pass | CommKind;

/** Where each node kind finds its cycles, work and collective on a LayerTableRow. */
const PASS_FIELDS = {
  FWD: { cycles: 'fwdCycles', work: 'fwd' },
  BWD_IG: { cycles: 'igCycles', work: 'ig' },
  BWD_WG: { cycles: 'wgCycles', work: 'wg' },
} as const satisfies Record<Pass, { cycles: keyof LayerTableRow; work: string }>;
const COMM_FIELD = { FWDCOMM: 'fwdComm', IGCOMM: 'igComm', WGCOMM: 'wgComm' } as const satisfies Record<CommKind, keyof LayerTableRow>;

/** A node of the per-file graph before ids are fixed; `deps` are indices into the file. */
interface DraftNode extends Omit<EtNode, 'id' | 'dataDeps'> {
  deps: number[];
  /** Exact compute time (compute nodes only), to report the whole-µs rounding error. */
  exactNs?: number;
}

const bool = (value: boolean): EtAttr['value'] => ({ kind: 'bool_val', value });
const int64 = (value: number): EtAttr['value'] => ({ kind: 'int64_val', value });

/** Emits the nodes of one file and remembers, per pass, which node plays which role. */
class FileBuilder {
  readonly nodes: DraftNode[] = [];
  /** Node index by `${kind}:${layer}`, for this training pass and the one before it. */
  private current = new Map<string, number>();
  private previous = new Map<string, number>();

  constructor(
    private readonly table: LayerTable,
    private readonly opts: Required<Omit<ChakraOptions, 'commNodeName'>> & { commNodeName?: string },
  ) {}

  nextPass(): void {
    this.previous = this.current;
    this.current = new Map();
  }

  get(kind: Kind, i: number): number | undefined {
    return this.current.get(`${kind}:${i}`);
  }

  prev(kind: Kind, i: number): number | undefined {
    return this.previous.get(`${kind}:${i}`);
  }

  compute(kind: Pass, i: number, deps: (number | undefined)[]): number {
    const layer = this.table.layers[i]!;
    // The text writer's rounding, so traces and text workloads agree to the ns.
    const ns = cyclesToUnit(layer[PASS_FIELDS[kind].cycles], this.table.clockMHz, 'ns');
    const work = layer.work?.[PASS_FIELDS[kind].work];
    const roofline = this.opts.timing === 'roofline';
    const attrs: EtAttr[] = [
      { name: 'is_cpu_op', value: bool(false) },
      { name: 'num_ops', value: int64(roofline ? rooflineNumOps(ns) : 2 * (work?.macs ?? 0)) },
      { name: 'tensor_size', value: { kind: 'uint64_val', value: roofline ? 1 : work?.tensorBytes ?? 0 } },
    ];
    const name = `COMP_NODE_${layer.name}_${kind}`;
    return this.add(`${kind}:${i}`, { name, type: 'COMP_NODE', durationMicros: Math.round(ns / 1000), attrs, deps: defined(deps), exactNs: ns });
  }

  /** A collective node, or undefined when the layer has none in this pass (NONE or 0 bytes). */
  comm(kind: CommKind, i: number, deps: (number | undefined)[]): number | undefined {
    const layer = this.table.layers[i]!;
    const coll: Collective = layer[COMM_FIELD[kind]];
    if (coll.type === 'NONE' || coll.bytes <= 0) return undefined;
    const attrs: EtAttr[] = [
      { name: 'is_cpu_op', value: bool(false) },
      { name: 'comm_type', value: int64(COMM_TYPE_VALUE[coll.type]) },
      { name: 'comm_size', value: int64(coll.bytes) },
    ];
    const dims = involvedDims(this.table.config.parallelism, coll.group, this.opts.networkDims);
    if (dims !== undefined) attrs.push({ name: 'involved_dim', value: { kind: 'bool_list', value: dims } });
    const name = this.opts.commNodeName ?? `COMM_COLL_NODE_${layer.name}_${kind.replace('COMM', '')}_${coll.type}`;
    return this.add(`${kind}:${i}`, { name, type: 'COMM_COLL_NODE', durationMicros: 0, attrs, deps: defined(deps) });
  }

  private add(key: string, node: DraftNode): number {
    const index = this.nodes.length;
    this.nodes.push(node);
    this.current.set(key, index);
    return index;
  }
}

function defined(deps: (number | undefined)[]): number[] {
  return [...new Set(deps.filter((d): d is number => d !== undefined))];
}

/** D.2: one collective per layer and pass, no compute, no deps. */
function microPass(b: FileBuilder, layers: readonly LayerTableRow[]): void {
  for (const i of layers.keys()) b.comm('WGCOMM', i, []);
}

/** D.3: forward in order; backward per layer: weight gradient, its all-reduce, input gradient. */
function dataPass(b: FileBuilder, n: number): void {
  for (let i = 0; i < n; i++) {
    b.compute('FWD', i, [i > 0 ? b.get('FWD', i - 1) : undefined, b.prev('WGCOMM', i) ?? b.prev('BWD_WG', i)]);
  }
  for (let i = n - 1; i >= 0; i--) {
    const wg = b.compute('BWD_WG', i, [i === n - 1 ? b.get('FWD', n - 1) : b.get('BWD_IG', i + 1)]);
    b.comm('WGCOMM', i, [wg]);
    if (i > 0) b.compute('BWD_IG', i, [wg]);
  }
}

/** D.4 (MODEL) and D.5 (hybrids): blocking forward all-gathers, input-gradient reduce-scatters. */
function modelPass(b: FileBuilder, n: number, hybrid: boolean): void {
  const fwdOut = (i: number): number | undefined => b.get('FWDCOMM', i) ?? b.get('FWD', i);
  for (let i = 0; i < n; i++) {
    const chain = i > 0 ? fwdOut(i - 1) : undefined;
    const lastPass = hybrid ? b.prev('WGCOMM', i) ?? b.prev('BWD_WG', i) : b.prev('BWD_WG', i);
    const fwd = b.compute('FWD', i, hybrid ? [lastPass, chain] : [chain, lastPass]);
    b.comm('FWDCOMM', i, [fwd]);
  }
  for (let i = n - 1; i >= 0; i--) {
    const deps = i === n - 1 ? [fwdOut(n - 1)] : [b.get('BWD_WG', i + 1), b.get('IGCOMM', i + 1)];
    const ig = b.compute('BWD_IG', i, deps);
    if (i > 0) b.comm('IGCOMM', i, [ig]);
    const wg = b.compute('BWD_WG', i, [ig]);
    if (hybrid) b.comm('WGCOMM', i, [wg]);
  }
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
  const compute = nodes.filter((n) => n.exactNs !== undefined);
  const replay = (n: DraftNode): number => (n.durationMicros === 0 ? 1 : n.durationMicros * 1000);
  return {
    computeNodes: compute.length,
    exactNs: compute.reduce((a, n) => a + n.exactNs!, 0),
    replayNs: compute.reduce((a, n) => a + replay(n), 0),
    subHalfMicroNodes: compute.filter((n) => n.durationMicros === 0).length,
  };
}

/**
 * Compute nodes that do no work (an embedding lookup has no GEMM) are dropped: ASTRA-sim aborts
 * on 0 ns events in roofline mode and never starts the successors of a tensor_size 0 node
 * (docs/astra-sim-formats.md F.1). Their dependents inherit their dependencies.
 */
function withoutIdleCompute(nodes: readonly DraftNode[]): DraftNode[] {
  const replacement = new Map<number, number[]>();
  const index = new Map<number, number>();
  const kept: DraftNode[] = [];
  nodes.forEach((n, i) => {
    const deps = [...new Set(n.deps.flatMap((d) => replacement.get(d) ?? [index.get(d)!]))];
    if (n.exactNs === 0 && n.type === 'COMP_NODE') {
      replacement.set(i, deps);
      return;
    }
    index.set(i, kept.length);
    kept.push({ ...n, deps });
  });
  return kept;
}

/** The per-file graph (passes linked), then one copy per NPU with ids offset by rank. */
export function buildChakraTraces(table: LayerTable, options: ChakraOptions = {}): ChakraTraces {
  const opts = { passes: 1, timing: 'replay' as ChakraTiming, networkDims: 2, micro: false, ...options };
  if (!Number.isSafeInteger(opts.passes) || opts.passes < 1) throw new RangeError(`passes must be a positive integer, got ${opts.passes}`);
  if (!Number.isSafeInteger(opts.networkDims) || opts.networkDims < 1) throw new RangeError(`networkDims must be a positive integer, got ${opts.networkDims}`);
  const b = new FileBuilder(table, opts);
  const n = table.layers.length;
  const parallelism = table.config.parallelism;
  for (let p = 0; p < opts.passes; p++) {
    b.nextPass();
    if (opts.micro) microPass(b, table.layers);
    else if (parallelism === 'DATA') dataPass(b, n);
    else modelPass(b, n, parallelism !== 'MODEL');
  }
  const nodes = withoutIdleCompute(b.nodes);
  const perFile = nodes.length;
  const ranks = Array.from({ length: table.config.npus }, (_, rank) =>
    nodes.map(({ deps, exactNs: _exact, ...node }, index): EtNode => ({
      id: rank * perFile + index,
      ...node,
      dataDeps: deps.map((d) => rank * perFile + d),
    })),
  );
  return { ranks, nodesPerFile: perFile, rounding: summarise(nodes) };
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The stderr line on whole-µs rounding (docs/astra-sim-formats.md C.3: report the aggregate error). */
export function roundingLine(r: RoundingSummary, timing: ChakraOptions['timing']): string {
  const errNs = r.replayNs - r.exactNs;
  const pct = r.exactNs > 0 ? (100 * errNs) / r.exactNs : 0;
  const sign = errNs >= 0 ? '+' : '-';
  const base =
    `chakra: ${r.computeNodes} compute nodes per file, ${fmt(r.exactNs)} ns exact; replayed in whole us: ` +
    `${fmt(r.replayNs)} ns (${sign}${fmt(Math.abs(errNs))} ns, ${sign}${Math.abs(pct).toFixed(3)}%), ${r.subHalfMicroNodes} node(s) under 0.5 us`;
  if (timing === 'roofline') return `${base}; roofline timing encodes the exact ns (system JSON: roofline-enabled 1, peak-perf ${ROOFLINE_PEAK_TFLOPS}, local-mem-bw >= 2)`;
  // Large errors come from sub-µs nodes: say how to avoid them.
  return Math.abs(pct) >= 1 ? `${base}; use --chakra-timing roofline for exact ns` : base;
}
