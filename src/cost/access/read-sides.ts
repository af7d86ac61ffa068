/**
 * The ifmap and filter read buffers as the coupled walk (walk-coupled.ts) sees them: each serves
 * a demand line and says how far ahead its lines (and whole folds) surely hit.
 *
 * USER GEMM operands are served a set at a time from their prefetch positions (gemm-positions.ts);
 * other USER operands word by word through the address -> set index; CALC buffers (only walked
 * here when a CALC ofmap buffer stalls) never stall a read.
 */
import { userElemsPerSet } from './constants.js';
import type { DemandStreams, FlippedTile, SkewedTile } from './demand.js';
import { GemmLinePositions, PrefetchPositions, gemmSetIndex } from './gemm-positions.js';
import { LinearMatrix, distinctIfmapWords } from './layer.js';
import { buildSetIndex, prefetchLayout } from './prefetch.js';
import { CalcReadBuffer, calcEpochWords } from './read-buffer-calc.js';
import { type ReadBufferStats, UserReadBuffer } from './read-buffer-user.js';
import { longestRun } from './run-search.js';
import type { WalkContext } from './walk-context.js';

/**
 * "Every line left in the fold": a small integer rather than Infinity, so line counts stay small
 * integers for V8 (a double there deoptimizes the walk). A shorter stretch than possible is only
 * slower, never wrong, should a fold ever be longer.
 */
const TO_FOLD_END = 2 ** 30 - 1;

export interface ReadSide {
  /** True if every line of fold (fr, fc) is known to hit without changing the buffer. */
  skips(fr: number, fc: number): boolean;
  /** Serves line t of the current fold at `cycle`; returns its stall; sets `words`. */
  serveLine(t: number, cycle: number): number;
  /** Words demanded by the last served line. */
  words: number;
  /** False if quietLines is always 0 (then the walk does not look for quiet stretches). */
  canBeQuiet: boolean;
  /** Lines from t on (at most `max`) that surely hit, leaving the buffer as it is (0: unknown). */
  quietLines(t: number, max: number, data: readonly [number, number]): number;
  /**
   * Folds fr, fr+1, ... of column fold fc (at most `max`, all of the same shape) whose every line
   * surely hits, leaving the buffer as it is (0: unknown).
   */
  quietFolds(fr: number, fc: number, max: number): number;
  stats(): ReadBufferStats;
}

export function readSide(ctx: WalkContext, operand: 'ifmap' | 'filter'): ReadSide {
  return ctx.config.mode === 'user' ? userReadSide(ctx, operand) : calcReadSide(ctx, operand);
}

function userReadSide(ctx: WalkContext, operand: 'ifmap' | 'filter'): ReadSide {
  const { config, operands, streams, array } = ctx;
  const sramWords = operand === 'ifmap' ? config.ifmapSramWords : config.filterSramWords;
  const bandwidth = config.bandwidthWordsPerCycle;
  const elemsPerSet = userElemsPerSet(sramWords);
  const matrix = operand === 'ifmap' ? operands.ifmap : operands.filter;
  const layout = prefetchLayout(operands, array, ctx.dataflow, operand);
  if (ctx.shortcuts && matrix instanceof LinearMatrix) return new GemmReadSide(ctx, operand, sramWords, elemsPerSet, layout.rowsPerTile);

  const source = operand === 'ifmap' ? streams.ifmap : streams.filter;
  const buffer = new UserReadBuffer(buildSetIndex(layout, elemsPerSet, bandwidth), sramWords, bandwidth);
  const scratch = new Int32Array(Math.max(array.rows, array.cols));
  // Folds that re-read a whole prefetch tile can be checked at tile level; ws filter and is
  // ifmap folds read sub-blocks of their prefetch tiles, once each.
  const wholeTiles = !((ctx.dataflow === 'ws' && operand === 'filter') || (ctx.dataflow === 'is' && operand === 'ifmap'));
  const wordSide: ReadSide = {
    words: 0,
    canBeQuiet: false,
    quietLines: () => 0,
    quietFolds: () => 0,
    skips: (fr, fc) => ctx.shortcuts && (buffer.neverMisses || (wholeTiles && buffer.coversTile(streams.tileId(operand, fr, fc)))),
    serveLine: (t, cycle) => {
      const n = source.line(t, scratch);
      wordSide.words = n;
      return buffer.serve(scratch, n, cycle);
    },
    stats: () => buffer.stats(),
  };
  return wordSide;
}

