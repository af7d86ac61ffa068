/**
 * The line-by-line walk of all three demand streams together: needed whenever a buffer can stall
 * (USER mode), because a stall delays every later line of every operand.
 *
 * Shortcuts that leave the result unchanged: an operand whose active window spans all its sets
 * never misses; a fold re-reading a prefetch tile whose sets are all in the window hits throughout;
 * GEMM lines are served a set at a time from their prefetch positions (gemm-positions.ts); and a
 * stretch of lines on which no buffer has an event (every read hits, the ofmap buffer neither
 * triggers nor ends a drain) is crossed at once: one step per event instead of per cycle. When
 * both read operands are GEMM matrices, a run of whole folds without an event is one step too
 * (VGG16's fc layers: ~35 folds between two thrashes of the filter window).
 */
import type { LineSource, OfmapCounts } from './demand.js';
import { LinearMatrix } from './layer.js';
import { type ReadSide, readSide } from './read-sides.js';
import { longestRun } from './run-search.js';
import { type MemorySimResult, type WalkContext, WindowTracker } from './walk-context.js';
import { OfmapWriteBuffer } from './write-buffer.js';

export function walkCoupled(ctx: WalkContext): MemorySimResult {
  return new CoupledWalk(ctx).run();
}

/**
 * The walk's state. Each fold is one method call, so V8 optimizes the per-fold code as ordinary
 * hot functions early on, rather than only by replacing one long-running loop on the stack.
 */
class CoupledWalk {
  private readonly ifmapSide: ReadSide;
  private readonly filterSide: ReadSide;
  private readonly writer: OfmapWriteBuffer;
  private readonly scratch: Int32Array;
  private readonly ofmapQuiet: OfmapQuietLines;
  private readonly windows = { ifmap: new WindowTracker(), filter: new WindowTracker(), ofmap: new WindowTracker() };
  private readonly gemmI: boolean;
  private readonly gemmF: boolean;
  /** Whole quiet folds are crossed at once where every fold's data lines are closed form. */
  private readonly foldRuns: boolean;
  /** Row folds of the full array height all have the same lines; only a partial last one differs. */
  private readonly fullRowFolds: number;
  private stall = 0;
  private line = 0;
  private lastAccepted = 0;

  constructor(private readonly ctx: WalkContext) {
    const { streams, array, config, rowFolds } = ctx;
    this.ifmapSide = readSide(ctx, 'ifmap');
    this.filterSide = readSide(ctx, 'filter');
    this.writer = new OfmapWriteBuffer(config.ofmapSramWords, config.mode === 'calc' ? array.cols : config.bandwidthWordsPerCycle);
    this.scratch = new Int32Array(Math.max(array.rows, array.cols));
    this.ofmapQuiet = new OfmapQuietLines(streams.ofmap, this.writer);
    this.gemmI = ctx.operands.ifmap instanceof LinearMatrix;
    this.gemmF = ctx.operands.filter instanceof LinearMatrix;
    this.foldRuns = ctx.shortcuts && this.gemmI && this.gemmF;
    this.fullRowFolds = streams.mapping.sr % array.rows === 0 ? rowFolds : rowFolds - 1;
  }

  run(): MemorySimResult {
    const { streams, rowFolds, colFolds } = this.ctx;
    for (let fc = 0; fc < colFolds; fc++) {
      for (let fr = 0; fr < rowFolds; ) {
        streams.setFold(fr, fc);
        const runFolds = this.foldRuns ? this.quietFoldRun(fr, fc) : 0;
        if (runFolds > 0) {
          this.crossFolds(runFolds);
          fr += runFolds;
        } else {
          this.walkFold(fr, fc);
          fr++;
        }
      }
    }
    this.writer.finish(this.lastAccepted);
    return {
      totalCycles: this.lastAccepted,
      stallCycles: this.stall,
      sram: this.windows,
      dram: { ifmap: this.ifmapSide.stats(), filter: this.filterSide.stats(), ofmap: this.writer.stats() },
    };
  }

