/**
 * The legacy per-layer table as the graph Chakra's text converter builds from a text workload
 * (docs/astra-sim-formats.md Part D), improved as D.8 suggests: no node for an absent (NONE) or
 * zero-byte collective (ASTRA-sim would still simulate it, B.8), and no compute node that lasts
 * under half a nanosecond (ASTRA-sim aborts on 0 ns events in roofline mode and never starts the
 * successors of a tensor_size 0 node, F.1); a dependency on a skipped node falls back to what
 * that node depended on. Passes are linked by cross-pass edges (the converter's --num-passes).
 * writers/chakra-graph.ts serializes the graph, one identical copy per NPU.
 */
import type { Collective, Parallelism } from '../plan/legacy.js';
import type { LayerTable, LayerTableRow, PassWork } from './types.js';
import { cyclesToWholeNs } from '../units.js';

export type ConverterPass = 'FWD' | 'BWD_IG' | 'BWD_WG';
export type ConverterComm = 'FWDCOMM' | 'IGCOMM' | 'WGCOMM';

interface NodeBase {
  /** The table row's layer name. */
  layer: string;
  /** Indices of earlier nodes of the graph. */
  deps: number[];
}

export interface ConverterComputeNode extends NodeBase {
  kind: ConverterPass;
  /** One NPU's compute, in array clock cycles. */
  cycles: number;
  work?: PassWork;
}

export interface ConverterCommNode extends NodeBase {
  kind: ConverterComm;
  collective: Collective;
}

export type ConverterNode = ConverterComputeNode | ConverterCommNode;

/** One NPU's file (every NPU's is the same), and what its serialization needs of the table. */
export interface ConverterGraph {
  nodes: ConverterNode[];
  parallelism: Parallelism;
  npus: number;
  clockMHz: number;
}

export interface ConverterGraphOptions {
  /** Training iterations, linked by cross-pass edges. */
  passes: number;
  /** MICRO (D.2): each layer's weight-gradient collective only, no deps, no compute. */
  micro: boolean;
}

/** Where each compute kind finds its cycles and work, and each comm kind its collective, on a row. */
const PASS_FIELDS = {
  FWD: { cycles: 'fwdCycles', work: 'fwd' },
  BWD_IG: { cycles: 'igCycles', work: 'ig' },
  BWD_WG: { cycles: 'wgCycles', work: 'wg' },
} as const satisfies Record<ConverterPass, { cycles: keyof LayerTableRow; work: string }>;
const COMM_FIELD = { FWDCOMM: 'fwdComm', IGCOMM: 'igComm', WGCOMM: 'wgComm' } as const satisfies Record<ConverterComm, keyof LayerTableRow>;

/** Emits the nodes of the graph and remembers, per pass, which node plays which role. */
class ConverterBuilder {
  readonly nodes: ConverterNode[] = [];
  /** Node index by `${kind}:${layer}`, for this training pass and the one before it. */
  private current = new Map<string, number>();
  private previous = new Map<string, number>();

  constructor(private readonly table: LayerTable) {}

  nextPass(): void {
    this.previous = this.current;
    this.current = new Map();
  }

  get(kind: ConverterNode['kind'], i: number): number | undefined {
    return this.current.get(`${kind}:${i}`);
  }

  prev(kind: ConverterNode['kind'], i: number): number | undefined {
    return this.previous.get(`${kind}:${i}`);
  }

  compute(kind: ConverterPass, i: number, deps: (number | undefined)[]): number {
    const row = this.row(i);
    const work = row.work?.[PASS_FIELDS[kind].work];
    return this.add(i, { kind, layer: row.name, cycles: row[PASS_FIELDS[kind].cycles], ...(work === undefined ? {} : { work }), deps: defined(deps) });
  }

  /** A collective node, or undefined when the layer has none in this pass (NONE or 0 bytes). */
  comm(kind: ConverterComm, i: number, deps: (number | undefined)[]): number | undefined {
    const row = this.row(i);
    const collective = row[COMM_FIELD[kind]];
    if (collective.type === 'NONE' || collective.bytes <= 0) return undefined;
    return this.add(i, { kind, layer: row.name, collective, deps: defined(deps) });
  }

  private row(i: number): LayerTableRow {
    const row = this.table.layers[i];
    if (row === undefined) throw new Error(`internal error: no table row ${i}`);
    return row;
  }

  private add(i: number, node: ConverterNode): number {
    const index = this.nodes.length;
    this.nodes.push(node);
    this.current.set(`${node.kind}:${i}`, index);
    return index;
  }
}

function defined(deps: (number | undefined)[]): number[] {
  return [...new Set(deps.filter((d): d is number => d !== undefined))];
}

/** D.2: one collective per layer and pass, no compute, no deps. */
function microPass(b: ConverterBuilder, n: number): void {
  for (let i = 0; i < n; i++) b.comm('WGCOMM', i, []);
}

/** D.3: forward in order; backward per layer: weight gradient, its all-reduce, input gradient. */
function dataPass(b: ConverterBuilder, n: number): void {
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
function modelPass(b: ConverterBuilder, n: number, hybrid: boolean): void {
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

/** Drops compute nodes that round to 0 ns (as the text format rounds); their dependents inherit their dependencies. */
function withoutIdleCompute(clockMHz: number, nodes: readonly ConverterNode[]): ConverterNode[] {
  const replacement = new Map<number, number[]>();
  const index = new Map<number, number>();
  const kept: ConverterNode[] = [];
  nodes.forEach((n, i) => {
    const deps = [...new Set(n.deps.flatMap((d) => replacement.get(d) ?? index.get(d) ?? []))];
    if ('cycles' in n && cyclesToWholeNs(n.cycles, clockMHz) === 0) {
      replacement.set(i, deps);
      return;
    }
    index.set(i, kept.length);
    kept.push({ ...n, deps });
  });
  return kept;
}

export function converterGraph(table: LayerTable, options: ConverterGraphOptions): ConverterGraph {
  if (!Number.isSafeInteger(options.passes) || options.passes < 1) throw new RangeError(`passes must be a positive integer, got ${options.passes}`);
  const b = new ConverterBuilder(table);
  const n = table.layers.length;
  const parallelism = table.config.parallelism;
  for (let p = 0; p < options.passes; p++) {
    b.nextPass();
    if (options.micro) microPass(b, n);
    else if (parallelism === 'DATA') dataPass(b, n);
    else modelPass(b, n, parallelism !== 'MODEL');
  }
  return { nodes: withoutIdleCompute(table.clockMHz, b.nodes), parallelism, npus: table.config.npus, clockMHz: table.clockMHz };
}
