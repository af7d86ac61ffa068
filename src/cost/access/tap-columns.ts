/**
 * A set of im2col columns, each with an ofmap-pixel range, and what they share: the real elements
 * of columns of one channel and class (tap-union.ts) less their distinct words. Columns are
 * bucketed by (channel, class) in linked lists, so only buckets with two columns or more are
 * counted; a checkpoint lets a search add and undo a few columns on top of a kept set
 * (wsis-stretch.ts). A column may come at most twice (two passes over the ifmap).
 */
import { indexOutOfRange } from '../../errors.js';
import type { ConvTapUnion } from './tap-union.js';

export class ColumnSet {
  private readonly channels: number;
  private readonly bucketStamp: Int32Array;
  private readonly bucketHead: Int32Array;
  private readonly bucketSize: Int32Array;
  /** Buckets with two columns or more, in the order they got their second. */
  private readonly sharedBuckets: Int32Array;
  private sharedCount = 0;
  private stamp = 0;
  private entries = 0;
  private entryTap = new Int32Array(64);
  private entryA = new Int32Array(64);
  private entryB = new Int32Array(64);
  private entryNext = new Int32Array(64);
  private entryBucket = new Int32Array(64);
  private keptEntries = 0;
  private keptShared = 0;

  constructor(
    private readonly union: ConvTapUnion,
    channels: number,
  ) {
    this.channels = channels;
    const buckets = channels * union.classCount;
    this.bucketStamp = new Int32Array(buckets);
    this.bucketHead = new Int32Array(buckets);
    this.bucketSize = new Int32Array(buckets);
    this.sharedBuckets = new Int32Array(buckets);
  }

  /** Buckets: one per (channel, class). */
  get bucketCount(): number {
    return this.bucketStamp.length;
  }

  /** Empties the set. */
  clear(): void {
    this.stamp++;
    this.entries = 0;
    this.sharedCount = 0;
    this.keptEntries = 0;
    this.keptShared = 0;
  }

  /** Adds column k's ofmap pixels [a, b) (b > a). */
  add(k: number, a: number, b: number): void {
    const bucket = this.union.bucketOf(k);
    if (this.entries === this.entryTap.length) this.growEntries();
    const e = this.entries++;
    this.entryBucket[e] = bucket;
    this.entryTap[e] = Math.floor(k / this.channels);
    this.entryA[e] = a;
    this.entryB[e] = b;
    if (this.bucketStamp[bucket] !== this.stamp) {
      this.bucketStamp[bucket] = this.stamp;
      this.bucketSize[bucket] = 0;
      this.bucketHead[bucket] = -1;
    }
    this.entryNext[e] = this.bucketHead[bucket] ?? indexOutOfRange(bucket);
    this.bucketHead[bucket] = e;
    const size = (this.bucketSize[bucket] ?? indexOutOfRange(bucket)) + 1;
    this.bucketSize[bucket] = size;
    if (size === 2) this.sharedBuckets[this.sharedCount++] = bucket;
  }

  /** Real elements of the set's columns less its distinct words (0 when no bucket has two columns). */
  sharedWords(): number {
    let shared = 0;
    for (let i = 0; i < this.sharedCount; i++) shared += this.bucketShared(this.sharedBuckets[i] ?? indexOutOfRange(i));
    return shared;
  }

  /** sharedWords() restricted to buckets[0, count) (distinct buckets). */
  sharedWordsIn(buckets: Int32Array, count: number): number {
    let shared = 0;
    for (let i = 0; i < count; i++) {
      const bucket = buckets[i] ?? indexOutOfRange(i);
      if (this.bucketStamp[bucket] === this.stamp && (this.bucketSize[bucket] ?? 0) >= 2) shared += this.bucketShared(bucket);
    }
    return shared;
  }

  /** Marks the columns added so far as kept: rollback() undoes only later ones. */
  checkpoint(): void {
    this.keptEntries = this.entries;
    this.keptShared = this.sharedCount;
  }

  rollback(): void {
    for (let e = this.entries - 1; e >= this.keptEntries; e--) {
      const bucket = this.entryBucket[e] ?? indexOutOfRange(e);
      this.bucketHead[bucket] = this.entryNext[e] ?? indexOutOfRange(e);
      this.bucketSize[bucket] = (this.bucketSize[bucket] ?? indexOutOfRange(bucket)) - 1;
    }
    this.entries = this.keptEntries;
    this.sharedCount = this.keptShared;
  }

  private bucketShared(bucket: number): number {
    let n = 0;
    for (let e = this.bucketHead[bucket] ?? indexOutOfRange(bucket); e >= 0; e = this.entryNext[e] ?? indexOutOfRange(e)) {
      this.union.setShape(n++, this.entryTap[e] ?? indexOutOfRange(e), this.entryA[e] ?? indexOutOfRange(e), this.entryB[e] ?? indexOutOfRange(e));
    }
    return this.union.sharedOfShapes(bucket % this.union.classCount, n);
  }

  private growEntries(): void {
    const size = 2 * this.entryTap.length;
    const grow = (old: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> => {
      const next = new Int32Array(size);
      next.set(old);
      return next;
    };
    this.entryTap = grow(this.entryTap);
    this.entryA = grow(this.entryA);
    this.entryB = grow(this.entryB);
    this.entryNext = grow(this.entryNext);
    this.entryBucket = grow(this.entryBucket);
  }
}
