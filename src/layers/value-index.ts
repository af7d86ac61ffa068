/**
 * Dense integer ids for the values one lowering reads, and what lowering asks of each value as
 * arrays by id: its producer, its consumers, where its data comes from (`ValueOrigin`) and its
 * inferred info. Built in one pass over the nodes in execution order; every later question is an
 * array read instead of a lookup in a map keyed by value name (on a 100k-node graph, lowering
 * asked ~1.2 M such lookups, each a cache miss in a large table).
 */
import { internalError } from '../errors.js';
import { builtValueLinks, provideValueLinks, type Node } from '../ir/graph.js';
import type { InferredModel } from '../shape/infer.js';
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
  private readonly ids = new Map<string, number>();
  /** Name of each id; ids below `initializerCount` are the initializers. */
  readonly names: string[] = [];
  readonly initializerCount: number;
  /** Position in `order` of each value's producer (the last, as a map would keep); -1: none. */
  private readonly producerAt: number[] = [];
  private readonly origins: number[] = [];
  /** Consumers of each value (a node reading it twice counts once) and the first one's position. */
  private readonly consumerCount: number[] = [];
  private readonly firstConsumerAt: number[] = [];
  /** Each node's input and output ids, node after node: node i's are [start[i], start[i + 1]). */
  private readonly inputIds: number[] = [];
  private readonly inputStart: number[] = [0];
  private readonly outputIds: number[] = [];
  private readonly outputStart: number[] = [0];
  /** Filled in as asked (pre-sized: writes into holes would turn the array into a hash table). */
  private readonly infos: (TensorInfo | undefined)[];

  constructor(private readonly inferred: InferredModel) {
    for (const name of inferred.initializerNames) this.add(name, WEIGHT);
    this.initializerCount = this.names.length;
    for (const [position, node] of inferred.order.entries()) this.addNode(node, position);
    this.infos = new Array<TensorInfo | undefined>(this.names.length).fill(undefined);
    this.fillInfos();
  }

  /**
   * Every value's info in one walk over the inference's map. It holds the initializers, then the
   * inputs, then each node's outputs in execution order, the order ids were given in: an entry
   * is matched to its id by comparing names, not hashing them; one out of step is looked up.
   */
  private fillInfos(): void {
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
      const id = this.ids.get(name);
      if (id !== undefined) this.infos[id] = info;
    }
  }

  /** Number of ids. */
  get size(): number {
    return this.names.length;
  }

  private add(name: string, origin: number): number {
    const id = this.names.length;
    this.ids.set(name, id);
    this.names.push(name);
    this.producerAt.push(-1);
    this.origins.push(origin);
    this.consumerCount.push(0);
    this.firstConsumerAt.push(-1);
    return id;
  }

  private addNode(node: Node, position: number): void {
    const from = this.inputIds.length;
    // A wide node (a Concat of thousands) tells repeated inputs apart with a set, not by scanning.
    const counted = node.inputs.length > 16 ? new Set<number>() : undefined;
    let origin = CONSTANT;
    for (const input of node.inputs) {
      if (input === '') {
        this.inputIds.push(NO_VALUE);
        continue;
      }
      // A value no node here produces: a graph input or an enclosing graph's value, i.e. data.
      const id = this.ids.get(input) ?? this.add(input, ACTIVATION);
      const seen = counted === undefined ? this.inputIds.includes(id, from) : counted.has(id);
      counted?.add(id);
      if (!seen) {
        if (this.consumerCount[id] === 0) this.firstConsumerAt[id] = position;
        this.consumerCount[id] = (this.consumerCount[id] ?? 0) + 1;
      }
      this.inputIds.push(id);
      const o = this.origins[id];
      if (origin !== ACTIVATION && (o === ACTIVATION || o === WEIGHT)) origin = o;
    }
    this.inputStart.push(this.inputIds.length);
    for (const output of node.outputs) {
      if (output === '') {
        this.outputIds.push(NO_VALUE);
        continue;
      }
      let id = this.ids.get(output);
      if (id === undefined) id = this.add(output, origin);
      // An initializer stays a weight even when a node also writes its name.
      else if (id >= this.initializerCount) this.origins[id] = origin;
      this.producerAt[id] = position;
      this.outputIds.push(id);
    }
    this.outputStart.push(this.outputIds.length);
  }

  /** The id of a value name, undefined when no node, initializer or input of this graph names it. */
  idOf(name: string): number | undefined {
    return this.ids.get(name);
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
    let info = this.infos[id];
    if (info === undefined) {
      info = this.inferred.values.get(this.names[id] ?? '');
      this.infos[id] = info;
    }
    return info;
  }
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