  /** Folds fr, fr+1, ... (same shape) from the current cycle on which no buffer has an event. */
  private quietFoldRun(fr: number, fc: number): number {
    const { streams, foldLines } = this.ctx;
    const cycle = this.line + this.stall;
    const writer = this.writer;
    const foldWords = streams.ofmap.wordsBefore(foldLines);
    let n = Math.min(fr < this.fullRowFolds ? this.fullRowFolds - fr : 1, Math.floor((writer.quietBeforeCycle(cycle) - cycle) / foldLines));
    if (foldWords > 0) n = Math.min(n, Math.floor(writer.quietWords(cycle) / foldWords));
    if (n > 0) n = this.ifmapSide.quietFolds(fr, fc, n);
    if (n > 0) n = this.filterSide.quietFolds(fr, fc, n);
    return n;
  }

  /** `folds` quiet folds as one quiet stretch of folds x foldLines lines: each has the same data lines. */
  private crossFolds(folds: number): void {
    const { streams, foldLines } = this.ctx;
    const cycle = this.line + this.stall;
    const windows = this.windows;
    noteFolds(windows.ifmap, streams.ifmap.dataLines(), folds, foldLines, cycle + 1);
    noteFolds(windows.filter, streams.filter.dataLines(), folds, foldLines, cycle + 1);
    noteFolds(windows.ofmap, streams.ofmap.dataLines(), folds, foldLines, cycle);
    this.writer.storeQuiet(folds * streams.ofmap.wordsBefore(foldLines));
    this.lastAccepted = cycle + folds * foldLines - 1;
    this.line += folds * foldLines;
  }

  /** The current fold (fr, fc), line by line and quiet stretch by quiet stretch. */
  private walkFold(fr: number, fc: number): void {
    const { streams, foldLines } = this.ctx;
    const { ifmapSide, filterSide, writer, windows, ofmapQuiet, scratch } = this;
    // Skipped operands only need the fold's first and last demand lines (SRAM start/stop).
    const skipI = ifmapSide.skips(fr, fc);
    const skipF = filterSide.skips(fr, fc);
    // GEMM operands have no -1 addresses: their data lines are closed form.
    const boundsI = !skipI ? NO_BOUNDS : this.gemmI ? streams.ifmap.dataLines() : dataLineBounds(streams.ifmap, foldLines, scratch);
    const boundsF = !skipF ? NO_BOUNDS : this.gemmF ? streams.filter.dataLines() : dataLineBounds(streams.filter, foldLines, scratch);
    const dataI = skipI ? boundsI : streams.ifmap.dataLines();
    const dataF = skipF ? boundsF : streams.filter.dataLines();
    const dataO = streams.ofmap.dataLines();
    // Word-by-word operands have no quiet stretches: then every line is served on its own.
    const stretches = this.ctx.shortcuts && (skipI || ifmapSide.canBeQuiet) && (skipF || filterSide.canBeQuiet);
    let line = this.line;
    let stall = this.stall;
    let lastAccepted = this.lastAccepted;
    for (let t = 0; t < foldLines; ) {
      const cycle = line + stall;
      // A stretch of lines from t that no buffer has an event on.
      let quiet = stretches ? ofmapQuiet.from(t, cycle, foldLines) : 0;
      if (quiet > 1 && !skipI) quiet = ifmapSide.quietLines(t, quiet, dataI);
      if (quiet > 1 && !skipF) quiet = filterSide.quietLines(t, quiet, dataF);
      if (quiet > 1) {
        // No stall on any of these lines: each is served at its cycle, reads one cycle later.
        noteStretch(windows.ifmap, skipI, dataI, t, quiet, cycle + 1 - t);
        noteStretch(windows.filter, skipF, dataF, t, quiet, cycle + 1 - t);
        const ofmapWords = streams.ofmap.wordsBefore(t + quiet) - streams.ofmap.wordsBefore(t);
        writer.storeQuiet(ofmapWords);
        lastAccepted = cycle + quiet - 1;
        noteStretch(windows.ofmap, false, dataO, t, quiet, cycle - t);
        t += quiet;
        line += quiet;
        continue;
      }
      let stallI = 0;
      let stallF = 0;
      if (!skipI) {
        stallI = ifmapSide.serveLine(t, cycle);
        if (ifmapSide.words > 0) windows.ifmap.note(cycle + 1 + stallI); // reads are served after 1 cycle
      } else if (t === boundsI[0] || t === boundsI[1]) windows.ifmap.note(cycle + 1);
      if (!skipF) {
        stallF = filterSide.serveLine(t, cycle);
        if (filterSide.words > 0) windows.filter.note(cycle + 1 + stallF);
      } else if (t === boundsF[0] || t === boundsF[1]) windows.filter.note(cycle + 1);
      const ofmapWords = streams.ofmap.count(t);
      lastAccepted = writer.serve(ofmapWords, cycle);
      if (ofmapWords > 0) windows.ofmap.note(lastAccepted);
      stall += Math.max(stallI, stallF, lastAccepted - cycle);
      t++;
      line++;
    }
    this.line = line;
    this.stall = stall;
    this.lastAccepted = lastAccepted;
  }
}

