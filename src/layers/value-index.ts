/**
 * Dense integer ids for the values one lowering reads, and what lowering asks of each value as
 * arrays by id: its producer, its consumers, where its data comes from (`ValueOrigin`) and its
 * inferred info. Built in one pass over the nodes in execution order; every later question is an
 * array read instead of a lookup in a map keyed by value name (on a 100k-node graph, lowering
 * asked ~1.2 M such lookups, each a cache miss in a large table).
 */
import { internalError } from '../errors.js';
import { builtValueLinks, provideValueLinks, type Node } from '../ir/graph.js';
import { graphOrderOf, type InferredModel } from '../shape/infer.js';
import type { ValueTable } from '../shape/value-table.js';
import type { TensorInfo } from '../shape/tensor-info.js';
import { IndexedValueLinks } from './value-links-view.js';

/** Where a value's data comes from: graph inputs, initializers only, or neither (constants). */
export type ValueOrigin = 'activation' | 'weight' | 'constant';

const ACTIVATION = 0;
const WEIGHT = 1;
const CONSTANT = 2;
const ORIGIN_NAMES: readonly ValueOrigin[] = ['activation', 'weight', 'constant'];

/** Id of an omitted optional input (''). */
export const NO_VALUE = -1;

export class ValueIndex {
  /** Names to ids: the inference's own table when it gave ids (graphOrderOf), else built here. */
  private readonly ids: Pick<ValueTable, 'idOf'> | Map<string, number>;
  private readonly table: ValueTable | undefined;
  /** Name of each id; ids below `initializerCount` are the initializers. */
  readonly names: readonly string[];
  readonly initializerCount: number;
  /** Position in `order` of each value's producer (the last, as a map would keep); -1: none. */
  private producerAt: number[] = [];
  private origins: number[] = [];
  /** Consumers of each value (a node reading it twice counts once) and the first one's position. */
  private consumerCount: number[] = [];
  private firstConsumerAt: number[] = [];
  /** Each node's input and output ids, node after node: node i's are [start[i], start[i + 1]). */
  private readonly inputIds: number[] = [];
  private readonly inputStart: number[] = [0];
  private readonly outputIds: number[] = [];
  private readonly outputStart: number[] = [0];
  /** Filled in as asked (pre-sized: writes into holes would turn the array into a hash table). */
  private readonly infos: (TensorInfo | undefined)[];

  constructor(private readonly inferred: InferredModel) {
    const shared = sharedIds(inferred);
    if (shared !== undefined) {
      // The inference's ids: no name is hashed again, infos are read from its table.
      const { order, values } = shared;
      this.table = values;
      this.ids = values;
      this.names = values.names;
      this.initializerCount = inferred.initializerNames.size;
      const size = values.idCount;
      // Sized once (filled, so no holes): the slow path below grows them as it meets values.
      this.producerAt = new Array<number>(size).fill(-1);
      this.origins = new Array<number>(size).fill(ACTIVATION).fill(WEIGHT, 0, this.initializerCount);
      this.consumerCount = new Array<number>(size).fill(0);
      this.firstConsumerAt = new Array<number>(size).fill(-1);
      for (let position = 0; position < order.positions.length; position++) {
        const p = order.positions[position] ?? -1;
        const inputsFrom = this.inputIds.length;
        for (let k = order.inputStart[p] ?? 0; k < (order.inputStart[p + 1] ?? 0); k++) this.inputIds.push(order.inputIds[k] ?? NO_VALUE);
        this.inputStart.push(this.inputIds.length);
        const outputsFrom = this.outputIds.length;
        for (let k = order.outputStart[p] ?? 0; k < (order.outputStart[p + 1] ?? 0); k++) this.outputIds.push(order.outputIds[k] ?? NO_VALUE);
        this.outputStart.push(this.outputIds.length);
        this.countNode(position, inputsFrom, outputsFrom);
      }
      this.infos = [];
      return;
    }
    this.table = undefined;
    const ids = new Map<string, number>();
    this.ids = ids;
    this.names = [];
    for (const name of inferred.initializerNames) this.add(ids, name, WEIGHT);
    this.initializerCount = this.names.length;
    for (const [position, node] of inferred.order.entries()) this.addNode(ids, node, position);
    this.infos = new Array<TensorInfo | undefined>(this.names.length).fill(undefined);
    this.fillInfos(ids);
  }

  /**
   * Every value's info in one walk over the inference's map. It holds the initializers, then the
   * inputs, then each node's outputs in execution order, the order ids were given in: an entry
   * is matched to its id by comparing names, not hashing them; one out of step is looked up.
   */
  private fillInfos(ids: ReadonlyMap<string, number>): void {
    let initializer = 0;
    let output = 0;
    for (const [name, info] of this.inferred.values) {
      if (initializer < this.initializerCount && this.names[initializer] === name) {
        this.infos[initializer++] = info;
        continue;
      }
      while (output < this.outputIds.length && ((this.outputIds[output] ?? NO_VALUE) === NO_VALUE || this.infos[this.outputIds[output] ?? 0] !== undefined)) output++;
      const next = this.outputIds[output];
      if (next !== undefined && this.names[next] === name) {
        this.infos[next] = info;
        output++;
        continue;
      }
      const id = ids.get(name);
      if (id !== undefined) this.infos[id] = info;
    }
  }

  /** Number of ids. */
  get size(): number {
    return this.names.length;
  }

