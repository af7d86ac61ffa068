/**
 * USER mode (bandwidth-limited) double-buffered read SRAM (`memory/read_buffer.py`, docs/scalesim-model.md §7c).
 *
 * - S words; the active half A = ceil(S/2) and prefetch half P = S - A.
 * - The prefetch order is cut into sets (prefetch.ts); the active window covers
 *   ceil(A/eps) consecutive sets (50 for eps = ceil(S/100)), circularly.
 * - Before line 0 the active half is fetched "before time zero" (never stalls).
 * - A demanded address outside the window slides the window by ceil(P/eps) sets, repeatedly
 *   until it is found, and each slide issues ceil(P/bw) DRAM lines back to back after the previous
 *   prefetch (+1 cycle port latency). The line stalls until the last of those arrives.
 * Sliding only forwards around the ring is what makes backward-running demand thrash.
 */
import { indexOutOfRange } from '../../errors.js';
import { userElemsPerSet } from './constants.js';
import type { SetIndex } from './prefetch.js';

export interface ReadBufferStats {
  dramReads: number;
  dramStartCycle: number;
  dramStopCycle: number;
}

export class UserReadBuffer {
  private readonly setCount: number;
  private readonly activeSets: number;
  private readonly prefetchSets: number;
  private readonly prefetchLines: number;
  private readonly offsets: Int32Array;
  private readonly ids: Int32Array;
  private readonly bandwidthWordsPerCycle: number;
  private readonly tileMinSet: Int32Array;
  private readonly tileMaxSet: Int32Array;
  private readonly elemsPerSet: number;
  private windowStart = 0;
  /** Cycle at which the latest prefetch's last word arrives. */
  private lastPrefetchCycle: number;
  private dramReadLines: number;
  private readonly dramStart: number;

  constructor(index: SetIndex, sramWords: number, bandwidthWordsPerCycle: number) {
    const active = Math.ceil(sramWords * 0.5);
    const prefetch = sramWords - active;
    const elemsPerSet = userElemsPerSet(sramWords);
    this.elemsPerSet = elemsPerSet;
    this.setCount = index.setCount;
    this.activeSets = Math.min(Math.ceil(active / elemsPerSet), this.setCount);
    this.prefetchSets = Math.min(Math.ceil(prefetch / elemsPerSet), this.setCount - this.activeSets);
    this.prefetchLines = Math.ceil(prefetch / bandwidthWordsPerCycle);
    this.offsets = index.offsets;
    this.ids = index.ids;
    this.bandwidthWordsPerCycle = bandwidthWordsPerCycle;
    this.tileMinSet = index.tileMinSet;
    this.tileMaxSet = index.tileMaxSet;
    // Initial fill: n0 lines answered at cycles -n0 .. -1 (demand line 0 is at cycle 0).
    const initialLines = Math.min(Math.ceil(active / bandwidthWordsPerCycle), index.fetchRows);
    this.dramReadLines = initialLines;
    this.dramStart = -initialLines;
    this.lastPrefetchCycle = -1;
  }

  /** The window's first set: hits and misses depend on nothing else. */
  get windowFirstSet(): number {
    return this.windowStart;
  }

  /** The window spans every set: nothing can miss. */
  get neverMisses(): boolean {
    return this.activeSets >= this.setCount;
  }

  /**
   * True if every set holding words of prefetch tile `tile` is in the active window, so a fold
   * reading exactly that tile hits on every word and leaves the buffer unchanged.
   */
  coversTile(tile: number): boolean {
    const lo = this.tileMinSet[tile] ?? indexOutOfRange(tile);
    if (lo < 0) return true;
    let rel = lo - this.windowStart;
    if (rel < 0) rel += this.setCount;
    return rel + ((this.tileMaxSet[tile] ?? indexOutOfRange(tile)) - lo) < this.activeSets;
  }

