/**
 * Graph structure checks and a topological order: every value has at most one producer, every
 * node input has one, and there is no cycle. Nodes keep file order where the graph allows it.
 */
import { indexOutOfRange, InputError, internalError } from '../errors.js';
import type { Graph, Node } from '../ir/graph.js';

function nodeLabel(node: Node): string {
  return `node '${node.name === '' ? '(unnamed)' : node.name}' (${node.opType})`;
}

/** Names a node reads: its inputs plus outer-scope names its subgraphs use. */
export function nodeReads(node: Node): readonly string[] {
  if (node.attributes.size === 0) return node.inputs;
  let reads: string[] | undefined;
  for (const attr of node.attributes.values()) {
    if (attr.kind !== 'graph' && attr.kind !== 'graphs') continue;
    reads ??= node.inputs.filter((n) => n !== '');
    for (const g of attr.kind === 'graph' ? [attr.value] : attr.value) reads.push(...outerScopeReads(g));
  }
  // Most nodes have no subgraph: their inputs ('' marks an absent optional input) are all they read.
  return reads ?? node.inputs;
}

/** Names a subgraph reads that it does not define itself. */
export function outerScopeReads(graph: Graph): string[] {
  const defined = new Set<string>([...graph.inputs.map((v) => v.name), ...graph.initializers.map((t) => t.name)]);
  for (const n of graph.nodes) for (const o of n.outputs) defined.add(o);
  const reads = new Set<string>();
  for (const n of graph.nodes) for (const r of nodeReads(n)) if (r !== '' && !defined.has(r)) reads.add(r);
  return [...reads];
}

/**
 * Orders `graph.nodes` so producers precede consumers. `available` holds names defined outside the
 * nodes (graph inputs, initializers, outer scopes).
 */
export function topologicalOrder(file: string, graph: Graph, available: { has(name: string): boolean }): Node[] {
  const nodes = graph.nodes;
  const producerOf = new Map<string, number>();
  const graphInputs = new Set(graph.inputs.map((i) => i.name));
  nodes.forEach((node, index) => {
    for (const out of node.outputs) {
      if (out === '') continue;
      const known = producerOf.size;
      producerOf.set(out, index);
      if (producerOf.size === known) {
        const other = nodes.find((n) => n.outputs.includes(out)) ?? node;
        throw new InputError(`${file}: value '${out}' has two producers: ${nodeLabel(other)} and ${nodeLabel(node)}`);
      }
      if (graphInputs.has(out) && available.has(out)) throw new InputError(`${file}: ${nodeLabel(node)} writes '${out}', which is a graph input`);
    }
  });
  // Consumers by producer position (one list per node, not per value); a producer read twice counts once.
  const consumers: (number[] | undefined)[] = new Array<number[] | undefined>(nodes.length);
  const waiting = new Int32Array(nodes.length);
  nodes.forEach((node, index) => {
    for (const name of nodeReads(node)) {
      if (name === '') continue;
      const p = producerOf.get(name);
      if (p !== undefined) {
        const list = consumers[p];
        if (list === undefined) consumers[p] = [index];
        else if (list[list.length - 1] !== index) list.push(index);
        else continue;
        waiting[index] = (waiting[index] ?? 0) + 1;
      } else if (!available.has(name)) {
        throw new InputError(`${file}: ${nodeLabel(node)} reads '${name}', which no node, input or initializer provides`);
      }
    }
  });
  // Kahn's algorithm with a min-heap on file position, so valid files keep their order.
  const ready: number[] = [];
  const push = (i: number): void => {
    ready.push(i);
    let c = ready.length - 1;
    while (c > 0) {
      const p = (c - 1) >> 1;
      const parent = ready[p] ?? indexOutOfRange(p);
      const child = ready[c] ?? indexOutOfRange(c);
      if (parent <= child) break;
      ready[p] = child;
      ready[c] = parent;
      c = p;
    }
  };
  const pop = (): number => {
    const top = ready[0] ?? indexOutOfRange(0);
    const last = ready.pop() ?? indexOutOfRange(0);
    if (ready.length > 0) {
      ready[0] = last;
      let p = 0;
      for (;;) {
        const l = 2 * p + 1;
        const r = l + 1;
        const parent = ready[p] ?? indexOutOfRange(p);
        let m = p;
        let least = parent;
        const left = l < ready.length ? (ready[l] ?? indexOutOfRange(l)) : Infinity;
        if (left < least) {
          m = l;
          least = left;
        }
        const right = r < ready.length ? (ready[r] ?? indexOutOfRange(r)) : Infinity;
        if (right < least) {
          m = r;
          least = right;
        }
        if (m === p) break;
        ready[p] = least;
        ready[m] = parent;
        p = m;
      }
    }
    return top;
  };
  for (let i = 0; i < waiting.length; i++) if (waiting[i] === 0) push(i);
  const order: Node[] = [];
  while (ready.length > 0) {
    const i = pop();
    order.push(nodes[i] ?? indexOutOfRange(i));
    for (const c of consumers[i] ?? []) {
      const left = (waiting[c] ?? indexOutOfRange(c)) - 1;
      waiting[c] = left;
      if (left === 0) push(c);
    }
  }
  if (order.length !== nodes.length) {
    const stuck = nodes.find((_, i) => (waiting[i] ?? 0) > 0) ?? internalError('an unordered node without waiting inputs');
    throw new InputError(`${file}: the graph has a cycle through ${nodeLabel(stuck)}`);
  }
  return order;
}