/** A GEMM line is a run of consecutive prefetch positions: served a set at a time. */
class GemmReadSide implements ReadSide {
  words = 0;
  readonly canBeQuiet = true;
  private readonly source: DemandStreams['ifmap'];
  private readonly positions: PrefetchPositions;
  private readonly buffer: UserReadBuffer;
  private readonly lines: GemmLinePositions;
  private readonly elemsPerSet: number;
  private readonly streams: DemandStreams;
  private readonly operand: 'ifmap' | 'filter';
  private readonly rowsPerTile: number;
  private readonly arrayRows: number;

  constructor(ctx: WalkContext, operand: 'ifmap' | 'filter', sramWords: number, elemsPerSet: number, rowsPerTile: number) {
    const { streams, array, operands, config } = ctx;
    this.elemsPerSet = elemsPerSet;
    this.source = operand === 'ifmap' ? streams.ifmap : streams.filter;
    this.positions = new PrefetchPositions(prefetchLayout(operands, array, ctx.dataflow, operand));
    this.buffer = new UserReadBuffer(gemmSetIndex(this.positions, elemsPerSet, config.bandwidthWordsPerCycle), sramWords, config.bandwidthWordsPerCycle);
    this.lines = new GemmLinePositions(streams, operand, this.positions, rowsPerTile, array.rows);
    this.streams = streams;
    this.operand = operand;
    this.rowsPerTile = rowsPerTile;
    this.arrayRows = array.rows;
  }

  private setOf(position: number): number {
    return Math.floor(position / this.elemsPerSet);
  }

  /** Set of the last word of line t. */
  private lastSetOfLine(t: number): number {
    return this.setOf(this.lines.first(t) + this.source.count(t) - 1);
  }

  quietLines(t: number, max: number, data: readonly [number, number]): number {
    // Whether a line hits depends only on the window: a stretch found on this window and fold
    // still holds after other buffers' events (stalls move cycles, not this window).
    const streams = this.streams;
    const window = this.buffer.windowFirstSet;
    if (window !== this.knownWindow || streams.foldRow !== this.knownFoldRow || streams.foldCol !== this.knownFoldCol || t < this.knownFrom || t >= this.knownTo) {
      const n = this.quietFrom(t, data);
      if (n === 0) return 0;
      this.knownWindow = window;
      this.knownFoldRow = streams.foldRow;
      this.knownFoldCol = streams.foldCol;
      this.knownFrom = t;
      this.knownTo = n === TO_FOLD_END ? TO_FOLD_END : t + n;
    }
    return Math.min(max, this.knownTo - t);
  }

  /** The last stretch found: lines [knownFrom, knownTo) of a fold hit on a window (TO_FOLD_END: all the rest). */
  private knownWindow = -1;
  private knownFoldRow = -1;
  private knownFoldCol = -1;
  private knownFrom = 0;
  private knownTo = 0;

  /** Lines from t on that hit on the current window (TO_FOLD_END: all the fold's data lines left). */
  private quietFrom(t: number, data: readonly [number, number]): number {
    const lo = data[0];
    const hi = data[1];
    if (t > hi) return TO_FOLD_END;
    if (t < lo) {
      // Lines before the first data line demand nothing: the stretch goes on into the data.
      const rest = this.quietFrom(lo, data);
      return rest === TO_FOLD_END ? TO_FOLD_END : lo - t + rest;
    }
    const firstPosition = this.lines.first(t);
    const words = this.source.count(t);
    const run = this.buffer.windowRun(this.setOf(firstPosition), this.setOf(firstPosition + words - 1));
    if (run === undefined) return 0;
    // Rolled operands run forwards through the prefetch order line after line, the others
    // (a tile row per line, bottom first) backwards: the stretch ends at the first line
    // leaving the window run, about (distance to the run's end) / (words per line) lines on.
    const longest = hi - t + 1;
    this.searchLine = t;
    let n: number;
    if (this.positions.rolled) {
      this.searchBound = run[1];
      n = longestRun(longest, (run[1] * this.elemsPerSet - firstPosition) / words, this.rolledLinesFit);
    } else {
      this.searchBound = run[0];
      n = longestRun(longest, (firstPosition - run[0] * this.elemsPerSet) / words + 1, this.flippedLinesFit);
    }
    return n === longest ? TO_FOLD_END : n;
  }

  /** Where a search starts (a line, or a fold of column fold searchFoldCol) and the run bound it tests. */
  private searchLine = 0;
  private searchFoldCol = 0;
  private searchBound = 0;
  /** Rolled: lines searchLine .. +n-1 end below the run's end set. */
  private readonly rolledLinesFit = (n: number): boolean => this.lastSetOfLine(this.searchLine + n - 1) < this.searchBound;
  /** Flipped: lines searchLine .. +n-1 start at or after the run's first set. */
  private readonly flippedLinesFit = (n: number): boolean => this.setOf(this.lines.first(this.searchLine + n - 1)) >= this.searchBound;
  /** Folds searchLine .. +n-1 end below the run's end set. */
  private readonly foldsFit = (n: number): boolean => this.setOf(this.foldLastPosition(this.searchLine + n - 1, this.searchFoldCol)) < this.searchBound;

