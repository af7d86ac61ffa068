/**
 * Distinct ifmap words of a stretch (from, to] of a ws or is conv's ifmap demand stream, in closed
 * form (walk-calc-wsis.ts searches with it). Inside a stretch the elements of im2col column k form
 * at most two ofmap-pixel ranges; tap-union.ts counts a channel's words from its columns' ranges.
 *
 * ws: fold g streams row-fold tile fr = g % RF: columns k = fr*R + c, line t, array row c reading
 *     ofmap pixel m = t - R - c (skewed), columns in order on a line. The row-fold tiles are
 *     streamed once per column fold, so a stretch holds a column at most twice (an epoch never
 *     spans more than a pass: a pass holds every word). Two columns read a common word only if
 *     they share the channel, so the stretch's words are its real elements less, for each channel
 *     read by several of its columns, what those columns share (tap-columns.ts). Probes inside
 *     the closing fold keep the other folds' part and recount only the fold's buckets.
 * is: fold g = fc*RF + fr loads columns k = fr*R + R-1-t on lines t < R (bottom row first), each
 *     line the ofmap pixels [fc*Cols, fc*Cols + Cols) in order. Every element is read once, and
 *     a column's pixels in a stretch are one range (its m-blocks are consecutive). Every channel
 *     is read by many columns, so words are counted per channel; probes inside a fold recount
 *     only the channels of its columns.
 */
import { indexOutOfRange } from '../../errors.js';
import { usedInFold } from '../systolic/mapping.js';
import { ColumnSet } from './tap-columns.js';
import { ConvTapUnion, TapRanges } from './tap-union.js';
import type { WalkContext } from './walk-context.js';

/** A demand position: fold g (in demand order), line t of the fold, array row/column c on it. */
export interface Position {
  g: number;
  t: number;
  c: number;
}

/** A line or column past every other (a fold's end). */
export const END = Number.MAX_SAFE_INTEGER;

export interface StretchWords {
  /** Distinct words of the stretch (from, to]. */
  words(from: Position, to: Position): number;
  /** The same, for probes ending inside fold `to.g` once `enterFold(from, to.g)` has been called. */
  wordsInFold(from: Position, to: Position): number;
  enterFold(from: Position, g: number): void;
}

export function stretchWords(ctx: WalkContext): StretchWords {
  return ctx.dataflow === 'ws' ? new WsStretch(ctx) : new IsStretch(ctx);
}

class WsStretch implements StretchWords {
  private readonly R: number;
  private readonly RF: number;
  private readonly M: number;
  private readonly K: number;
  private readonly channels: number;
  private readonly union: ConvTapUnion;
  private readonly columns: ColumnSet;
  /** Real elements of each row-fold tile. */
  private readonly tileWords: Float64Array;

  constructor(private readonly ctx: WalkContext) {
    this.R = ctx.array.rows;
    this.RF = ctx.rowFolds;
    ({ m: this.M, k: this.K } = ctx.operands.geometry.gemm);
    this.channels = ctx.operands.geometry.conv.channels;
    this.union = new ConvTapUnion(ctx.operands.geometry);
    this.columns = new ColumnSet(this.union, this.channels);
    const buckets = this.columns.bucketCount;
    this.foldBuckets = new Int32Array(buckets);
    this.bucketSeen = new Int32Array(buckets);
    this.tileWords = new Float64Array(this.RF);
    for (let fr = 0; fr < this.RF; fr++) {
      let words = 0;
      for (let k = fr * this.R; k < Math.min(this.K, fr * this.R + this.R); k++) words += this.union.validElements(k, 0, this.M);
      this.tileWords[fr] = words;
    }
  }

  /** Inside fold g only its own columns move: the others' elements and shared words are kept. */
  private inFold = false;
  private keptElements = 0;
  private keptShared = 0;
  private readonly foldBuckets: Int32Array;
  private foldBucketCount = 0;
  private readonly bucketSeen: Int32Array;
  private foldStamp = 0;