  /** A new id (a value's origin is data until its producer says otherwise). */
  private add(ids: Map<string, number>, name: string, origin = ACTIVATION): number {
    const id = this.names.length;
    ids.set(name, id);
    (this.names as string[]).push(name);
    this.producerAt.push(-1);
    this.origins.push(origin);
    this.consumerCount.push(0);
    this.firstConsumerAt.push(-1);
    return id;
  }

  private addNode(ids: Map<string, number>, node: Node, position: number): void {
    const inputsFrom = this.inputIds.length;
    // A value no node here produces: a graph input or an enclosing graph's value, i.e. data.
    for (const input of node.inputs) this.inputIds.push(input === '' ? NO_VALUE : (ids.get(input) ?? this.add(ids, input)));
    this.inputStart.push(this.inputIds.length);
    const outputsFrom = this.outputIds.length;
    for (const output of node.outputs) this.outputIds.push(output === '' ? NO_VALUE : (ids.get(output) ?? this.add(ids, output)));
    this.outputStart.push(this.outputIds.length);
    this.countNode(position, inputsFrom, outputsFrom);
  }

  /** Consumers, origin and producer of the values of the node at `position`, whose ids end the id lists. */
  private countNode(position: number, inputsFrom: number, outputsFrom: number): void {
    const inputsTo = this.inputIds.length;
    // A wide node (a Concat of thousands) tells repeated inputs apart with a set, not by scanning.
    const counted = inputsTo - inputsFrom > 16 ? new Set<number>() : undefined;
    let origin = CONSTANT;
    for (let k = inputsFrom; k < inputsTo; k++) {
      const id = this.inputIds[k] ?? NO_VALUE;
      if (id === NO_VALUE) continue;
      const seen = counted === undefined ? this.inputIds.indexOf(id, inputsFrom) < k : counted.has(id);
      counted?.add(id);
      if (!seen) {
        if (this.consumerCount[id] === 0) this.firstConsumerAt[id] = position;
        this.consumerCount[id] = (this.consumerCount[id] ?? 0) + 1;
      }
      const o = this.origins[id];
      if (origin !== ACTIVATION && (o === ACTIVATION || o === WEIGHT)) origin = o;
    }
    for (let k = outputsFrom; k < this.outputIds.length; k++) {
      const id = this.outputIds[k] ?? NO_VALUE;
      if (id === NO_VALUE) continue;
      // An initializer stays a weight even when a node also writes its name.
      if (id >= this.initializerCount) this.origins[id] = origin;
      this.producerAt[id] = position;
    }
  }

  /** The id of a value name, undefined when no node, initializer or input of this graph names it. */
  idOf(name: string): number | undefined {
    return this.ids instanceof Map ? this.ids.get(name) : this.ids.idOf(name);
  }

  /** Id of input `i` of the node at `position` in order (NO_VALUE for an omitted one). */
  inputId(position: number, i: number): number {
    return this.inputIds[(this.inputStart[position] ?? internalError(`no node at ${position}`)) + i] ?? NO_VALUE;
  }

  outputId(position: number, i: number): number {
    return this.outputIds[(this.outputStart[position] ?? internalError(`no node at ${position}`)) + i] ?? NO_VALUE;
  }

  /** Input ids of the node at `position`. */
  inputsOf(position: number): number[] {
    return this.inputIds.slice(this.inputStart[position], this.inputStart[position + 1]);
  }

  isInitializer(id: number): boolean {
    return id >= 0 && id < this.initializerCount;
  }

  producer(id: number): Node | undefined {
    const at = this.producerAt[id] ?? -1;
    return at < 0 ? undefined : this.inferred.order[at];
  }

  producerPosition(id: number): number {
    return this.producerAt[id] ?? -1;
  }

  soleConsumer(id: number): Node | undefined {
    return this.consumerCount[id] === 1 ? this.inferred.order[this.firstConsumerAt[id] ?? -1] : undefined;
  }

  origin(id: number): ValueOrigin {
    return ORIGIN_NAMES[this.origins[id] ?? ACTIVATION] ?? 'activation';
  }

  /** The inferred info of a value (one the walk did not meet is read from the inference's map). */
  info(id: number): TensorInfo | undefined {
    if (this.table !== undefined) return this.table.infoAt(id);
    let info = this.infos[id];
    if (info === undefined) {
      info = this.inferred.values.get(this.names[id] ?? '');
      this.infos[id] = info;
    }
    return info;
  }
}

/** The inference's order and value table, when its first ids are exactly the initializers (as inference gives them). */
function sharedIds(inferred: InferredModel): ReturnType<typeof graphOrderOf> {
  const shared = graphOrderOf(inferred);
  if (shared === undefined || shared.values.idCount < inferred.initializerNames.size) return undefined;
  let id = 0;
  for (const name of inferred.initializerNames) if (shared.values.names[id++] !== name) return undefined;
  return shared;
}

/** One index per inferred graph (lowering, its warnings and its vector fusions share it). */
const indexes = new WeakMap<InferredModel, ValueIndex>();

export function valueIndexOf(inferred: InferredModel): ValueIndex {
  let index = indexes.get(inferred);
  if (index === undefined) {
    index = new ValueIndex(inferred);
    indexes.set(inferred, index);
    const nodes = inferred.order;
    provideValueLinks(nodes, new IndexedValueLinks(index, nodes, () => builtValueLinks(nodes)));
  }
  return index;
}
