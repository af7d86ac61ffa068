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
  const producer = new Map<string, Node>();
  for (const node of graph.nodes) {
    for (const out of node.outputs) {
      if (out === '') continue;
      const other = producer.get(out);
      if (other !== undefined) throw new InputError(`${file}: value '${out}' has two producers: ${nodeLabel(other)} and ${nodeLabel(node)}`);
      if (available.has(out) && graph.inputs.some((i) => i.name === out)) {
        throw new InputError(`${file}: ${nodeLabel(node)} writes '${out}', which is a graph input`);
      }
      producer.set(out, node);
    }
  }
  const consumers = new Map<string, number[]>();
  const waiting = new Array<number>(graph.nodes.length).fill(0);
  graph.nodes.forEach((node, index) => {
    for (const name of nodeReads(node)) {
      if (name === '') continue;
      if (producer.has(name)) {
        const list = consumers.get(name);
        if (list === undefined) consumers.set(name, [index]);
        else if (list[list.length - 1] !== index) list.push(index); // a value read twice counts once
        else continue;
        waiting[index] = (waiting[index] ?? indexOutOfRange(index)) + 1;
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
  for (const [i, w] of waiting.entries()) if (w === 0) push(i);
  const order: Node[] = [];
  while (ready.length > 0) {
    const i = pop();
    const node = graph.nodes[i] ?? indexOutOfRange(i);
    order.push(node);
    for (const out of node.outputs) {
      for (const c of consumers.get(out) ?? []) {
        const left = (waiting[c] ?? indexOutOfRange(c)) - 1;
        waiting[c] = left;
        if (left === 0) push(c);
      }
    }
  }
  if (order.length !== graph.nodes.length) {
    const stuck = graph.nodes.find((_, i) => (waiting[i] ?? 0) > 0) ?? internalError('an unordered node without waiting inputs');
    throw new InputError(`${file}: the graph has a cycle through ${nodeLabel(stuck)}`);
  }
  return order;
}
