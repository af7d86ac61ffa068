/**
 * A graph's `ValueLinks` (ir/graph.ts) answered from its value index (`ValueIndex.links`):
 * producer and consumers by name without building two more maps over every value (vector fusions
 * and the plan's initializer checks ask for them). Lookups go through the inference's one name ->
 * id map; iterating the views builds the maps `valueLinks` would hold.
 */
import type { Node, ValueLinks } from '../ir/graph.js';
import type { ValueIndex } from './value-index.js';

/** A read-only map whose lookups are a function; iteration uses the full map, built when first asked. */
class LookupView<V> implements ReadonlyMap<string, V> {
  private full: ReadonlyMap<string, V> | undefined;
  constructor(
    private readonly lookup: (key: string) => V | undefined,
    private readonly build: () => ReadonlyMap<string, V>,
  ) {}

  private map(): ReadonlyMap<string, V> {
    this.full ??= this.build();
    return this.full;
  }

  get(key: string): V | undefined {
    return this.lookup(key);
  }

  has(key: string): boolean {
    return this.lookup(key) !== undefined;
  }

  get size(): number {
    return this.map().size;
  }

  entries(): MapIterator<[string, V]> {
    return this.map().entries();
  }

  keys(): MapIterator<string> {
    return this.map().keys();
  }

  values(): MapIterator<V> {
    return this.map().values();
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.map().entries();
  }

  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.map()) callback.call(thisArg, value, key, this);
  }
}

export class IndexedValueLinks implements ValueLinks {
  readonly producer: ReadonlyMap<string, Node>;
  readonly consumers: ReadonlyMap<string, readonly Node[]>;
  /** Consumers of each value id, built when first asked. */
  private lists: (Node[] | undefined)[] | undefined;

  constructor(private readonly index: ValueIndex, nodes: readonly Node[], builtLinks: () => ValueLinks) {
    this.producer = new LookupView(
      (name) => {
        const id = name === '' ? undefined : index.idOf(name);
        return id === undefined ? undefined : index.producer(id);
      },
      () => builtLinks().producer,
    );
    this.consumers = new LookupView(
      (name) => {
        const id = name === '' ? undefined : index.idOf(name);
        return id === undefined ? undefined : this.consumerLists(nodes)[id];
      },
      () => builtLinks().consumers,
    );
  }

  private consumerLists(nodes: readonly Node[]): (Node[] | undefined)[] {
    if (this.lists !== undefined) return this.lists;
    const lists = new Array<Node[] | undefined>(this.index.size).fill(undefined);
    nodes.forEach((node, position) => {
      // A value read twice by one node lists the node once (a wide Concat dedupes with a set).
      const all = this.index.inputsOf(position);
      const ids = all.length <= 16 ? all.filter((id, i) => id >= 0 && all.indexOf(id) === i) : [...new Set(all)].filter((id) => id >= 0);
      for (const id of ids) {
        const list = lists[id];
        if (list === undefined) lists[id] = [node];
        else list.push(node);
      }
    });
    this.lists = lists;
    return lists;
  }
}