  /**
   * If sets first..last (ascending) are all in the window: the run [start, end) of consecutive
   * window sets holding them, so any line whose sets lie in it hits too; else undefined.
   */
  windowRun(first: number, last: number): readonly [number, number] | undefined {
    if (!this.inWindow(first) || !this.inWindow(last)) return undefined;
    const end = this.windowStart + this.activeSets;
    const run = this.run;
    if (end <= this.setCount) {
      run[0] = this.windowStart;
      run[1] = end;
    } else if (first >= this.windowStart) {
      // The window wraps around the ring: [windowStart, setCount) and [0, end - setCount).
      run[0] = this.windowStart;
      run[1] = this.setCount;
    } else {
      if (last >= end - this.setCount) return undefined;
      run[0] = 0;
      run[1] = end - this.setCount;
    }
    return run;
  }

  /** windowRun's answer, reused (no allocation per line). */
  private readonly run: [number, number] = [0, 0];

  private inWindow(set: number): boolean {
    let rel = set - this.windowStart;
    if (rel < 0) rel += this.setCount;
    return rel < this.activeSets;
  }

  /**
   * Serves a line whose words are prefetch positions first .. first+count-1 (GEMM operands, see
   * gemm-positions.ts): the same as word by word, since words of one set hit or miss together.
   */
  serveRun(first: number, count: number, cycle: number): number {
    if (count === 0) return 0;
    const lastSet = Math.floor((first + count - 1) / this.elemsPerSet);
    let missed = false;
    for (let set = Math.floor(first / this.elemsPerSet); set <= lastSet; set++) {
      if (this.inWindow(set)) continue;
      missed = true;
      if (this.prefetchSets === 0) throw new Error(`read buffer: set ${set} is never fetched`);
      // The window moves prefetchSets <= activeSets at a time, so it reaches the set, at distance
      // d >= activeSets ahead of its start, after ceil((d - activeSets + 1) / prefetchSets) moves.
      let distance = set - this.windowStart;
      if (distance < 0) distance += this.setCount;
      this.advance(Math.ceil((distance - this.activeSets + 1) / this.prefetchSets));
    }
    if (!missed) return 0;
    const stall = this.lastPrefetchCycle - cycle - 1;
    return Math.max(stall, 0);
  }

  private hit(addr: number): boolean {
    const end = this.offsets[addr + 1] ?? indexOutOfRange(addr + 1);
    for (let p = this.offsets[addr] ?? indexOutOfRange(addr); p < end; p++) {
      let rel = (this.ids[p] ?? indexOutOfRange(p)) - this.windowStart;
      if (rel < 0) rel += this.setCount;
      if (rel < this.activeSets) return true;
    }
    return false;
  }

  private slide(addr: number): void {
    if (this.prefetchSets === 0 || this.offsets[addr + 1] === this.offsets[addr]) {
      throw new Error(`read buffer: address ${addr} is not in the prefetch order`);
    }
    this.advance();
  }

  /** `times` x new_prefetch(): the window moves a prefetch half forward each time, fetched right after the last. */
  private advance(times = 1): void {
    this.windowStart = (this.windowStart + times * this.prefetchSets) % this.setCount;
    this.lastPrefetchCycle += times * (this.prefetchLines + 1);
    this.dramReadLines += times * this.prefetchLines;
  }

  /** Serves one demand line at `cycle`; returns this buffer's stall cycles for the line. */
  serve(addrs: Int32Array, count: number, cycle: number): number {
    let missed = false;
    for (let p = 0; p < count; p++) {
      const a = addrs[p] ?? indexOutOfRange(p);
      if (this.hit(a)) continue;
      missed = true;
      do this.slide(a);
      while (!this.hit(a));
    }
    if (!missed) return 0;
    const stall = this.lastPrefetchCycle - cycle - 1; // hit latency 1 is not a stall
    return Math.max(stall, 0);
  }

  stats(): ReadBufferStats {
    return {
      dramReads: this.dramReadLines * this.bandwidthWordsPerCycle,
      dramStartCycle: this.dramStart,
      dramStopCycle: this.lastPrefetchCycle,
    };
  }
}