const NO_BOUNDS: readonly [number, number] = [-1, -1];

/** Lines from t on whose ofmap words the write buffer takes without an event. */
class OfmapQuietLines {
  private t = 0;
  private base = 0;
  private words = 0;
  /** Lines t .. t+n-1 write at most `words` words. */
  private readonly fits = (n: number): boolean => this.ofmap.wordsBefore(this.t + n) - this.base <= this.words;

  constructor(
    private readonly ofmap: OfmapCounts,
    private readonly writer: OfmapWriteBuffer,
  ) {}

  from(t: number, cycle: number, foldLines: number): number {
    const ofmap = this.ofmap;
    const words = this.writer.quietWords(cycle);
    const longest = Math.min(foldLines - t, this.writer.quietBeforeCycle(cycle) - cycle);
    const base = ofmap.wordsBefore(t);
    if (longest <= 0 || ofmap.wordsBefore(t + 1) - base > words) return 0;
    this.t = t;
    this.base = base;
    this.words = words;
    // Guess: the lines before the first write, then a plateau of usedCols words a line.
    const guess = Math.max(0, ofmap.lo - t) + words / Math.max(1, Math.min(ofmap.usedCols, ofmap.hi - ofmap.lo));
    return longestRun(longest, guess, this.fits);
  }
}

/**
 * Window notes of a stretch of stall-free lines [t, t + n), line u read at cycle u + offset: a
 * skipped operand is noted on its first and last data line, a served one on every data line, of
 * which the first and last are what the tracker keeps.
 */
function noteStretch(window: WindowTracker, skipped: boolean, data: readonly [number, number], t: number, n: number, offset: number): void {
  const lo = data[0];
  const hi = data[1];
  if (skipped) {
    if (lo >= t && lo < t + n) window.note(lo + offset);
    if (hi >= t && hi < t + n && hi !== lo) window.note(hi + offset);
    return;
  }
  const first = Math.max(lo, t);
  const last = Math.min(hi, t + n - 1);
  if (first > last) return;
  window.note(first + offset);
  window.note(last + offset);
}

/**
 * Window notes of `folds` stall-free folds of `foldLines` lines from `cycle` (+1 for reads), each
 * with data on lines [lo, hi]: the first fold's first data line and the last fold's last.
 */
function noteFolds(window: WindowTracker, data: readonly [number, number], folds: number, foldLines: number, cycle: number): void {
  const lo = data[0];
  const hi = data[1];
  if (lo > hi) return;
  window.note(cycle + lo);
  window.note(cycle + (folds - 1) * foldLines + hi);
}

/** First and last line of the current fold holding a real address of `source` ([-1, -1]: none). */
function dataLineBounds(source: LineSource, foldLines: number, out: Int32Array): readonly [number, number] {
  let first = 0;
  while (first < foldLines && source.line(first, out) === 0) first++;
  if (first === foldLines) return NO_BOUNDS;
  let last = foldLines - 1;
  while (source.line(last, out) === 0) last--;
  return [first, last];
}
