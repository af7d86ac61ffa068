/**
 * SCALE-sim's demand matrices, generated one line (= one cycle) at a time instead of
 * materialised (`compute/systolic_compute_{os,ws,is}.py`, `create_*_demand_mat`).
 *
 * Per fold, each operand's tile is padded to the array, optionally flipped, given prefix/suffix
 * rows of -1 and "skewed" (column c delayed by c lines). Two tile shapes cover all six operands:
 *   SkewedTile   line t, column c holds tile row t - prefix - c      (os ifmap/filter, ws ifmap,
 *                                                                      is filter, every ofmap)
 *   FlippedTile  line t < R holds tile row R-1-t, unskewed            (ws filter, is ifmap)
 * Real addresses are emitted in column order, which is the order SCALE-sim's buffers see them.
 */
import type { Dataflow } from '../types.js';
import { type ArrayShape, type SpatialMapping, foldCounts, spatialMapping, usedInFold } from '../systolic/mapping.js';
import type { LayerOperands, OperandMatrix } from './layer.js';
import { cappedRamp } from './constants.js';

export interface LineSource {
  /** Writes line t's real addresses into `out` (column order); returns how many. */
  line(t: number, out: Int32Array): number;
}

/** A skewed tile of `rows` x `usedCols` whose element (r, c) is matrix(i0 + ., j0 + .). */
export class SkewedTile implements LineSource {
  prefix = 0;
  rows = 0;
  usedCols = 0;
  i0 = 0;
  j0 = 0;
  constructor(
    private readonly matrix: OperandMatrix,
    /** true: tile rows index the matrix's first dimension (i); false: its second (j). */
    private readonly rowIsI: boolean,
  ) {}

  /** Elements of the tile (real addresses, for a matrix without -1 entries). */
  get words(): number {
    return this.rows * this.usedCols;
  }

  /** Elements on line t (real addresses, for a matrix without -1 entries). */
  count(t: number): number {
    const base = t - this.prefix;
    const n = Math.min(this.usedCols - 1, base) - Math.max(0, base - this.rows + 1) + 1;
    return Math.max(n, 0);
  }

  /** First and last line with elements (first > last: none). */
  dataLines(): readonly [number, number] {
    if (this.rows <= 0 || this.usedCols <= 0) return setSpan(this.span, 0, -1);
    return setSpan(this.span, this.prefix, this.prefix + this.rows + this.usedCols - 2);
  }

  private readonly span: [number, number] = [0, -1];

  line(t: number, out: Int32Array): number {
    const base = t - this.prefix; // tile row of column 0
    const cLo = Math.max(0, base - this.rows + 1);
    const cHi = Math.min(this.usedCols - 1, base);
    let n = 0;
    for (let c = cLo; c <= cHi; c++) {
      const a = this.rowIsI
        ? this.matrix.addr(this.i0 + base - c, this.j0 + c)
        : this.matrix.addr(this.i0 + c, this.j0 + base - c);
      if (a >= 0) out[n++] = a;
    }
    return n;
  }
}

/** A stationary-operand tile loaded bottom row first over the first R lines, no skew. */
export class FlippedTile implements LineSource {
  usedRows = 0;
  usedCols = 0;
  i0 = 0;
  j0 = 0;
  constructor(
    private readonly matrix: OperandMatrix,
    private readonly rowIsI: boolean,
    private readonly arrayRows: number,
  ) {}

  get words(): number {
    return this.usedRows * this.usedCols;
  }

  count(t: number): number {
    const r = this.arrayRows - 1 - t;
    return r >= 0 && r < this.usedRows ? this.usedCols : 0;
  }

  /** First and last line with elements (first > last: none). */
  dataLines(): readonly [number, number] {
    if (this.usedRows <= 0 || this.usedCols <= 0) return setSpan(this.span, 0, -1);
    return setSpan(this.span, this.arrayRows - this.usedRows, this.arrayRows - 1);
  }

  private readonly span: [number, number] = [0, -1];

