/**
 * A layer's `tensorParams` (tensor -> elements): its one to three entries in two arrays. A `Map`
 * holding them costs ~600 bytes per layer in hash table (30 MB on a 100k-node graph); lookups
 * here scan a handful of names.
 */
export class TensorParams implements ReadonlyMap<string, number> {
  private readonly names: readonly string[];
  private readonly counts: readonly number[];

  /** Entries in the order given; a name given twice keeps its first place and its last count, as `Map.set` does. */
  constructor(entries: Iterable<readonly [string, number]>);
  /** Distinct names and their counts, kept as given (no copies: neither list may change afterwards). */
  constructor(names: readonly string[], counts: readonly number[]);
  constructor(entries: Iterable<readonly [string, number]> | readonly string[], distinctCounts?: readonly number[]) {
    if (distinctCounts !== undefined) {
      this.names = entries as readonly string[];
      this.counts = distinctCounts;
      return;
    }
    const names: string[] = [];
    const counts: number[] = [];
    for (const [name, count] of entries as Iterable<readonly [string, number]>) {
      const i = names.indexOf(name);
      if (i >= 0) counts[i] = count;
      else {
        names.push(name);
        counts.push(count);
      }
    }
    // Copies at their exact length: a pushed-to array keeps room for 17 elements.
    this.names = names.slice();
    this.counts = counts.slice();
  }

  get size(): number {
    return this.names.length;
  }

  get(name: string): number | undefined {
    const i = this.names.indexOf(name);
    return i < 0 ? undefined : this.counts[i];
  }

  has(name: string): boolean {
    return this.names.includes(name);
  }

  *entries(): MapIterator<[string, number]> {
    for (let i = 0; i < this.names.length; i++) yield [this.names[i] ?? '', this.counts[i] ?? 0];
  }

  keys(): MapIterator<string> {
    return this.names.values();
  }

  values(): MapIterator<number> {
    return this.counts.values();
  }

  [Symbol.iterator](): MapIterator<[string, number]> {
    return this.entries();
  }

  forEach(callback: (value: number, key: string, map: ReadonlyMap<string, number>) => void, thisArg?: unknown): void {
    for (const [name, count] of this.entries()) callback.call(thisArg, count, name, this);
  }

  /** Serialised like a Map (`{}`), so a layer's JSON does not change with the representation. */
  toJSON(): Record<string, never> {
    return {};
  }
}
