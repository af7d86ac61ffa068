/**
 * Appends step-graph nodes in issue order. A node that would do nothing (a compute of 0 cycles, a
 * collective of 0 bytes) is not written — ASTRA-sim aborts or hangs on them (docs/astra-sim-formats.md F.1) — and
 * whoever depends on it depends on its dependencies instead. A `Handle` is the set of nodes whose
 * completion stands for "this step is done".
 */
import type { PlannedCollective } from '../plan/types.js';
import type { CollectiveNode, ComputeNode, ComputePass, NodeUnit, StepNode, TransferPeer } from './types.js';

export type Handle = readonly number[];

export const DONE: Handle = Object.freeze([]);

export function joinHandles(...handles: Handle[]): Handle {
  // Most joins have one side done (empty), or two one-node sides: neither needs a Set.
  let only: Handle | undefined;
  let total = 0;
  for (const h of handles) {
    total += h.length;
    if (h.length > 0) only ??= h;
  }
  if (only === undefined) return DONE;
  if (total === only.length) return only;
  if (total > 16) return [...new Set(handles.flat())];
  const joined: number[] = [];
  for (const h of handles) for (const x of h) if (!joined.includes(x)) joined.push(x);
  return joined;
}

/** joinHandles of two handles without the rest-parameter array (the builder joins per layer and micro-batch). */
export function joinTwo(a: Handle, b: Handle): Handle {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  return joinHandles(a, b);
}

/** comm_size is an integer count of bytes in the trace: a fraction here is a modelling bug, not bad input. */
function wholeBytes(name: string, bytes: number): void {
  if (!Number.isSafeInteger(bytes)) throw new Error(`internal error: ${name} would carry ${bytes} bytes, not a whole number`);
}

/**
 * The builder's compute and collective nodes: classes, each first built once at load with a
 * non-number in its measures (the seeds below), so that V8 gives those fields the tagged
 * representation from the start: small integers stay inline and any other number is a heap
 * number, with no representation change later. As object literals the fields began as small
 * integers, and the first value past 2^31 (the 100k-node chain's optimizer step, its last node)
 * deprecated the shape of every node before it: each was re-allocated on its next read, ~350 ms
 * and ~45 MB of a Chakra translate (seeded as doubles instead, every measure is a 16-byte box).
 * The unit is a field of its own (not added later, which gave each node a separate property array).
 */
class StepComputeNode implements ComputeNode {
  readonly kind = 'compute' as const;
  name: string;
  pass: ComputePass;
  layer: number;
  microBatch: number;
  cycles: number;
  flops: number;
  tensorBytes: number;
  deps: number[];
  unit: NodeUnit | undefined;

  constructor(node: Omit<ComputeNode, 'kind' | 'deps'>, deps: number[], unit: NodeUnit | undefined) {
    this.name = node.name;
    this.pass = node.pass;
    this.layer = node.layer;
    this.microBatch = node.microBatch;
    this.cycles = node.cycles;
    this.flops = node.flops;
    this.tensorBytes = node.tensorBytes;
    this.deps = deps;
    this.unit = unit;
  }
}

class StepCollectiveNode implements CollectiveNode {
  readonly kind = 'collective' as const;
  name: string;
  type: CollectiveNode['type'];
  bytes: number;
  group: CollectiveNode['group'];
  deps: number[];
  unit: NodeUnit | undefined;

  constructor(name: string, c: PlannedCollective, deps: number[], unit: NodeUnit | undefined) {
    this.name = name;
    this.type = c.type;
    this.bytes = c.bytes;
    this.group = c.group;
    this.deps = deps;
    this.unit = unit;
  }
}

// The shape seeds (see StepComputeNode): no number, so no later number changes the fields' representation.
const TAGGED_SEED = null as unknown as number;
new StepComputeNode({ name: '', pass: 'fwd', layer: TAGGED_SEED, microBatch: TAGGED_SEED, cycles: TAGGED_SEED, flops: TAGGED_SEED, tensorBytes: TAGGED_SEED }, [], undefined);
new StepCollectiveNode('', { type: 'ALLREDUCE', bytes: TAGGED_SEED, group: 'dp', label: '' }, [], undefined);

/**
 * A node's dependencies, each once and ascending. A handle of one node (or none) is the node's
 * list itself: handles are frozen and never changed, so nodes share them instead of a copy each
 * (250k arrays for the chain's graph).
 */
function nodeDeps(deps: Handle): number[] {
  if (deps.length <= 1) return deps as number[];
  return [...new Set(deps)].sort((a, b) => a - b);
}

export class GraphBuilder {
  readonly nodes: StepNode[] = [];
  /** Stamped on every node pushed while set. */
  unit: NodeUnit | undefined;

  compute(node: Omit<ComputeNode, 'kind' | 'deps'>, deps: Handle): Handle {
    if (!(node.cycles > 0)) return deps;
    return this.pushNode(new StepComputeNode(node, nodeDeps(deps), this.unit));
  }

  collective(name: string, c: PlannedCollective, deps: Handle): Handle {
    if (!(c.bytes > 0)) return deps;
    wholeBytes(name, c.bytes);
    return this.pushNode(new StepCollectiveNode(name, c, nodeDeps(deps), this.unit));
  }

  transfer(kind: 'send' | 'recv', name: string, peer: TransferPeer, bytes: number, tag: number, deps: Handle): Handle {
    if (!(bytes > 0)) return deps;
    wholeBytes(name, bytes);
    return this.push({ kind, name, peer, bytes, tag, deps: deps.slice() });
  }

  private pushNode(node: StepNode): Handle {
    this.nodes.push(node);
    return Object.freeze([this.nodes.length - 1]);
  }

  private push(node: StepNode): Handle {
    if (node.deps.length > 1) node.deps = [...new Set(node.deps)].sort((a, b) => a - b);
    // Units are replaced, never changed in place, so nodes of one unit share its object.
    if (this.unit !== undefined) node.unit = this.unit;
    return this.pushNode(node);
  }
}