  line(t: number, out: Int32Array): number {
    const r = this.arrayRows - 1 - t;
    if (r < 0 || r >= this.usedRows) return 0;
    let n = 0;
    for (let c = 0; c < this.usedCols; c++) {
      const a = this.rowIsI ? this.matrix.addr(this.i0 + r, this.j0 + c) : this.matrix.addr(this.i0 + c, this.j0 + r);
      if (a >= 0) out[n++] = a;
    }
    return n;
  }
}

/**
 * Ofmap writes per line: a skewed tile whose valid (unskewed) rows are [lo, hi). Closed form,
 * less the element an OfmapOffset puts at address -1 (on line `holeLine` of this fold, if any).
 */
export class OfmapCounts {
  lo = 0;
  hi = 0;
  usedCols = 0;
  holeLine = -1;

  count(t: number): number {
    const n = Math.min(this.usedCols - 1, t - this.lo) - Math.max(0, t - this.hi + 1) + 1 - (t === this.holeLine ? 1 : 0);
    return Math.max(n, 0);
  }

  /** First and last line with words (first > last: none). */
  dataLines(): readonly [number, number] {
    if (this.hi <= this.lo || this.usedCols <= 0) return setSpan(this.span, 0, -1);
    return setSpan(this.span, this.lo, this.hi + this.usedCols - 2);
  }

  private readonly span: [number, number] = [0, -1];

  /**
   * Words on lines [0, t). Column c writes on lines [lo + c, hi + c), so this is
   * sum over c < usedCols of clamp(t - lo - c, 0, hi - lo), in closed form.
   */
  wordsBefore(t: number): number {
    const h = this.hi - this.lo;
    if (h <= 0 || this.usedCols <= 0) return 0;
    const x = t - this.lo;
    return cappedRamp(x, h) - cappedRamp(x - this.usedCols, h);
  }
}

/** Sets and returns an object's reused [first, last] span (no allocation per fold). */
function setSpan(span: [number, number], first: number, last: number): readonly [number, number] {
  span[0] = first;
  span[1] = last;
  return span;
}

/** The three demand streams of one layer; `setFold` points them at fold (fr, fc). */
export class DemandStreams {
  readonly mapping: SpatialMapping;
  readonly ifmap: SkewedTile | FlippedTile;
  readonly filter: SkewedTile | FlippedTile;
  readonly ofmap = new OfmapCounts();
  /** Distinct fold tiles per operand (tiles repeat across the other fold dimension). */
  readonly tileCount: { ifmap: number; filter: number };
  private readonly rowFolds: number;
  /** The fold the streams point at. */
  foldRow = 0;
  foldCol = 0;

  constructor(
    private readonly operands: LayerOperands,
    private readonly array: ArrayShape,
    private readonly dataflow: Dataflow,
  ) {
    this.mapping = spatialMapping(operands.geometry.gemm, dataflow);
    const { rowFolds, folds } = foldCounts(this.mapping, array);
    const colFolds = folds / rowFolds;
    this.rowFolds = rowFolds;
    this.tileCount = {
      ifmap: dataflow === 'is' ? folds : rowFolds,
      filter: dataflow === 'os' ? colFolds : dataflow === 'ws' ? folds : rowFolds,
    };
    const R = array.rows;
    switch (dataflow) {
      case 'os':
        this.ifmap = new SkewedTile(operands.ifmap, false); // rows = k, cols = m
        this.filter = new SkewedTile(operands.filter, true); // rows = k, cols = n
        break;
      case 'ws':
        this.ifmap = new SkewedTile(operands.ifmap, true); // rows = m, cols = k
        this.filter = new FlippedTile(operands.filter, true, R); // rows = k, cols = n
        break;
      case 'is':
        this.ifmap = new FlippedTile(operands.ifmap, false, R); // rows = k, cols = m
        this.filter = new SkewedTile(operands.filter, false); // rows = n, cols = k
        break;
    }
  }

