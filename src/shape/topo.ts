/**
 * Graph structure checks and a topological order: every value has at most one producer, every
 * node input has one, and there is no cycle. Nodes keep file order where the graph allows it.
 */
import { indexOutOfRange, InputError, internalError } from '../errors.js';
import type { Graph, Node } from '../ir/graph.js';
import { ValueTable } from './value-table.js';

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
 * Each node's input and output value ids (ids of the graph's `ValueTable`), node after node in
 * execution order: node j's inputs are `inputIds[inputStart[j]] .. inputIds[inputStart[j + 1] - 1]`,
 * its outputs likewise; `NO_VALUE_ID` (-1) for an omitted one ('').
 */
export interface NodeValueIds {
  inputIds: Int32Array;
  inputStart: Int32Array;
  outputIds: Int32Array;
  outputStart: Int32Array;
}

/** The id of an omitted optional input or output (''). */
export const NO_VALUE_ID = -1;

/** A graph's nodes in execution order, with each node's input and output value ids. */
export interface GraphOrder {
  order: readonly Node[];
  /** File position of each node of `order`. */
  readonly positions: Int32Array;
  /** By position in `order`. */
  nodeValues: NodeValueIds;
}

/** Id lists by file position -> by position in the order (`positions[j]`: file position of node j). */
function inOrder(ids: Int32Array, start: Int32Array, positions: Int32Array): { ids: Int32Array; start: Int32Array } {
  const ordered = new Int32Array(ids.length);
  const orderedStart = new Int32Array(start.length);
  let k = 0;
  for (let j = 0; j < positions.length; j++) {
    const p = positions[j] ?? 0;
    // Element by element: a node has a few ids, and a subarray per node is an object per node.
    for (let i = start[p] ?? 0, to = start[p + 1] ?? 0; i < to; i++) ordered[k++] = ids[i] ?? NO_VALUE_ID;
    orderedStart[j + 1] = k;
  }
  return { ids: ordered, start: orderedStart };
}

/**
 * Orders `graph.nodes` so producers precede consumers. `available` holds names defined outside the
 * nodes (graph inputs, initializers, outer scopes).
 */
export function topologicalOrder(file: string, graph: Graph, available: { has(name: string): boolean }): readonly Node[] {
  return orderGraph(file, graph, available, new ValueTable()).order;
}

/**
 * The id of each output of the graph's nodes, and where each node's inputs and outputs start in
 * the id lists (one pass over the nodes for all three); `fresh` when every output name was new to
 * the table (then the outputs hold the ids from `definedOutside` up, in file order: no value has
 * two producers, and a producer is known from its id alone).
 */
function outputValueIds(nodes: readonly Node[], table: ValueTable, chain: ChainInputs): { ids: Int32Array; start: Int32Array; inputStart: Int32Array; fresh: boolean } {
  const start = new Int32Array(nodes.length + 1);
  const inputStart = new Int32Array(nodes.length + 1);
  // Room for one output a node (most nodes have one), grown if more come: the pages of the unused
  // rest of a typed array are never touched.
  let ids: Int32Array = new Int32Array(Math.max(nodes.length, 8));
  table.reserve(nodes.length);
  let fresh = true;
  let k = 0;
  let inputCount = 0;
  // Indexed loops: an iterator per node list until the code is optimized.
  for (let p = 0; p < nodes.length; p++) {
    const node = nodes[p] ?? indexOutOfRange(p);
    inputCount += node.inputs.length;
    inputStart[p + 1] = inputCount;
    chain.read(node, ids, p > 0 ? (start[p - 1] ?? 0) : 0, k);
    const outputs = node.outputs;
    if (k + outputs.length > ids.length) ids = grown(ids, k + outputs.length);
    for (let i = 0; i < outputs.length; i++) {
      const name = outputs[i] ?? '';
      if (name === '') {
        ids[k++] = NO_VALUE_ID;
        continue;
      }
      const next = table.idCount;
      const id = table.intern(name);
      if (id !== next) fresh = false;
      ids[k++] = id;
    }
    start[p + 1] = k;
  }
  return { ids: k === ids.length ? ids : ids.subarray(0, k), start, inputStart, fresh };
}

/**
 * Input ids found in the pass that interns the outputs, for a graph in file order (as exporters
 * write them): every read a value defined outside the nodes or an output of a node before it (then
 * the input pass is not needed). The output just before and the next outside value not read yet
 * (a chain's two reads) are matched by comparing names, others looked up. Gives up (`ids`
 * undefined) at a read of a name without an id yet, or a node with sub-graphs; the input pass
 * then runs as for any graph. The ids are used only when the outputs are fresh (in file order).
 */
