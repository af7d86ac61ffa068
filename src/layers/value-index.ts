/**
 * What lowering asks of each value of an inferred graph, as typed arrays by the value ids
 * inference gave (`InferredModel.values`, `InferredModel.nodeValues`): its producer, its
 * consumers, where its data comes from (`ValueOrigin`) and its inferred info. Built in one pass
 * over the nodes in execution order; every later question is an array read instead of a lookup
 * in a map keyed by value name (on a 100k-node graph, lowering asked ~1.2 M such lookups, each a
 * cache miss in a large table). One index per inferred graph, made by lowering and passed to
 * whoever reads it (the weight tracer, vector fusions, node contexts).
 */
import { internalError } from '../errors.js';
import { valueLinks, type Node, type ValueLinks } from '../ir/graph.js';
import type { InferredModel } from '../shape/infer.js';
import type { TensorInfo } from '../shape/tensor-info.js';
import { NO_VALUE_ID } from '../shape/topo.js';
import { IndexedValueLinks } from './value-links-view.js';

/** Where a value's data comes from: graph inputs, initializers only, or neither (constants). */
export type ValueOrigin = 'activation' | 'weight' | 'constant';

const ACTIVATION = 0;
const WEIGHT = 1;
const CONSTANT = 2;
const ORIGIN_NAMES: readonly ValueOrigin[] = ['activation', 'weight', 'constant'];

/** Id of an omitted optional input (''). */
export const NO_VALUE = NO_VALUE_ID;

export class ValueIndex {
  /** Name of each id. */
  readonly names: readonly string[];
  /** 1 for the ids of initializers (and of what the graph counts as such: a body's outer weight Constants). */
  private readonly initializer: Uint8Array;
  /** Position in `order` of each value's producer (the last, as a map would keep); -1: none. */
  private readonly producerAt: Int32Array;
  private readonly origins: Uint8Array;
  /** Consumers of each value (a node reading it twice counts once) and the first one's position. */
  private readonly consumerCount: Int32Array;
  private readonly firstConsumerAt: Int32Array;
  private readonly inputIds: Int32Array;
  private readonly inputStart: Int32Array;
  private readonly outputIds: Int32Array;
  private readonly outputStart: Int32Array;
  /** Producer and consumers by value name, answered from this index. */
  readonly links: ValueLinks;

  constructor(private readonly inferred: InferredModel) {
    const { values, nodeValues, order } = inferred;
    this.names = values.names;
    ({ inputIds: this.inputIds, inputStart: this.inputStart, outputIds: this.outputIds, outputStart: this.outputStart } = nodeValues);
    const size = values.idCount;
    this.initializer = new Uint8Array(size);
    this.origins = new Uint8Array(size); // ACTIVATION
    let id = 0;
    for (const name of inferred.initializerNames) {
      // Inference gives the initializers the first ids, in order: compare names before hashing one.
      const own = this.names[id] === name ? id : values.idOf(name);
      id++;
      if (own === undefined) continue; // a body's outer initializer it does not read
      this.initializer[own] = 1;
      this.origins[own] = WEIGHT;
    }
    this.producerAt = new Int32Array(size).fill(-1);
    this.consumerCount = new Int32Array(size);
    this.firstConsumerAt = new Int32Array(size).fill(-1);
    for (let position = 0; position < order.length; position++) this.countNode(position);
    this.links = new IndexedValueLinks(this, order, () => valueLinks(order));
  }

  /** Consumers, origin and producer of the values of the node at `position`. */
  private countNode(position: number): void {
    const inputsFrom = this.inputStart[position] ?? 0;
    const inputsTo = this.inputStart[position + 1] ?? 0;
    // A wide node (a Concat of thousands) tells repeated inputs apart with a set, not by scanning.
    const counted = inputsTo - inputsFrom > 16 ? new Set<number>() : undefined;
    let origin = CONSTANT;
    for (let k = inputsFrom; k < inputsTo; k++) {
      const id = this.inputIds[k] ?? NO_VALUE;
      if (id === NO_VALUE) continue;
      const seen = counted === undefined ? this.readBefore(id, inputsFrom, k) : counted.has(id);
      counted?.add(id);
      if (!seen) {
        if (this.consumerCount[id] === 0) this.firstConsumerAt[id] = position;
        this.consumerCount[id] = (this.consumerCount[id] ?? 0) + 1;
      }
      const o = this.origins[id];
      if (origin !== ACTIVATION && (o === ACTIVATION || o === WEIGHT)) origin = o;
    }
    const outputsTo = this.outputStart[position + 1] ?? 0;
    for (let k = this.outputStart[position] ?? 0; k < outputsTo; k++) {
      const id = this.outputIds[k] ?? NO_VALUE;
      if (id === NO_VALUE) continue;
      // An initializer stays a weight even when a node also writes its name.
      if (this.initializer[id] === 0) this.origins[id] = origin;
      this.producerAt[id] = position;
    }
  }

  /** Whether input ids [from, to) hold `id`. */
  private readBefore(id: number, from: number, to: number): boolean {
    for (let k = from; k < to; k++) if (this.inputIds[k] === id) return true;
    return false;
  }

  /** Number of ids. */
  get size(): number {
    return this.names.length;
  }

  /** The id of a value name, undefined when no node, initializer or input of this graph names it. */
  idOf(name: string): number | undefined {
    return this.inferred.values.idOf(name);
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
    return Array.from(this.inputIds.subarray(this.inputStart[position], this.inputStart[position + 1]));
  }

  isInitializer(id: number): boolean {
    return id >= 0 && this.initializer[id] === 1;
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

  /** The inferred info of a value. */
  info(id: number): TensorInfo | undefined {
    return this.inferred.values.infoAt(id);
  }
}
