/**
 * Double-buffered ofmap write SRAM (`memory/write_buffer.py`, docs/scalesim-model.md §7b), both modes.
 *
 * - S words; active = ceil(S/2), drain = S - active; drain port `bw` words per line-cycle
 *   (CALC: the array width; USER: Bandwidth).
 * - Written words are packed into bw-wide DRAM lines. After each word: if a drain is in flight
 *   and the buffer is full, the array stalls until the drain ends; otherwise, if more than
 *   `active` words are buffered, the partial line is closed and ceil(drain/bw) lines are drained
 *   from this cycle, one per cycle. Space is freed when the drain is issued.
 * - A drain counts lines*bw words minus only the last line's empty slots, so partial lines closed
 *   mid-stream are over-counted (SCALE-sim's DRAM ofmap writes slightly exceed the SRAM writes).
 * Words are handled in runs between these events, not one by one.
 */
export interface WriteBufferStats {
  dramWrites: number;
  dramStartCycle: number;
  dramStopCycle: number;
}

export class OfmapWriteBuffer {
  private readonly activeWords: number;
  private readonly drainLinesMax: number;
  private freeWords: number;
  private drainEndCycle = 0;
  /** Words in the open (not yet closed) DRAM line. */
  private openLineWords = 0;
  /** Closed DRAM lines so far, and the first not yet drained. */
  private closedLines = 0;
  private drainedLines = 0;
  /** Fill of lines closed before they were full (all others hold bw words). */
  private readonly partialLines = new Map<number, number>();
  private writes = 0;
  private dramStart = Infinity;
  private dramStop = -Infinity;

  constructor(
    sramWords: number,
    private readonly bandwidthWordsPerCycle: number,
  ) {
    this.activeWords = Math.ceil(sramWords * 0.5);
    this.drainLinesMax = Math.ceil((sramWords - this.activeWords) / bandwidthWordsPerCycle);
    // An empty drain half would never free space: finish() would loop forever.
    if (!(this.drainLinesMax >= 1)) throw new Error(`ofmap write buffer: ${sramWords} word(s) leave no drain half`);
    this.freeWords = sramWords;
  }

  private store(words: number): void {
    this.freeWords -= words;
    const filled = this.openLineWords + words;
    this.closedLines += Math.floor(filled / this.bandwidthWordsPerCycle);
    this.openLineWords = filled % this.bandwidthWordsPerCycle;
  }

  private closeOpenLine(): void {
    if (this.openLineWords === 0) return;
    this.partialLines.set(this.closedLines, this.openLineWords);
    this.closedLines++;
    this.openLineWords = 0;
  }

  /** Drains up to drainLinesMax closed lines starting at `cycle`; returns the last line's cycle. */
  private drain(cycle: number): number {
    const end = Math.min(this.drainedLines + this.drainLinesMax, this.closedLines);
    const lines = end - this.drainedLines;
    const lastFill = this.partialLines.get(end - 1) ?? this.bandwidthWordsPerCycle;
    // Drained lines are never looked up again (keys ascend in insertion order): keep the map small.
    for (const line of this.partialLines.keys()) {
      if (line >= end) break;
      this.partialLines.delete(line);
    }
    const words = (lines - 1) * this.bandwidthWordsPerCycle + lastFill;
    this.writes += words;
    this.freeWords += words;
    this.drainedLines = end;
    const endCycle = cycle + lines - 1;
    if (cycle < this.dramStart) this.dramStart = cycle;
    // SCALE-sim reports the LAST drain's end, even when a mid-run drain ended later.
    this.dramStop = endCycle;
    return endCycle;
  }

  /** Accepts `words` ofmap words demanded at `cycle`; returns the cycle they are accepted. */
  serve(words: number, cycle: number): number {
    let current = cycle;
    let left = words;
    while (left > 0) {
      if (current < this.drainEndCycle) {
        // The word that leaves no free space stalls the array until the drain ends.
        const run = this.freeWords > 0 ? this.freeWords : 1;
        if (run > left) {
          this.store(left);
          break;
        }
        this.store(run);
        left -= run;
        current = this.drainEndCycle;
      } else {
        // The word that pushes the fill past the active half triggers a drain (no stall).
        const run = Math.max(1, this.freeWords - this.activeWords + 1);
        if (run > left) {
          this.store(left);
          break;
        }
        this.store(run);
        left -= run;
        this.closeOpenLine();
        this.drainEndCycle = this.drain(current);
      }
    }
    return current;
  }

  /**
   * What can be stored from `cycle` on without any event (no stall, no drain triggered, no drain
   * ending): at most quietWords(cycle) words, on lines before cycle quietBeforeCycle(cycle). In a
   * drain a line fits while it leaves a word free; otherwise while the fill stays within the
   * active half.
   */
  quietWords(cycle: number): number {
    return cycle < this.drainEndCycle ? this.freeWords - 1 : this.freeWords - this.activeWords;
  }

  quietBeforeCycle(cycle: number): number {
    return cycle < this.drainEndCycle ? this.drainEndCycle : Infinity;
  }

  /** How many lines of `words` words each, from `cycle` on, are quiet (see quietWords). */
  quietLines(words: number, cycle: number): number {
    if (words === 0) return Infinity;
    return Math.max(0, Math.min(this.quietBeforeCycle(cycle) - cycle, Math.floor(this.quietWords(cycle) / words)));
  }

  /** Stores quiet words (see quietWords) at once. */
  storeQuiet(words: number): void {
    this.store(words);
  }

  /**
   * Serves `lines` lines of `words` words each at cycles cycle, cycle + 1, ...; false as soon as
   * one would stall (the lines are then no longer one per cycle). Quiet stretches are stored at once.
   */
  serveLines(words: number, lines: number, cycle: number): boolean {
    let current = cycle;
    let left = lines;
    while (left > 0) {
      const quiet = Math.min(left, this.quietLines(words, current));
      if (quiet > 0) {
        this.storeQuiet(words * quiet);
        current += quiet;
        left -= quiet;
        continue;
      }
      if (this.serve(words, current) !== current) return false;
      current++;
      left--;
    }
    return true;
  }

  /** Drains everything left after the last line, back to back from `cycle`. */
  finish(cycle: number): void {
    this.closeOpenLine();
    let start = cycle;
    while (this.drainedLines < this.closedLines) start = this.drain(start) + 1;
  }

  stats(): WriteBufferStats {
    return { dramWrites: this.writes, dramStartCycle: this.dramStart, dramStopCycle: this.dramStop };
  }
}