  /**
   * Which distinct tile fold (fr, fc) reads: os ifmap/filter repeat per column/row fold, ws ifmap
   * and is filter per column fold; ws filter and is ifmap tiles are read once.
   */
  tileId(operand: 'ifmap' | 'filter', fr: number, fc: number): number {
    const unique = fc * this.rowFolds + fr;
    if (operand === 'ifmap') return this.dataflow === 'is' ? unique : fr;
    return this.dataflow === 'os' ? fc : this.dataflow === 'ws' ? unique : fr;
  }

  setFold(fr: number, fc: number): void {
    this.foldRow = fr;
    this.foldCol = fc;
    const { rows: R, cols: C } = this.array;
    const { m, n, k } = this.operands.geometry.gemm;
    const { sr, sc, t: T } = this.mapping;
    const rowsUsed = usedInFold(sr, R, fr);
    const colsUsed = usedInFold(sc, C, fc);
    const r0 = fr * R;
    const c0 = fc * C;
    const ofmap = this.ofmap;
    ofmap.usedCols = colsUsed;
    if (this.dataflow === 'os') {
      setSkewed(this.ifmap as SkewedTile, 0, k, rowsUsed, r0, 0);
      setSkewed(this.filter as SkewedTile, 0, k, colsUsed, 0, c0);
      // Flipped R x C tile after T-1 idle lines: valid rows are the last `rowsUsed` of R.
      ofmap.lo = T - 1 + R - rowsUsed;
      ofmap.hi = T - 1 + R;
    } else if (this.dataflow === 'ws') {
      setSkewed(this.ifmap as SkewedTile, R, m, rowsUsed, 0, r0);
      setFlipped(this.filter as FlippedTile, rowsUsed, colsUsed, r0, c0);
      ofmap.lo = 2 * R - 1;
      ofmap.hi = 2 * R - 1 + T;
    } else {
      setFlipped(this.ifmap as FlippedTile, rowsUsed, colsUsed, c0, r0);
      setSkewed(this.filter as SkewedTile, R, n, rowsUsed, r0, 0);
      ofmap.lo = 2 * R - 1;
      ofmap.hi = 2 * R - 1 + T;
    }
    ofmap.holeLine = this.ofmapHoleLine(fr, fc);
  }

  /**
   * The line of fold (fr, fc) that writes the ofmap element SCALE-sim sees as address -1, or -1.
   * os: the R x C output tile is written flipped (bottom row first) after T-1 lines; ws and is
   * write their T output rows after 2R-1 lines, in every row fold. Column c is delayed c lines.
   */
  private ofmapHoleLine(fr: number, fc: number): number {
    const hole = this.operands.ofmapHole;
    if (hole < 0) return -1;
    const { rows: R, cols: C } = this.array;
    const n = this.operands.geometry.gemm.n;
    const m0 = Math.floor(hole / n);
    const n0 = hole - m0 * n;
    const T = this.mapping.t;
    if (this.dataflow === 'os') {
      if (Math.floor(m0 / R) !== fr || Math.floor(n0 / C) !== fc) return -1;
      return T - 1 + (R - 1 - (m0 - fr * R)) + (n0 - fc * C);
    }
    // ws: columns are filters (n), time is m; is: columns are ofmap pixels (m), time is n.
    const [col, time] = this.dataflow === 'ws' ? [n0, m0] : [m0, n0];
    if (Math.floor(col / C) !== fc) return -1;
    return 2 * R - 1 + time + (col - fc * C);
  }
}

function setSkewed(tile: SkewedTile, prefix: number, rows: number, usedCols: number, i0: number, j0: number): void {
  tile.prefix = prefix;
  tile.rows = rows;
  tile.usedCols = usedCols;
  tile.i0 = i0;
  tile.j0 = j0;
}

function setFlipped(tile: FlippedTile, usedRows: number, usedCols: number, i0: number, j0: number): void {
  tile.usedRows = usedRows;
  tile.usedCols = usedCols;
  tile.i0 = i0;
  tile.j0 = j0;
}