  /**
   * Within a column fold the tiles a GEMM operand reads move forwards through its prefetch order
   * fold after fold (or stay), so both ends of a fold's set span never decrease: the run of quiet
   * folds ends at the first fold whose last set leaves the window run of the first fold's sets.
   * The streams point at fold fr; folds fr .. fr+max-1 have its shape, so spans are closed form.
   */
  quietFolds(fr: number, fc: number, max: number): number {
    if (this.buffer.neverMisses) return max;
    const lastPosition = this.foldLastPosition(fr, fc);
    const run = this.buffer.windowRun(this.setOf(this.foldFirstPosition(fr, fc)), this.setOf(lastPosition));
    if (run === undefined) return 0;
    if (max === 1) return 1;
    // Consecutive same-shape folds move their words by about the same number of positions each.
    const step = this.foldLastPosition(fr + 1, fc) - lastPosition;
    this.searchLine = fr;
    this.searchFoldCol = fc;
    this.searchBound = run[1];
    return longestRun(max, step > 0 ? Math.floor((run[1] * this.elemsPerSet - lastPosition - 1) / step) + 1 : max, this.foldsFit);
  }

  /**
   * Prefetch position of the first word fold (fr, fc) reads, for a fold shaped as the current one:
   * rolled, its tile's (row 0, column 0), read on the first data line; flipped (a tile row per line,
   * bottom first), the first word of its top row, read on the last data line.
   */
  private foldFirstPosition(fr: number, fc: number): number {
    if (this.positions.rolled) return this.positions.position(this.streams.tileId(this.operand, fr, fc) * this.rowsPerTile, 0);
    return this.positions.position(fc * this.rowsPerTile + fr * this.arrayRows, 0);
  }

  /** Position of the last word fold (fr, fc) reads: rolled, its tile's last element; flipped, its bottom row's last. */
  private foldLastPosition(fr: number, fc: number): number {
    const positions = this.positions;
    if (positions.rolled) {
      const tile = this.source as SkewedTile;
      const row = this.streams.tileId(this.operand, fr, fc) * this.rowsPerTile + tile.rows - 1;
      return positions.position(row, tile.usedCols - 1);
    }
    const tile = this.source as FlippedTile;
    const row = fc * this.rowsPerTile + fr * this.arrayRows + tile.usedRows - 1;
    return positions.position(row, 0) + tile.usedCols - 1;
  }

  skips(): boolean {
    return this.buffer.neverMisses;
  }

  serveLine(t: number, cycle: number): number {
    const n = this.source.count(t);
    this.words = n;
    return n === 0 ? 0 : this.buffer.serveRun(this.lines.first(t), n, cycle);
  }

  stats(): ReadBufferStats {
    return this.buffer.stats();
  }
}

/** CALC read buffers inside the coupled walk (only when a CALC ofmap buffer stalls). */
function calcReadSide(ctx: WalkContext, operand: 'ifmap' | 'filter'): ReadSide {
  const { config, operands, streams, array } = ctx;
  const sramWords = operand === 'ifmap' ? config.ifmapSramWords : config.filterSramWords;
  const source = operand === 'ifmap' ? streams.ifmap : streams.filter;
  const matrix = operand === 'ifmap' ? operands.ifmap : operands.filter;
  const calc = new CalcReadBuffer(sramWords, matrix.addressSpace, operands.requestFloor[operand]);
  const distinct = operand === 'ifmap' ? distinctIfmapWords(operands.geometry) : matrix.addressSpace;
  const fits = ctx.shortcuts && distinct < calcEpochWords(sramWords);
  if (fits) calc.serveFitting(distinct);
  const scratch = new Int32Array(Math.max(array.rows, array.cols));
  const side: ReadSide = {
    words: 0,
    canBeQuiet: false,
    quietLines: () => 0,
    // A fitting CALC buffer has served everything up front: every later fold hits.
    quietFolds: (_fr, _fc, max) => (fits ? max : 0),
    skips: () => fits,
    serveLine: (t, cycle) => {
      side.words = source.line(t, scratch);
      calc.serve(scratch, side.words, cycle);
      return 0;
    },
    stats: () => calc.stats(),
  };
  return side;
}
