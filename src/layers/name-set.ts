/**
 * The set of layer names taken so far: open addressing over typed arrays (each slot a name's
 * place in a list, and its hash), by a hash computed here. A `Set` of 100k fresh names cost
 * ~110 ms of the 100k-node chain's lowering (its hash table grown again and again in the heap,
 * three words per entry that every collection traces); this one keeps a list of the names and
 * two off-heap arrays, sized for the expected count up front.
 */

/** 32-bit FNV-1a of the string's UTF-16 code units. */
export function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h | 0;
}

export class NameSet {
  private readonly names: string[] = [];
  /** Per slot: 1 + the name's index in `names` (0: empty), and the name's hash. */
  private slots: Int32Array;
  private hashes: Int32Array;

  /** `expected`: the count to size the table for (it grows past it). */
  constructor(expected = 8) {
    let capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    this.slots = new Int32Array(capacity);
    this.hashes = new Int32Array(capacity);
  }

  get size(): number {
    return this.names.length;
  }

  has(name: string): boolean {
    return this.slotOf(name, nameHash(name)) < 0;
  }

  /** Adds `name`; false when it is already in the set. */
  add(name: string): boolean {
    const hash = nameHash(name);
    const slot = this.slotOf(name, hash);
    if (slot < 0) return false;
    this.names.push(name);
    this.slots[slot] = this.names.length;
    this.hashes[slot] = hash;
    // At most half full: probe runs stay short.
    if (2 * this.names.length > this.slots.length) this.grow();
    return true;
  }

  /** The empty slot where `name` would go, or -1 when it is there already. */
  private slotOf(name: string, hash: number): number {
    const mask = this.slots.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const at = this.slots[i] ?? 0;
      if (at === 0) return i;
      if (this.hashes[i] === hash && this.names[at - 1] === name) return -1;
    }
  }

  private grow(): void {
    const { slots, hashes } = this;
    this.slots = new Int32Array(2 * slots.length);
    this.hashes = new Int32Array(2 * slots.length);
    const mask = this.slots.length - 1;
    for (let j = 0; j < slots.length; j++) {
      const at = slots[j] ?? 0;
      if (at === 0) continue;
      const hash = hashes[j] ?? 0;
      let i = hash & mask;
      while (this.slots[i] !== 0) i = (i + 1) & mask;
      this.slots[i] = at;
      this.hashes[i] = hash;
    }
  }
}