class ChainInputs {
  private ids: Int32Array | undefined;
  private count = 0;
  private nextOutside = 0;

  constructor(
    nodeCount: number,
    private readonly table: ValueTable,
    private readonly available: { has(name: string): boolean },
    private readonly definedOutside: number,
  ) {
    // Room for two inputs a node (a chain's op and its weight), grown if more come (untouched pages cost nothing).
    this.ids = new Int32Array(Math.max(2 * nodeCount, 8));
  }

  /** The next node's inputs; the outputs of the node before it are `outputIds[from]` .. `outputIds[to - 1]`. */
  read(node: Node, outputIds: Int32Array, from: number, to: number): void {
    let ids = this.ids;
    if (ids === undefined) return;
    const inputs = node.inputs;
    if (nodeReads(node) !== inputs) {
      this.ids = undefined;
      return;
    }
    if (this.count + inputs.length > ids.length) {
      ids = grown(ids, this.count + inputs.length);
      this.ids = ids;
    }
    const table = this.table;
    for (let i = 0; i < inputs.length; i++) {
      const name = inputs[i] ?? '';
      let id = NO_VALUE_ID;
      if (name !== '') {
        id = neighbourId(table, name, outputIds, from, to, this.nextOutside, this.definedOutside);
        // Else by name: an id below the table's count is a value defined outside or an output of
        // a node before this one (no input is interned in this pass); a name without one is read
        // before it is written, or nothing provides it: the input pass orders or names it.
        if (id < 0) id = table.idOf(name) ?? NO_VALUE_ID;
        // An outside value must be provided (the input pass's check of a read nothing provides).
        if (id < 0 || (id < this.definedOutside && table.infoAt(id) === undefined && !this.available.has(name))) {
          this.ids = undefined;
          return;
        }
        if (id < this.definedOutside) this.nextOutside = id + 1;
      }
      ids[this.count++] = id;
    }
  }

  /** The input ids of every node, or undefined when a read was not a chain's. */
  result(): Int32Array | undefined {
    const ids = this.ids;
    return ids === undefined || ids.length === this.count ? ids : ids.subarray(0, this.count);
  }
}

/**
 * The id of a read matched without hashing its name: one of the node before's outputs
 * (`outputIds[from]` .. `outputIds[to - 1]`), or `nextOutside`, the value defined outside the nodes
 * after the last one read (initializers listed in the order nodes read them); NO_VALUE_ID otherwise.
 */
function neighbourId(table: ValueTable, name: string, outputIds: Int32Array, from: number, to: number, nextOutside: number, definedOutside: number): number {
  for (let o = from; o < to; o++) {
    const out = outputIds[o] ?? NO_VALUE_ID;
    if (out >= 0 && table.nameAt(out) === name) return out;
  }
  return nextOutside < definedOutside && table.nameAt(nextOutside) === name ? nextOutside : NO_VALUE_ID;
}

/** `ids` copied into a list of at least `count` (twice as long, to grow only a few times). */
function grown(ids: Int32Array, count: number): Int32Array {
  const longer = new Int32Array(Math.max(count, 2 * ids.length));
  longer.set(ids);
  return longer;
}

/**
 * The file position of each value's producer (-1 for none), checking that no value has two and
 * that no node writes a graph input.
 */
function producerPositions(file: string, graph: Graph, available: { has(name: string): boolean }, table: ValueTable, outputs: { ids: Int32Array; start: Int32Array }): Int32Array {
  const nodes = graph.nodes;
  const graphInputs = graph.inputs.length === 0 ? undefined : new Set(graph.inputs.map((i) => i.name));
  const producerAt = new Int32Array(table.idCount).fill(-1);
  for (let index = 0; index < nodes.length; index++) {
    const node = nodes[index] ?? indexOutOfRange(index);
    for (let k = outputs.start[index] ?? 0; k < (outputs.start[index + 1] ?? 0); k++) {
      const id = outputs.ids[k] ?? -1;
      if (id < 0) continue;
      const out = table.nameAt(id) ?? indexOutOfRange(id);
      if ((producerAt[id] ?? -1) >= 0) {
        const other = nodes.find((n) => n.outputs.includes(out)) ?? node;
        throw new InputError(`${file}: value '${out}' has two producers: ${nodeLabel(other)} and ${nodeLabel(node)}`);
      }
      producerAt[id] = index;
      if (graphInputs?.has(out) && available.has(out)) throw new InputError(`${file}: ${nodeLabel(node)} writes '${out}', which is a graph input`);
    }
  }
  return producerAt;
}