  enterFold(from: Position, g: number): void {
    const { R, RF, K, M } = this;
    let columns = 0;
    for (let f = from.g; f <= g; f++) columns += usedInFold(K, R, f % RF);
    this.inFold = g > from.g && columns > this.channels; // else words() is as cheap
    if (!this.inFold) return;
    this.keptElements = 0;
    this.columns.clear();
    for (let f = from.g; f < g; f++) {
      const fr = f % RF;
      if (f !== from.g) this.keptElements += this.tileWords[fr] ?? indexOutOfRange(fr);
      const used = usedInFold(K, R, fr);
      for (let c = 0; c < used; c++) {
        const a = this.rangeStart(from, f, c);
        if (f === from.g) this.keptElements += this.union.validElements(fr * R + c, a, M);
        if (M > a) this.columns.add(fr * R + c, a, M);
      }
    }
    // The buckets fold g's columns fall in: their shared words are counted per probe.
    const fr = g % RF;
    const stamp = ++this.foldStamp;
    this.foldBucketCount = 0;
    for (let k = fr * R; k < fr * R + usedInFold(K, R, fr); k++) {
      const bucket = this.union.bucketOf(k);
      if (this.bucketSeen[bucket] === stamp) continue;
      this.bucketSeen[bucket] = stamp;
      this.foldBuckets[this.foldBucketCount++] = bucket;
    }
    this.keptShared = this.columns.sharedWords() - this.columns.sharedWordsIn(this.foldBuckets, this.foldBucketCount);
    this.columns.checkpoint();
  }

  wordsInFold(from: Position, to: Position): number {
    if (!this.inFold) return this.words(from, to);
    const { R, K } = this;
    const g = to.g;
    const fr = g % this.RF;
    const used = usedInFold(K, R, fr);
    let total = this.keptElements - this.keptShared;
    for (let c = 0; c < used; c++) {
      const a = this.rangeStart(from, g, c);
      const b = this.rangeEnd(to, g, c);
      if (b <= a) continue;
      total += this.union.validElements(fr * R + c, a, b);
      this.columns.add(fr * R + c, a, b);
    }
    total -= this.columns.sharedWordsIn(this.foldBuckets, this.foldBucketCount);
    this.columns.rollback();
    return total;
  }

  words(from: Position, to: Position): number {
    const { R, RF, K, channels } = this;
    const last = Math.min(to.g, this.ctx.rowFolds * this.ctx.colFolds - 1);
    if (last - from.g > RF) throw new Error('wsis-stretch: a ws stretch spans more than a pass');
    let total = 0;
    let columns = 0;
    for (let g = from.g; g <= last; g++) {
      const fr = g % RF;
      const used = usedInFold(K, R, fr);
      columns += used;
      if (g !== from.g && g !== to.g) {
        total += this.tileWords[fr] ?? indexOutOfRange(fr);
        continue;
      }
      for (let c = 0; c < used; c++) {
        total += this.union.validElements(fr * R + c, this.rangeStart(from, g, c), this.rangeEnd(to, g, c));
      }
    }
    if (columns <= channels) return total; // no channel read twice
    // Channels read by several columns of the stretch: what those columns share.
    this.columns.clear();
    for (let g = from.g; g <= last; g++) {
      const fr = g % RF;
      const used = usedInFold(K, R, fr);
      for (let c = 0; c < used; c++) {
        const a = this.rangeStart(from, g, c);
        const b = this.rangeEnd(to, g, c);
        if (b > a) this.columns.add(fr * R + c, a, b);
      }
    }
    return total - this.columns.sharedWords();
  }

  /** Column c of fold g in a stretch from `from`: its first ofmap pixel (past from's line and column). */
  private rangeStart(from: Position, g: number, c: number): number {
    return g === from.g ? Math.min(this.M, Math.max(0, from.t - this.R - c + (c > from.c ? 0 : 1))) : 0;
  }

  /** Column c of fold g in a stretch to `to`: the end of its ofmap pixels (through to's line and column). */
  private rangeEnd(to: Position, g: number, c: number): number {
    return g === to.g ? Math.min(this.M, Math.max(0, to.t - this.R - c + (c > to.c ? 0 : 1))) : this.M;
  }
}

