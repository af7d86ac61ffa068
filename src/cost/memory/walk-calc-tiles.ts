/**
 * CALC reads of an operand whose fold tiles overlap (im2col ifmaps), a tile at a time.
 *
 * A CALC buffer only counts words not yet seen in the current epoch. Inside one fold tile, a
 * repeated word is a hit unless an epoch ended between its occurrences, so up to the first epoch
 * end in the tile only its distinct words matter, in the order they first appear. Each tile's
 * first occurrences (and their demand lines) are computed once and kept while the tile is
 * re-read by later folds; a tile fully seen in the current epoch is skipped outright; from an epoch
 * end on, the rest of that tile is walked word by word (exactly as the reference walk does).
 * Cost: distinct words per fold instead of every demanded word.
 */
import type { LineSource } from './demand.js';
import type { CalcReadCounters } from './read-buffer-calc.js';
import { calcEpochWords } from './read-buffer-calc.js';
import type { WalkContext } from './walk-context.js';

/**
 * A fold tile's distinct words twice: in first-occurrence order (with the demand line and the
 * tile-wide position of that occurrence), and in last-occurrence order from the end (with the
 * position of that occurrence, descending).
 */
interface TileWords {
  firstAddrs: Int32Array;
  firstLines: Int32Array;
  firstPositions: Int32Array;
  lastAddrs: Int32Array;
  lastPositions: Int32Array;
}

/** Cached tile words beyond this count are rebuilt per fold instead of kept. */
const TILE_CACHE_WORDS = 1 << 22;

export function walkOverlappingTiles(ctx: WalkContext, operand: 'ifmap' | 'filter', base: CalcReadCounters): CalcReadCounters {
  const { streams, rowFolds, colFolds, foldLines } = ctx;
  const matrix = operand === 'ifmap' ? ctx.operands.ifmap : ctx.operands.filter;
  const source: LineSource = operand === 'ifmap' ? streams.ifmap : streams.filter;
  const cap = calcEpochWords(base.sramWords);
  const tiles = streams.tileCount[operand];
  const reused = tiles < rowFolds * colFolds;
  const cache: (TileWords | undefined)[] = [];
  let cachedWords = 0;
  /** Epoch in which tile j was read whole (all its words seen in it). */
  const tileSeenEpoch = new Int32Array(tiles);
  const seen = new Int32Array(matrix.addressSpace);
  const lineWords = Math.max(ctx.array.rows, ctx.array.cols);
  const builder = new TileBuilder(matrix.addressSpace, lineWords, foldLines);
  const out = new Int32Array(lineWords);

  let epoch = 1;
  let words = 0;
  let reads = 0;
  let closedEpochs = 0;
  let lastCloseCycle = 0;
  /** Counts one unseen word at `cycle`; true if it ended the epoch. */
  const fresh = (a: number, cycle: number): boolean => {
    seen[a] = epoch;
    reads++;
    if (++words < cap) return false;
    epoch++;
    closedEpochs++;
    words = 0;
    lastCloseCycle = cycle;
    return true;
  };

  let foldStart = 0;
  for (let fc = 0; fc < colFolds; fc++) {
    for (let fr = 0; fr < rowFolds; fr++, foldStart += foldLines) {
      const tile = streams.tileId(operand, fr, fc);
      if (tileSeenEpoch[tile] === epoch) continue; // every word hits
      streams.setFold(fr, fc);
      let tw = cache[tile];
      if (tw === undefined) {
        tw = builder.build(source);
        if (reused && cachedWords + tw.firstAddrs.length <= TILE_CACHE_WORDS) {
          cache[tile] = tw;
          cachedWords += tw.firstAddrs.length;
        }
      }
      const { firstAddrs, firstLines } = tw;
      let closedAt = -1;
      for (let u = 0; u < firstAddrs.length; u++) {
        const a = firstAddrs[u];
        if (seen[a] !== epoch && fresh(a, foldStart + firstLines[u])) {
          closedAt = u;
          break;
        }
      }
      if (closedAt < 0) {
        tileSeenEpoch[tile] = epoch;
        continue;
      }
      // After the epoch's end the tile's remaining distinct words are those occurring after it.
      const closedPosition = tw.firstPositions[closedAt];
      const { lastAddrs, lastPositions } = tw;
      let later = 0;
      while (later < lastAddrs.length && lastPositions[later] > closedPosition) later++;
      if (later < cap) {
        for (let v = 0; v < later; v++) seen[lastAddrs[v]] = epoch;
        reads += later;
        words = later;
        continue;
      }
      // Another epoch ends inside the tile: the rest word by word, as the reference walk does.
      const closeLine = firstLines[closedAt];
      let n = source.line(closeLine, out);
      let q = out.indexOf(firstAddrs[closedAt]) + 1;
      for (let t = closeLine; t < foldLines; t++) {
        if (t > closeLine) {
          n = source.line(t, out);
          q = 0;
        }
        for (; q < n; q++) {
          const a = out[q];
          if (seen[a] !== epoch) fresh(a, foldStart + t);
        }
      }
    }
  }
  return { ...base, reads, closedEpochs, lastCloseCycle, wordsLastEpoch: words };
}

/** Builds a tile's words with one stamp per address (no clearing between tiles). */
class TileBuilder {
  private readonly stamp: Int32Array;
  private current = 0;
  private readonly line: Int32Array;
  private readonly lineStart: Int32Array;
  private addrs = new Int32Array(1024);
  private lines = new Int32Array(1024);
  private positions = new Int32Array(1024);

  constructor(addressSpace: number, lineWords: number, private readonly foldLines: number) {
    this.stamp = new Int32Array(addressSpace);
    this.line = new Int32Array(lineWords);
    this.lineStart = new Int32Array(foldLines + 1);
  }

  build(source: LineSource): TileWords {
    const { stamp, line: out, lineStart, foldLines } = this;
    let id = ++this.current;
    let size = 0;
    for (let t = 0; t < foldLines; t++) {
      const n = source.line(t, out);
      const p0 = lineStart[t];
      lineStart[t + 1] = p0 + n;
      for (let q = 0; q < n; q++) {
        const a = out[q];
        if (stamp[a] === id) continue;
        stamp[a] = id;
        this.reserve(size);
        this.addrs[size] = a;
        this.lines[size] = t;
        this.positions[size++] = p0 + q;
      }
    }
    const firstAddrs = this.addrs.slice(0, size);
    const firstLines = this.lines.slice(0, size);
    const firstPositions = this.positions.slice(0, size);
    id = ++this.current;
    let back = 0;
    for (let t = foldLines - 1; t >= 0; t--) {
      const n = source.line(t, out);
      for (let q = n - 1; q >= 0; q--) {
        const a = out[q];
        if (stamp[a] === id) continue;
        stamp[a] = id;
        this.addrs[back] = a;
        this.positions[back++] = lineStart[t] + q;
      }
    }
    return { firstAddrs, firstLines, firstPositions, lastAddrs: this.addrs.slice(0, back), lastPositions: this.positions.slice(0, back) };
  }

  private reserve(size: number): void {
    if (size < this.addrs.length) return;
    this.addrs = grow(this.addrs);
    this.lines = grow(this.lines);
    this.positions = grow(this.positions);
  }
}

function grow(a: Int32Array): Int32Array<ArrayBuffer> {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