/**
 * Each node input's id. An input the node before it writes (most of a chain's), or the name after
 * the last one read of those defined outside the nodes (initializers listed in the order nodes
 * read them, as exporters write them), is matched by comparing names, without hashing it into the
 * table's map. `definedOutside`: ids below it were given before the nodes' outputs. Each node's
 * ids go through `order` as they are given (one pass over the nodes for both).
 */
function inputValueIds(nodes: readonly Node[], table: ValueTable, outputs: { ids: Int32Array; start: Int32Array }, start: Int32Array, definedOutside: number, order: FileOrderCheck): { ids: Int32Array; start: Int32Array } {
  let nextOutside = 0;
  const ids = new Int32Array(start[nodes.length] ?? 0);
  let k = 0;
  for (let p = 0; p < nodes.length; p++) {
    const previousFrom = p > 0 ? (outputs.start[p - 1] ?? 0) : 0;
    const previousTo = outputs.start[p] ?? 0;
    const node = nodes[p] ?? indexOutOfRange(p);
    const inputs = node.inputs;
    const from = k;
    for (let i = 0; i < inputs.length; i++) {
      const name = inputs[i] ?? '';
      let id = -1;
      if (name !== '') {
        id = neighbourId(table, name, outputs.ids, previousFrom, previousTo, nextOutside, definedOutside);
        if (id < 0) id = table.intern(name);
        if (id < definedOutside) nextOutside = id + 1;
      }
      ids[k++] = id;
    }
    order.check(p, node, ids, from, k);
  }
  return { ids, start };
}

/**
 * Producers of a graph's values: by file position per id, or (`fresh` outputs, no list built) the
 * node outputs' ids `definedOutside` .. `outputsEnd - 1` given in file order.
 */
type Producers = { producerAt: Int32Array } | { definedOutside: number; outputsEnd: number; outputs: { ids: Int32Array; start: Int32Array } };

/**
 * Whether every node reads only values defined outside the nodes or written by nodes before it in
 * the file (how exporters write graphs), decided node after node in file order, checking on the
 * way what the general order checks, in its order: a read that nothing provides is the same
 * error. Out of order at the first read of a value written later, or at a node with sub-graphs
 * (their outer reads are resolved by name there); nothing is checked from then on.
 */
class FileOrderCheck {
  inOrder = true;
  private readonly producerAt: Int32Array | undefined;
  private readonly definedOutside: number;
  private readonly outputsEnd: number;
  private readonly outputs: { ids: Int32Array; start: Int32Array } | undefined;
  /** Fresh outputs: the first id of the next node's outputs (ids from it up are written by it or later). */
  private laterFrom: number;

  constructor(
    private readonly file: string,
    private readonly table: ValueTable,
    private readonly available: { has(name: string): boolean },
    producers: Producers,
  ) {
    const byList = 'producerAt' in producers;
    this.producerAt = byList ? producers.producerAt : undefined;
    this.definedOutside = byList ? 0 : producers.definedOutside;
    this.outputsEnd = byList ? 0 : producers.outputsEnd;
    this.outputs = byList ? undefined : producers.outputs;
    this.laterFrom = this.definedOutside;
  }

  /** Node `index` (file position), whose input ids are `ids[from]` .. `ids[to - 1]`. */
  check(index: number, node: Node, ids: Int32Array, from: number, to: number): void {
    if (!this.inOrder) return;
    if (nodeReads(node) !== node.inputs) {
      this.inOrder = false;
      return;
    }
    const producerAt = this.producerAt;
    for (let k = from; k < to; k++) {
      const id = ids[k] ?? -1;
      if (id < 0) continue;
      let produced: boolean;
      if (producerAt !== undefined) {
        const p = id < producerAt.length ? (producerAt[id] ?? -1) : -1;
        produced = p >= 0;
        if (p >= index) this.inOrder = false;
      } else {
        produced = id >= this.definedOutside && id < this.outputsEnd;
        if (produced && id >= this.laterFrom) this.inOrder = false;
      }
      if (!this.inOrder) return;
      if (!produced && this.table.infoAt(id) === undefined && !this.available.has(this.table.nameAt(id) ?? indexOutOfRange(id))) {
        throw new InputError(`${this.file}: ${nodeLabel(node)} reads '${this.table.nameAt(id)}', which no node, input or initializer provides`);
      }
    }
    const outputs = this.outputs;
    if (outputs !== undefined) {
      for (let k = outputs.start[index] ?? 0; k < (outputs.start[index + 1] ?? 0); k++) {
        const id = outputs.ids[k] ?? -1;
        if (id >= 0) this.laterFrom = id + 1;
      }
    }
  }
}