/** is: every channel is read by many columns of a stretch; the words are counted per channel. */
class IsStretch implements StretchWords {
  private readonly K: number;
  private readonly channels: number;
  private readonly union: ConvTapUnion;
  private readonly ranges: TapRanges;
  /** (row fold, line) of each column k, increasing in demand order within an m-block. */
  private readonly order: Float64Array;
  /** Channels of the columns of the fold entered (those whose ranges move inside it). */
  private readonly touched: Uint8Array;
  private readonly touchedList: Int32Array;
  private touchedCount = 0;
  private kLo = 0;
  private kHi = 0;
  /** Words of the other channels, counted on the first probe inside the fold. */
  private untouchedWords = -1;

  constructor(private readonly ctx: WalkContext) {
    const R = ctx.array.rows;
    this.K = ctx.operands.geometry.gemm.k;
    this.channels = ctx.operands.geometry.conv.channels;
    this.union = new ConvTapUnion(ctx.operands.geometry);
    this.ranges = new TapRanges(this.K);
    this.order = new Float64Array(this.K);
    for (let k = 0; k < this.K; k++) {
      const fr = Math.floor(k / R);
      this.order[k] = fr * R + (R - 1 - (k - fr * R));
    }
    this.touched = new Uint8Array(this.channels);
    this.touchedList = new Int32Array(this.channels);
  }

  words(from: Position, to: Position): number {
    this.fill(from, to, 0, this.K);
    let total = 0;
    for (let ch = 0; ch < this.channels; ch++) total += this.union.channelWords(ch, this.ranges);
    return total;
  }

  enterFold(_from: Position, g: number): void {
    const R = this.ctx.array.rows;
    this.kLo = (g % this.ctx.rowFolds) * R;
    this.kHi = Math.min(this.K, this.kLo + R);
    this.touched.fill(0);
    this.touchedCount = 0;
    for (let k = this.kLo; k < this.kHi && this.touchedCount < this.channels; k++) {
      const ch = k % this.channels;
      if (this.touched[ch] === 0) {
        this.touched[ch] = 1;
        this.touchedList[this.touchedCount++] = ch;
      }
    }
    this.untouchedWords = -1;
  }

  wordsInFold(from: Position, to: Position): number {
    if (this.untouchedWords < 0) {
      // The other columns' ranges do not depend on where in the fold the stretch ends.
      this.fill(from, to, 0, this.K);
      this.untouchedWords = 0;
      for (let ch = 0; ch < this.channels; ch++) {
        if (this.touched[ch] === 0) this.untouchedWords += this.union.channelWords(ch, this.ranges);
      }
    }
    this.fill(from, to, this.kLo, this.kHi);
    let total = this.untouchedWords;
    for (let i = 0; i < this.touchedCount; i++) total += this.union.channelWords(this.touchedList[i] ?? indexOutOfRange(i), this.ranges);
    return total;
  }

  /**
   * Ranges of columns [kLo, kHi): a stretch starts, in from's m-block, after from's line (the whole
   * block for a column read later in it, from's column on from's line, nothing before) and ends
   * likewise in to's m-block.
   */
  private fill(from: Position, to: Position, kLo: number, kHi: number): void {
    const { rows: R, cols } = this.ctx.array;
    const RF = this.ctx.rowFolds;
    const M = this.ctx.operands.geometry.gemm.m;
    const fcFrom = Math.floor(from.g / RF);
    const fcTo = Math.floor(to.g / RF);
    // Fold ends and starts fall between the keys of two lines.
    const keyFrom = (from.g - fcFrom * RF) * R + Math.min(Math.max(from.t, -0.5), R - 0.5);
    const keyTo = (to.g - fcTo * RF) * R + Math.min(Math.max(to.t, -0.5), R - 0.5);
    const blockFrom = fcFrom * cols;
    const blockTo = fcTo * cols;
    const atFrom = blockFrom + Math.min(from.c, cols - 1) + 1;
    const atTo = blockTo + Math.min(to.c, cols - 1) + 1;
    for (let k = kLo; k < kHi; k++) {
      const key = this.order[k] ?? indexOutOfRange(k);
      const a = key > keyFrom ? blockFrom : key === keyFrom ? atFrom : blockFrom + cols;
      const b = key < keyTo ? blockTo + cols : key === keyTo ? atTo : blockTo;
      this.ranges.set(k, Math.max(0, a), Math.min(M, b));
    }
  }
}
