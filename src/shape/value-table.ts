/**
 * The values of one inferred graph, each name given a dense id once: the topological order, the
 * rules' inputs and outputs and lowering's value index all read infos by id from arrays instead of
 * each hashing the same names into a map of its own (on a 100k-node graph, ~450k map operations).
 * As a ReadonlyMap it iterates in the order infos were first set, as the Map it replaces did.
 */
import type { TensorInfo } from './tensor-info.js';

export class ValueTable implements ReadonlyMap<string, TensorInfo> {
  private readonly ids: Map<string, number>;
  /** Name of each id, in the order names were interned. */
  readonly names: readonly string[];
  private readonly infos: (TensorInfo | undefined)[];
  /** Ids with an info, in the order each was first set. */
  private readonly setOrder: number[];

  /** Infos of names this table has no id for (a body's enclosing graphs: `over`). */
  private readonly outer: ReadonlyMap<string, TensorInfo> | undefined;

  constructor(from?: ValueTable, infos?: (TensorInfo | undefined)[], outer?: ReadonlyMap<string, TensorInfo>) {
    this.ids = from?.ids ?? new Map();
    this.names = from?.names ?? [];
    this.setOrder = from?.setOrder ?? [];
    this.infos = infos ?? [];
    this.outer = outer ?? from?.outer;
  }

  /**
   * A sub-graph's table seen with its enclosing graph's values: the same ids, an id without an
   * info of its own (an outer value the body reads) takes the outer one, and names without an id
   * are looked up there. Iteration stays this table's own values. (A shared id space: neither
   * table may intern names afterwards.)
   */
  over(outer: ReadonlyMap<string, TensorInfo>): ValueTable {
    return new ValueTable(this, this.infos.map((info, id) => info ?? outer.get(this.names[id] ?? '')), outer);
  }

  /** The same ids and order with every info passed through `change` (a shared id space: neither table may intern names afterwards). */
  mapInfos(change: (info: TensorInfo) => TensorInfo): ValueTable {
    return new ValueTable(this, this.infos.map((info) => (info === undefined ? undefined : change(info))));
  }

  /** The id of `name`, given one if it has none yet. */
  intern(name: string): number {
    const known = this.ids.get(name);
    if (known !== undefined) return known;
    const id = this.names.length;
    this.ids.set(name, id);
    (this.names as string[]).push(name);
    this.infos.push(undefined);
    return id;
  }

  /**
   * `intern` for a name that is most likely new (a node's output, an initializer): one map
   * operation instead of a lookup and an insert, the two costing alike on a large table (each a
   * few cache misses). A name it already had is found again in `names` (a scan), once: from then
   * on this table interns as `intern` does, so a file of many such names stays linear.
   */
  internNew(name: string): number {
    if (this.reusedName) return this.intern(name);
    const id = this.names.length;
    const before = this.ids.size;
    this.ids.set(name, id);
    if (this.ids.size !== before) {
      (this.names as string[]).push(name);
      this.infos.push(undefined);
      return id;
    }
    this.reusedName = true;
    const known = this.names.indexOf(name);
    this.ids.set(name, known);
    return known;
  }

  /** Set once `internNew` met a name it had. */
  private reusedName = false;

  /** Number of interned names (ids run from 0 below it), with or without an info. */
  get idCount(): number {
    return this.names.length;
  }

  idOf(name: string): number | undefined {
    return this.ids.get(name);
  }

  infoAt(id: number): TensorInfo | undefined {
    return this.infos[id];
  }

  setAt(id: number, info: TensorInfo): void {
    if (this.infos[id] === undefined) this.setOrder.push(id);
    this.infos[id] = info;
  }

  set(name: string, info: TensorInfo): this {
    this.setAt(this.intern(name), info);
    return this;
  }

  get(name: string): TensorInfo | undefined {
    const id = this.ids.get(name);
    return id === undefined ? this.outer?.get(name) : this.infos[id];
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  get size(): number {
    return this.setOrder.length;
  }

  forEach(callback: (value: TensorInfo, key: string, map: ReadonlyMap<string, TensorInfo>) => void, thisArg?: unknown): void {
    for (const [name, info] of this) callback.call(thisArg, info, name, this);
  }

  *entries(): MapIterator<[string, TensorInfo]> {
    for (const id of this.setOrder) {
      const info = this.infos[id];
      const name = this.names[id];
      if (info !== undefined && name !== undefined) yield [name, info];
    }
  }

  *keys(): MapIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): MapIterator<TensorInfo> {
    for (const [, info] of this.entries()) yield info;
  }

  [Symbol.iterator](): MapIterator<[string, TensorInfo]> {
    return this.entries();
  }
}