/**
 * `topologicalOrder`, interning every node input and output name in `table` (which already holds
 * the names defined outside the nodes, or some of them) and giving each node's value ids.
 */
export function orderGraph(file: string, graph: Graph, available: { has(name: string): boolean }, table: ValueTable): GraphOrder {
  const nodes = graph.nodes;
  const definedOutside = table.idCount;
  // Graph inputs the table holds get its ids: a fresh output is none of them.
  const inputsInTable = graph.inputs.every((i) => {
    const id = table.idOf(i.name);
    return id !== undefined && id < definedOutside;
  });
  const chain = new ChainInputs(nodes.length, table, available, definedOutside);
  const outputs = outputValueIds(nodes, table, chain);
  const inputStart = outputs.inputStart;
  const outputsEnd = table.idCount;
  const checked = outputs.fresh && inputsInTable ? undefined : producerPositions(file, graph, available, table, outputs);
  // Fresh outputs, each read one of an earlier node or provided from outside: in file order, no input pass.
  const chainIds = checked === undefined ? chain.result() : undefined;
  const fileOrder = chainIds === undefined ? new FileOrderCheck(file, table, available, checked === undefined ? { definedOutside, outputsEnd, outputs } : { producerAt: checked }) : undefined;
  const inputs = chainIds !== undefined ? { ids: chainIds, start: inputStart } : inputValueIds(nodes, table, outputs, inputStart, definedOutside, fileOrder ?? internalError('no file-order check'));
  if (fileOrder?.inOrder ?? true) {
    // What Kahn's algorithm below gives such a graph (each node is the lowest position ready once
    // the ones before it ran), without its consumer lists, heap and reordered id lists; the order
    // is the graph's own node list (the model is never changed) and its positions are made if asked.
    let positions: Int32Array | undefined;
    return {
      order: nodes,
      get positions(): Int32Array {
        if (positions === undefined) {
          positions = new Int32Array(nodes.length);
          for (let j = 0; j < positions.length; j++) positions[j] = j;
        }
        return positions;
      },
      nodeValues: { inputIds: inputs.ids, inputStart: inputs.start, outputIds: outputs.ids, outputStart: outputs.start },
    };
  }
  const producerAt = checked ?? producerPositions(file, graph, available, table, outputs);
  // Consumers by producer position (one list per node, not per value); a producer read twice counts once.
  const consumers: (number[] | undefined)[] = new Array<number[] | undefined>(nodes.length);
  const waiting = new Int32Array(nodes.length);
  const consume = (index: number, p: number): void => {
    const list = consumers[p];
    if (list === undefined) consumers[p] = [index];
    else if (list[list.length - 1] !== index) list.push(index);
    else return;
    waiting[index] = (waiting[index] ?? 0) + 1;
  };
  for (let index = 0; index < nodes.length; index++) {
    const node = nodes[index] ?? indexOutOfRange(index);
    const reads = nodeReads(node);
    if (reads === node.inputs) {
      // Inputs only (no subgraph): their ids are known.
      for (let k = inputs.start[index] ?? 0; k < (inputs.start[index + 1] ?? 0); k++) {
        const id = inputs.ids[k] ?? -1;
        if (id < 0) continue;
        const p = id < producerAt.length ? (producerAt[id] ?? -1) : -1;
        if (p >= 0) consume(index, p);
        // A value the table already has an info for is defined outside the nodes (no lookup by name).
        else if (table.infoAt(id) === undefined && !available.has(table.nameAt(id) ?? indexOutOfRange(id))) throw new InputError(`${file}: ${nodeLabel(node)} reads '${table.nameAt(id)}', which no node, input or initializer provides`);
      }
      continue;
    }
    for (const name of reads) {
      if (name === '') continue;
      const id = table.idOf(name);
      const p = id !== undefined && id < producerAt.length ? (producerAt[id] ?? -1) : -1;
      if (p >= 0) consume(index, p);
      else if (!available.has(name)) throw new InputError(`${file}: ${nodeLabel(node)} reads '${name}', which no node, input or initializer provides`);
    }
  }
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
  const positions = new Int32Array(nodes.length);
  while (ready.length > 0) {
    const i = pop();
    positions[order.length] = i;
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
  const ins = inOrder(inputs.ids, inputs.start, positions);
  const outs = inOrder(outputs.ids, outputs.start, positions);
  return { order, positions, nodeValues: { inputIds: ins.ids, inputStart: ins.start, outputIds: outs.ids, outputStart: outs.start } };
}
