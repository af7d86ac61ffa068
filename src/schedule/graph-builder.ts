/**
 * Appends step-graph nodes in issue order. A node that would do nothing (a compute of 0 cycles, a
 * collective of 0 bytes) is not written — ASTRA-sim aborts or hangs on them (docs/astra-sim-formats.md F.1) — and
 * whoever depends on it depends on its dependencies instead. A `Handle` is the set of nodes whose
 * completion stands for "this step is done".
 */
import type { PlannedCollective } from '../plan/types.js';
import type { ComputeNode, NodeUnit, StepNode, TransferPeer } from './types.js';

export type Handle = readonly number[];

export const DONE: Handle = [];

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

export class GraphBuilder {
  readonly nodes: StepNode[] = [];
  /** Stamped on every node pushed while set. */
  unit: NodeUnit | undefined;

  compute(node: Omit<ComputeNode, 'kind' | 'deps'>, deps: Handle): Handle {
    if (!(node.cycles > 0)) return deps;
    // Fields named, not spread: a copy of the caller's object per node is the builder's hot path.
    return this.push({ kind: 'compute', name: node.name, pass: node.pass, layer: node.layer, microBatch: node.microBatch, cycles: node.cycles, flops: node.flops, tensorBytes: node.tensorBytes, deps: deps.slice() });
  }

  collective(name: string, c: PlannedCollective, deps: Handle): Handle {
    if (!(c.bytes > 0)) return deps;
    wholeBytes(name, c.bytes);
    return this.push({ kind: 'collective', name, type: c.type, bytes: c.bytes, group: c.group, deps: deps.slice() });
  }

  transfer(kind: 'send' | 'recv', name: string, peer: TransferPeer, bytes: number, tag: number, deps: Handle): Handle {
    if (!(bytes > 0)) return deps;
    wholeBytes(name, bytes);
    return this.push({ kind, name, peer, bytes, tag, deps: deps.slice() });
  }

  private push(node: StepNode): Handle {
    if (node.deps.length > 1) node.deps = [...new Set(node.deps)].sort((a, b) => a - b);
    // Units are replaced, never changed in place, so nodes of one unit share its object.
    if (this.unit !== undefined) node.unit = this.unit;
    this.nodes.push(node);
    return [this.nodes.length - 1];
  }
}
