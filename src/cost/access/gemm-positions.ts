/**
 * Positions of a GEMM operand's words in its USER-mode prefetch order, in O(1) per demand line.
 *
 * Every demand line of a GEMM operand is a contiguous run of the prefetch order:
 * - skewed operands (os ifmap/filter, ws ifmap, is filter) are prefetched anti-diagonal by
 *   anti-diagonal, bottom row first, and a skewed demand line t holds tile elements (t - c, c):
 *   one anti-diagonal, in the same order;
 * - ws filter and is ifmap are prefetched row-major and a demand line is one tile row.
 * A GEMM has no -1 addresses, so the only holes in the prefetch matrix are the padding columns of
 * its last tile; positions count real words only. The set of a word is position / eps, so a line
 * touches the consecutive sets [p0/eps, (p0+n-1)/eps].
 */
import type { DemandStreams, SkewedTile } from './demand.js';
import type { SetIndex, StackedOperand } from './prefetch.js';
import { cappedRamp } from './constants.js';

export class PrefetchPositions {
  readonly rows: number;
  readonly cols: number;
  /** Real words in the prefetch order. */
  readonly length: number;
  private readonly padRow0: number;
  private readonly padCol0: number;

  constructor(private readonly layout: StackedOperand) {
    this.rows = layout.tiles * layout.rowsPerTile;
    this.cols = layout.width;
    // Padding: last tile's rows, columns from the used width of that tile on.
    this.padRow0 = (layout.tiles - 1) * layout.rowsPerTile;
    this.padCol0 = layout.foldedTotal - (layout.tiles - 1) * layout.width;
    this.length = this.rows * this.cols - layout.rowsPerTile * (this.cols - this.padCol0);
  }

  /** Real words on the anti-diagonals before d: all cells there minus the padding cells. */
  private diagonalStart(d: number): number {
    return cellsBefore(d, 0, this.rows, 0, this.cols) - cellsBefore(d, this.padRow0, this.rows, this.padCol0, this.cols);
  }

  /** Padding cells of anti-diagonal d among rows [lo, hi]. */
  private paddingRows(d: number, lo: number, hi: number): number {
    const n = Math.min(d - this.padCol0, hi) - Math.max(this.padRow0, lo) + 1;
    return Math.max(n, 0);
  }

  /** Position of real element (row, col) of the stacked prefetch matrix. */
  position(row: number, col: number): number {
    if (!this.layout.rolled) {
      return row * this.cols + col - Math.max(0, row - this.padRow0) * (this.cols - this.padCol0);
    }
    const d = row + col;
    const hi = Math.min(d, this.rows - 1);
    // Words before it on its diagonal: rows (row, hi], minus padding among them.
    return this.diagonalStart(d) + (hi - row) - this.paddingRows(d, row + 1, hi);
  }

  get rolled(): boolean {
    return this.layout.rolled;
  }
}

/**
 * Cells (r, c) of the rectangle [r0, r1) x [c0, c1) with r + c < d. Row r contributes
 * clamp(d - c0 - r, 0, width), so this is a difference of ramp(y) = sum of min(v, width), v = 1..y.
 */
function cellsBefore(d: number, r0: number, r1: number, c0: number, c1: number): number {
  const width = c1 - c0;
  if (width <= 0 || r1 <= r0) return 0;
  return cappedRamp(d - c0 - r0, width) - cappedRamp(d - c0 - r1, width);
}

/** Maps each demand line of one GEMM operand to its first prefetch position. */
export class GemmLinePositions {
  constructor(
    private readonly streams: DemandStreams,
    private readonly operand: 'ifmap' | 'filter',
    private readonly positions: PrefetchPositions,
    private readonly rowsPerTile: number,
    private readonly arrayRows: number,
  ) {}

  /** Prefetch position of the first word of line t of the current fold (line must be non-empty). */
  first(t: number): number {
    const s = this.streams;
    const source = this.operand === 'ifmap' ? s.ifmap : s.filter;
    if (this.positions.rolled) {
      const tile = source as SkewedTile;
      const base = t - tile.prefix;
      const cLo = Math.max(0, base - tile.rows + 1);
      const stackedRow = s.tileId(this.operand, s.foldRow, s.foldCol) * this.rowsPerTile + base - cLo;
      return this.positions.position(stackedRow, cLo);
    }
    // ws filter / is ifmap: prefetch tile = column fold; the line is row R-1-t of row fold fr.
    const stackedRow = s.foldCol * this.rowsPerTile + s.foldRow * this.arrayRows + (this.arrayRows - 1 - t);
    return this.positions.position(stackedRow, 0);
  }
}

/** The set structure of a GEMM operand without an address index (lines are served by position). */
export function gemmSetIndex(positions: PrefetchPositions, elemsPerSet: number, bandwidthWordsPerCycle: number): SetIndex {
  return {
    setCount: Math.floor(positions.length / elemsPerSet) + 1,
    offsets: new Int32Array(0),
    ids: new Int32Array(0),
    fetchRows: Math.ceil((positions.rows * positions.cols) / bandwidthWordsPerCycle),
    tileMinSet: new Int32Array(0),
    tileMaxSet: new Int32Array(0),
  };
}
