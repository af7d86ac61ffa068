/**
 * The values of one inferred graph, each name given a dense id once: the topological order, the
 * rules' inputs and outputs and lowering's value index all read infos by id from arrays instead of
 * each hashing the same names into a map of its own (on a 100k-node graph, ~450k map operations).
 * As a ReadonlyMap it iterates in the order infos were first set, as the Map it replaces did.
 */
import type { TensorInfo } from './tensor-info.js';

/**
 * Per process: the hash's starting state, so which names share a slot cannot be known from the
 * file (a model crafted to collide would otherwise make interning quadratic).
 */
const HASH_SEED = (Math.random() * 0x100000000) | 0;

/** FNV-1a of a string's UTF-16 code units from a random basis, then murmur3's finalizer (a slot's low bits depend on every bit). */
export function nameHash(name: string): number {
  let h = HASH_SEED ^ 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * The slot where a hash's probe starts in a table of `slotCount` slots: the hash's bits scaled to
 * the count (not masked), so a table need not be a power of two: reserved for 150k names it is
 * 300k slots (1.2 MB, at most half full) instead of the next power of two's 2 MB, each first
 * touched page of which costs (~4 ms a MB here).
 */
function homeSlot(hash: number, slotCount: number): number {
  // Below slotCount: (2^32 - 1) x slotCount / 2^32 is, and a double rounds it less than its distance to slotCount.
  return Math.floor(((hash >>> 0) * slotCount) / 4294967296);
}

/** Slots of a name index with no id. */
const EMPTY_SLOT = -1;
/**
 * Probes of one lookup past which the index gives up its table for a Map: a table at most half
 * full with a fair hash needs a handful; a long run means the names collide (by chance or by
 * design), and a Map's own seeded hashing keeps interning linear from then on.
 */
const MAX_PROBES = 64;

/**
 * Names -> dense ids: an open-addressing table of ids (an Int32Array, linear probing, at most half
 * full, any size) over the names and their hashes by id. On a 100k-node graph a Map<string, number> of its
 * ~150k names cost ~60% more to build (its entries, rehashed at each doubling, are objects' worth
 * of words each and cache misses apiece); a lookup costs the same. Exported for its tests.
 *
 * `reserve` makes room for the names ahead: growing the list of 150k names by `push` cost ~20 ms
 * (each doubling a fresh large array whose pages are first touched), one list of the final size ~8.
 */
export class NameIndex {
  /** Names by id; past `count`, room reserved (holes), cut off when the list is read whole. */
  private store: string[] = [];
  private count = 0;
  private hashes = new Int32Array(64);
  private slots = new Int32Array(128).fill(EMPTY_SLOT);
  /** Set once a probe ran past MAX_PROBES: every lookup from then on. */
  private byName: Map<string, number> | undefined;
  /** Slots visited by every lookup so far (its tests bound it). */
  probes = 0;

  constructor(private readonly hashOf: (name: string) => number = nameHash) {}

  /** Whether the index went over to a Map (colliding names). */
  get usesMap(): boolean {
    return this.byName !== undefined;
  }

  /** Number of names (ids run from 0 below it). */
  get size(): number {
    return this.count;
  }

  /** Every name by id (the reserved room let go: a list of exactly `size` names). */
  get names(): readonly string[] {
    if (this.store.length !== this.count) this.store.length = this.count;
    return this.store;
  }

  /** The name of id `id`, or undefined outside 0..size-1 (without cutting the reserved room). */
  nameAt(id: number): string | undefined {
    return id < this.count ? this.store[id] : undefined;
  }

  /** The id of `name`, or EMPTY_SLOT. */
  find(name: string): number {
    if (this.byName !== undefined) return this.byName.get(name) ?? EMPTY_SLOT;
    const hash = this.hashOf(name);
    const slots = this.slots;
    for (let slot = homeSlot(hash, slots.length), n = 0; ; slot = slot + 1 === slots.length ? 0 : slot + 1, n++) {
      const id = slots[slot] ?? EMPTY_SLOT;
      if (id === EMPTY_SLOT) {
        this.probes += n;
        return EMPTY_SLOT;
      }
      if (this.hashes[id] === hash && this.store[id] === name) {
        this.probes += n;
        return id;
      }
      if (n === MAX_PROBES) {
        this.probes += n;
        return this.toMap().get(name) ?? EMPTY_SLOT;
      }
    }
  }

  /** The id of `name`, given the next one if it has none yet. */
  intern(name: string): number {
    if (this.byName !== undefined) return this.internInMap(name);
    const hash = this.hashOf(name);
    const slots = this.slots;
    let slot = homeSlot(hash, slots.length);
    for (let n = 0; ; slot = slot + 1 === slots.length ? 0 : slot + 1, n++) {
      const id = slots[slot] ?? EMPTY_SLOT;
      if (id === EMPTY_SLOT) {
        this.probes += n;
        break;
      }
      if (this.hashes[id] === hash && this.store[id] === name) {
        this.probes += n;
        return id;
      }
      if (n === MAX_PROBES) {
        this.probes += n;
        this.toMap();
        return this.internInMap(name);
      }
    }
    const id = this.count;
    if (id === this.hashes.length) {
      const grown = new Int32Array(2 * id);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[id] = hash;
    this.append(name);
    slots[slot] = id;
    if (2 * this.count > slots.length) this.rehash(2 * slots.length);
    return id;
  }

  /** Room for `count` names in all, so interning up to them rehashes and grows no more. */
  reserve(count: number): void {
    if (count > this.store.length) {
      const grown = new Array<string>(count);
      for (let id = 0; id < this.count; id++) grown[id] = this.store[id] ?? '';
      this.store = grown;
    }
    if (this.byName !== undefined) return;
    if (count > this.hashes.length) {
      const grown = new Int32Array(count);
      grown.set(this.hashes.subarray(0, this.count));
      this.hashes = grown;
    }
    if (2 * count > this.slots.length) this.rehash(2 * count);
  }

  private append(name: string): void {
    if (this.count < this.store.length) this.store[this.count] = name;
    else this.store.push(name);
    this.count++;
  }

  private internInMap(name: string): number {
    const byName = this.byName ?? this.toMap();
    const known = byName.get(name);
    if (known !== undefined) return known;
    const id = this.count;
    byName.set(name, id);
    this.append(name);
    return id;
  }

  /** The table given up for a Map of the same ids (the slots and hashes are let go). */
  private toMap(): Map<string, number> {
    const byName = new Map<string, number>();
    for (let id = 0; id < this.count; id++) byName.set(this.store[id] ?? '', id);
    this.byName = byName;
    this.slots = new Int32Array(0);
    this.hashes = new Int32Array(0);
    return byName;
  }

  private rehash(slotCount: number): void {
    const slots = new Int32Array(slotCount).fill(EMPTY_SLOT);
    for (let id = 0; id < this.count; id++) {
      let slot = homeSlot(this.hashes[id] ?? 0, slotCount);
      while (slots[slot] !== EMPTY_SLOT) slot = slot + 1 === slotCount ? 0 : slot + 1;
      slots[slot] = id;
    }
    this.slots = slots;
  }
}

/**
 * Infos by id as codes into the list of the distinct infos given: values of one shape share one
 * info (inference gives a value the info of an equal input), so a 100k-node chain's 150k ids hold
 * three infos: an Int32Array of 600 KB, which the collector never scans and whose untouched pages
 * cost nothing, instead of a 1.2 MB list of pointers. Exported for its tests.
 */
export class InfoColumn {
  /** 0: no info; k: the k-th distinct info. */
  private codes: Int32Array;
  private readonly distinct: TensorInfo[];
  /** The last two infos coded (a chain alternates a few), so a repeated one needs no search. */
  private lastInfo: TensorInfo | undefined;
  private lastCode = 0;
  private previousInfo: TensorInfo | undefined;
  private previousCode = 0;

  constructor(length = 0, codes?: Int32Array, distinct?: TensorInfo[]) {
    this.codes = codes ?? new Int32Array(length);
    this.distinct = distinct ?? [];
  }

  /** Ids with room (an id past it has no info). */
  get length(): number {
    return this.codes.length;
  }

  /** Number of distinct infos held. */
  get distinctCount(): number {
    return this.distinct.length;
  }

  at(id: number): TensorInfo | undefined {
    const code = this.codes[id] ?? 0;
    return code === 0 ? undefined : this.distinct[code - 1];
  }

  has(id: number): boolean {
    return (this.codes[id] ?? 0) !== 0;
  }

  set(id: number, info: TensorInfo): void {
    if (id >= this.codes.length) this.reserve(Math.max(id + 1, 2 * this.codes.length));
    this.codes[id] = this.codeOf(info);
  }

  /** Room for ids below `length`. */
  reserve(length: number): void {
    if (length <= this.codes.length) return;
    const grown = new Int32Array(length);
    grown.set(this.codes);
    this.codes = grown;
  }

  /** The same ids with each distinct info passed through `change` once. */
  mapped(change: (info: TensorInfo) => TensorInfo): InfoColumn {
    return new InfoColumn(0, this.codes.slice(), this.distinct.map(change));
  }

  private codeOf(info: TensorInfo): number {
    if (info === this.lastInfo) return this.lastCode;
    if (info === this.previousInfo) {
      const code = this.previousCode;
      this.previousInfo = this.lastInfo;
      this.previousCode = this.lastCode;
      this.lastInfo = info;
      this.lastCode = code;
      return code;
    }
    this.distinct.push(info);
    this.previousInfo = this.lastInfo;
    this.previousCode = this.lastCode;
    this.lastInfo = info;
    this.lastCode = this.distinct.length;
    return this.lastCode;
  }
}

/**
 * Which ids have an info, in the order each was first set, shared by the tables of one id space.
 * While ids are first set in increasing order (a graph in file order: initializers, inputs, then
 * node outputs), id order is that order and no list is kept (~150k entries on a 100k-node graph,
 * ~20 ms to grow); the first id set out of order writes the list out.
 */
class SetOrder {
  ids: number[] | undefined;
  private lastId = -1;
  count = 0;

  /** Notes the first info given to `id`; `infos`: the table's infos before it (to write the list out). */
  add(id: number, infos: InfoColumn): void {
    this.count++;
    if (this.ids === undefined && id > this.lastId) {
      this.lastId = id;
      return;
    }
    (this.ids ?? this.writeOut(infos)).push(id);
  }

  /** The list of ids set so far (from then on every first set is pushed). */
  writeOut(infos: InfoColumn): number[] {
    if (this.ids !== undefined) return this.ids;
    const ids: number[] = [];
    for (let id = 0; id <= this.lastId; id++) if (infos.has(id)) ids.push(id);
    this.ids = ids;
    return ids;
  }

  /** Ids with an info, in first-set order; `infos` tells which (in id order mode). */
  *each(infos: InfoColumn): Generator<number> {
    if (this.ids !== undefined) {
      yield* this.ids;
      return;
    }
    for (let id = 0; id <= this.lastId; id++) if (infos.has(id)) yield id;
  }
}

export class ValueTable implements ReadonlyMap<string, TensorInfo> {
  private readonly index: NameIndex;
  /** Infos by id (room reserved with the names). */
  private readonly infos: InfoColumn;
  /** Ids with an info, in the order each was first set. */
  private readonly setOrder: SetOrder;

  /** Infos of names this table has no id for (a body's enclosing graphs: `over`). */
  private readonly outer: ReadonlyMap<string, TensorInfo> | undefined;

  constructor(from?: ValueTable, infos?: InfoColumn, outer?: ReadonlyMap<string, TensorInfo>) {
    this.index = from?.index ?? new NameIndex();
    this.setOrder = from?.setOrder ?? new SetOrder();
    this.infos = infos ?? new InfoColumn();
    this.outer = outer ?? from?.outer;
    // Tables sharing the order may set other ids: from here on it is a list, as each set pushes.
    if (from !== undefined) this.setOrder.writeOut(from.infos);
  }

  /** Name of each id, in the order names were interned. */
  get names(): readonly string[] {
    return this.index.names;
  }

  /** The name of `id` (undefined past the last id). */
  nameAt(id: number): string | undefined {
    return this.index.nameAt(id);
  }

  /**
   * A sub-graph's table seen with its enclosing graph's values: the same ids, an id without an
   * info of its own (an outer value the body reads) takes the outer one, and names without an id
   * are looked up there. Iteration stays this table's own values. (A shared id space: neither
   * table may intern names afterwards.)
   */
  over(outer: ReadonlyMap<string, TensorInfo>): ValueTable {
    const infos = new InfoColumn(this.idCount);
    for (let id = 0; id < this.idCount; id++) {
      const info = this.infos.at(id) ?? outer.get(this.index.nameAt(id) ?? '');
      if (info !== undefined) infos.set(id, info);
    }
    return new ValueTable(this, infos, outer);
  }

  /**
   * The same ids and order with every info passed through `change` (once for each distinct info:
   * values that shared one share its change). A shared id space: neither table may intern names
   * afterwards.
   */
  mapInfos(change: (info: TensorInfo) => TensorInfo): ValueTable {
    return new ValueTable(this, this.infos.mapped(change));
  }

  /** The id of `name`, given one if it has none yet. */
  intern(name: string): number {
    return this.index.intern(name);
  }

  /**
   * Room for `count` more names (an upper bound: a graph's node inputs and outputs), so the index
   * and the infos are built at their final size instead of grown at each doubling.
   */
  reserve(count: number): void {
    const total = this.idCount + count;
    this.index.reserve(total);
    this.infos.reserve(total);
  }

  /** Number of interned names (ids run from 0 below it), with or without an info. */
  get idCount(): number {
    return this.index.size;
  }

  idOf(name: string): number | undefined {
    const id = this.index.find(name);
    return id === EMPTY_SLOT ? undefined : id;
  }

  infoAt(id: number): TensorInfo | undefined {
    return this.infos.at(id);
  }

  setAt(id: number, info: TensorInfo): void {
    if (!this.infos.has(id)) this.setOrder.add(id, this.infos);
    this.infos.set(id, info);
  }

  set(name: string, info: TensorInfo): this {
    this.setAt(this.intern(name), info);
    return this;
  }

  get(name: string): TensorInfo | undefined {
    const id = this.index.find(name);
    return id === EMPTY_SLOT ? this.outer?.get(name) : this.infos.at(id);
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  get size(): number {
    return this.setOrder.count;
  }

  forEach(callback: (value: TensorInfo, key: string, map: ReadonlyMap<string, TensorInfo>) => void, thisArg?: unknown): void {
    for (const [name, info] of this) callback.call(thisArg, info, name, this);
  }

  *entries(): MapIterator<[string, TensorInfo]> {
    for (const id of this.setOrder.each(this.infos)) {
      const info = this.infos.at(id);
      const name = this.index.nameAt(id);
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

/**
 * The names of a table's first `size` ids as a set: the initializers, which inference interns
 * first (a 100k-node graph's 50k weights need no set of their own beside the table).
 */
export class FirstIdNames implements ReadonlySet<string> {
  constructor(
    private readonly table: ValueTable,
    readonly size: number,
  ) {}

  has(name: string): boolean {
    const id = this.table.idOf(name);
    return id !== undefined && id < this.size;
  }

  forEach(callback: (value: string, value2: string, set: ReadonlySet<string>) => void, thisArg?: unknown): void {
    for (const name of this) callback.call(thisArg, name, name, this);
  }

  *values(): SetIterator<string> {
    for (let id = 0; id < this.size; id++) yield this.table.nameAt(id) ?? '';
  }

  keys(): SetIterator<string> {
    return this.values();
  }

  *entries(): SetIterator<[string, string]> {
    for (const name of this.values()) yield [name, name];
  }

  [Symbol.iterator](): SetIterator<string> {
    return this.values();
  }
}
