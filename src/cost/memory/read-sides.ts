/**
 * The ifmap and filter read buffers as the coupled walk (walk-coupled.ts) sees them: each serves
 * a demand line and says how far ahead its lines (and whole folds) surely hit.
 *
 * USER GEMM operands are served a set at a time from their prefetch positions (gemm-positions.ts);
 * other USER operands word by word through the address -> set index; CALC buffers (only walked
 * here when a CALC ofmap buffer stalls) never stall a read.
 */
import { userElemsPerSet } from './constants.js';
import { DemandStreams } from './demand.js';
import { GemmLinePositions, PrefetchPositions, gemmSetIndex } from './gemm-positions.js';
import { LinearMatrix, distinctIfmapWords } from './layer.js';
import { buildSetIndex, prefetchLayout } from './prefetch.js';
import { CalcReadBuffer, calcEpochWords } from './read-buffer-calc.js';
import { type ReadBufferStats, UserReadBuffer } from './read-buffer-user.js';
import type { WalkContext } from './walk-context.js';

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
  /** The same operand's streams pointed at other folds, to find where a run of quiet folds ends. */
  private readonly probe: DemandStreams;
  private readonly probeSource: DemandStreams['ifmap'];
  private readonly probeLines: GemmLinePositions;

  constructor(ctx: WalkContext, operand: 'ifmap' | 'filter', sramWords: number, elemsPerSet: number, rowsPerTile: number) {
    const { streams, array, operands, config } = ctx;
    this.elemsPerSet = elemsPerSet;
    this.source = operand === 'ifmap' ? streams.ifmap : streams.filter;
    this.positions = new PrefetchPositions(prefetchLayout(operands, array, ctx.dataflow, operand));
    this.buffer = new UserReadBuffer(gemmSetIndex(this.positions, elemsPerSet, config.bandwidthWordsPerCycle), sramWords, config.bandwidthWordsPerCycle);
    this.lines = new GemmLinePositions(streams, operand, this.positions, rowsPerTile, array.rows);
    this.probe = new DemandStreams(operands, array, ctx.dataflow);
    this.probeSource = operand === 'ifmap' ? this.probe.ifmap : this.probe.filter;
    this.probeLines = new GemmLinePositions(this.probe, operand, this.positions, rowsPerTile, array.rows);
  }

  private setOf(position: number): number {
    return Math.floor(position / this.elemsPerSet);
  }

  /** Set of the last word of line t. */
  private lastSetOfLine(t: number): number {
    return this.setOf(this.lines.first(t) + this.source.count(t) - 1);
  }

  quietLines(t: number, max: number, data: readonly [number, number]): number {
    const lo = data[0];
    const hi = data[1];
    if (t > hi) return max;
    if (t < lo) {
      // Lines before the first data line demand nothing: the stretch goes on into the data.
      const lead = lo - t;
      if (lead >= max) return max;
      return lead + this.quietLines(lo, max - lead, data);
    }
    const run = this.buffer.windowRun(this.setOf(this.lines.first(t)), this.lastSetOfLine(t));
    if (run === undefined) return 0;
    // Rolled operands run forwards through the prefetch order line after line, the others
    // (a tile row per line, bottom first) backwards: the stretch ends at the first line
    // leaving the window run (binary search).
    const longest = Math.min(max, hi - t + 1);
    const whole = longest === hi - t + 1 ? max : longest;
    let good = 1;
    let bad = longest;
    if (this.positions.rolled) {
      const end = run[1];
      if (this.lastSetOfLine(t + longest - 1) < end) return whole;
      while (bad - good > 1) {
        const mid = (good + bad) >> 1;
        if (this.lastSetOfLine(t + mid - 1) < end) good = mid;
        else bad = mid;
      }
    } else {
      const start = run[0];
      if (this.setOf(this.lines.first(t + longest - 1)) >= start) return whole;
      while (bad - good > 1) {
        const mid = (good + bad) >> 1;
        if (this.setOf(this.lines.first(t + mid - 1)) >= start) good = mid;
        else bad = mid;
      }
    }
    return good;
  }

  /**
   * Within a column fold the tiles a GEMM operand reads move forwards through its prefetch order
   * fold after fold (or stay), so both ends of a fold's set span never decrease: the run of quiet
   * folds ends at the first fold whose last set leaves the window run of the first fold's sets.
   */
  quietFolds(fr: number, fc: number, max: number): number {
    if (this.buffer.neverMisses) return max;
    const probe = this.probe;
    probe.setFold(fr, fc);
    const [lo, hi] = this.probeSource.dataLines();
    if (lo > hi) return 0;
    const lines = this.probeLines;
    const rolled = this.positions.rolled;
    const firstPosition = lines.first(rolled ? lo : hi);
    const run = this.buffer.windowRun(this.setOf(firstPosition), this.probeLastSet(fr, fc));
    if (run === undefined) return 0;
    const end = run[1];
    if (max === 1 || this.probeLastSet(fr + max - 1, fc) < end) return max;
    let good = 1;
    let bad = max;
    while (bad - good > 1) {
      const mid = (good + bad) >> 1;
      if (this.probeLastSet(fr + mid - 1, fc) < end) good = mid;
      else bad = mid;
    }
    return good;
  }

  /** The highest set fold (fr, fc) reads (it has data lines: a GEMM fold always does). */
  private probeLastSet(fr: number, fc: number): number {
    const probe = this.probe;
    probe.setFold(fr, fc);
    const [lo, hi] = this.probeSource.dataLines();
    // Rolled: the last line holds the last word; flipped: the first line (the tile's bottom row).
    const t = this.positions.rolled ? hi : lo;
    return this.setOf(this.probeLines.first(t) + this.probeSource.count(t) - 1);
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
