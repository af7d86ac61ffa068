/**
 * Distinct ifmap words read by a set of im2col elements given as ofmap-pixel ranges of im2col
 * columns k, in closed form (no per-word work). Used by the ws/is CALC epoch search
 * (wsis-stretch.ts): per channel from a range per column (channelWords), or what the columns of
 * one channel and class share (sharedOfShapes, for tap-columns.ts).
 *
 * Column k = (dy*FW + dx)*C + ch is window tap (dy, dx) of channel ch; at ofmap pixel
 * m = oy*Ew + ox it reads input pixel (oy*sh + dy, ox*sw + dx), or nothing (-1) past the input.
 * Two taps can read the same pixel only if dy and dx agree modulo the strides (their "class"
 * (dy % sh, dx % sw)). In a class, pixel (Y*sh + dy % sh, X*sw + dx % sw) is lattice point
 * (Y, X), and tap (dy, dx) reads lattice point (oy + qy, ox + qx) with (qy, qx) = (dy / sh, dx / sw)
 * floored: every tap is a translated copy of the ofmap grid. A raster range of m is, in the grid,
 * a partial first row, whole middle rows and a partial last row. So the words of one channel and
 * class are the union of a few translated staircase shapes, counted by cutting the lattice rows
 * into stretches where no shape changes its row interval (at most 5 cuts per shape) and merging
 * intervals once per stretch: O(n^2 log n) for n shapes, none per row or word. A channel and class
 * whose shape list repeats the last one counted reuses its count.
 */
import { indexOutOfRange } from '../../errors.js';
import type { LayerGeometry } from './layer.js';

/** Unions of up to this many shapes go by inclusion-exclusion (2^n - 1 terms), larger ones by sweeping rows. */
const INCLUSION_EXCLUSION_SHAPES = 4;

/** Per im2col column k, one ofmap pixel range [a, b) (empty when b <= a). */
export class TapRanges {
  readonly a: Int32Array;
  readonly b: Int32Array;
  constructor(k: number) {
    this.a = new Int32Array(k);
    this.b = new Int32Array(k);
  }

  set(k: number, a: number, b: number): void {
    this.a[k] = a;
    this.b[k] = b;
  }
}

export class ConvTapUnion {
  private readonly C: number;
  private readonly Ew: number;
  /** Taps of each class; per tap its shift (qy, qx) and the valid grid rows/columns (vh, vw). */
  private readonly classTaps: Int32Array[];
  /** Index into classTaps of each tap. */
  private readonly tapClass: Int32Array;
  private readonly qy: Int32Array;
  private readonly qx: Int32Array;
  private readonly vh: Int32Array;
  private readonly vw: Int32Array;
  /** Shapes of the class being counted: tap and range. */
  private readonly shapeTap: Int32Array;
  private readonly shapeA: Int32Array;
  private readonly shapeB: Int32Array;
  private readonly cuts: Int32Array;
  private readonly spanLo: Int32Array;
  private readonly spanHi: Int32Array;
  private readonly order: Int32Array;
  /** Shapes merged into runs of consecutive qx (mergeRuns). */
  private readonly runTap: Int32Array;
  private readonly runLastQx: Int32Array;
  private readonly runA: Int32Array;
  private readonly runB: Int32Array;
  /** Per tap, the width of its class's lattice (input columns of its residue). */
  private readonly latticeCols: Int32Array;
  /** Per class, the last shape list counted (tap, a, b triples) and its words: channels often repeat one another's. */
  private readonly lastList: Int32Array[];
  private readonly lastWords: Int32Array;
  private readonly lastCount: Int32Array;

  constructor(geometry: LayerGeometry) {
    const { conv, ofmapHeight: Eh, ofmapWidth: Ew } = geometry;
    const { filterHeight: FH, filterWidth: FW, strideHeight: sh, strideWidth: sw } = conv;
    this.C = conv.channels;
    this.Ew = Ew;
    const taps = FH * FW;
    this.qy = new Int32Array(taps);
    this.qx = new Int32Array(taps);
    this.vh = new Int32Array(taps);
    this.vw = new Int32Array(taps);
    this.latticeCols = new Int32Array(taps);
    const classes: number[][] = [];
    for (let dy = 0; dy < FH; dy++) {
      for (let dx = 0; dx < FW; dx++) {
        const tap = dy * FW + dx;
        const ry = dy % sh;
        const rx = dx % sw;
        const latticeRows = Math.max(0, Math.ceil((conv.ifmapHeight - ry) / sh));
        const latticeCols = Math.max(0, Math.ceil((conv.ifmapWidth - rx) / sw));
        this.qy[tap] = (dy - ry) / sh;
        this.qx[tap] = (dx - rx) / sw;
        this.vh[tap] = Math.max(0, Math.min(Eh, latticeRows - (dy - ry) / sh));
        this.vw[tap] = Math.max(0, Math.min(Ew, latticeCols - (dx - rx) / sw));
        this.latticeCols[tap] = latticeCols;
        const cls = ry * sw + rx;
        const members = classes[cls] ?? [];
        members.push(tap);
        classes[cls] = members;
      }
    }
    this.classTaps = classes.filter((c) => c !== undefined).map((c) => Int32Array.from(c));
    this.tapClass = new Int32Array(taps);
    this.classTaps.forEach((members, cls) => {
      for (const tap of members) this.tapClass[tap] = cls;
    });
    const most = 2 * Math.max(1, ...this.classTaps.map((c) => c.length));
    this.lastList = this.classTaps.map(() => new Int32Array(3 * most));
    this.lastWords = new Int32Array(this.classTaps.length);
    this.lastCount = new Int32Array(this.classTaps.length);
    this.shapeTap = new Int32Array(most);
    this.shapeA = new Int32Array(most);
    this.shapeB = new Int32Array(most);
    this.cuts = new Int32Array(5 * most);
    this.spanLo = new Int32Array(most);
    this.spanHi = new Int32Array(most);
    this.order = new Int32Array(most);
    this.runTap = new Int32Array(most);
    this.runLastQx = new Int32Array(most);
    this.runA = new Int32Array(most);
    this.runB = new Int32Array(most);
  }

  /** Distinct words of channel ch read by the elements in `ranges`. */
  channelWords(ch: number, ranges: TapRanges): number {
    let total = 0;
    for (let cls = 0; cls < this.classTaps.length; cls++) {
      const n = this.gatherShapes(cls, ch, ranges);
      if (n === 1) total += this.validIn(this.shapeTap[0] ?? 0, this.shapeA[0] ?? 0, this.shapeB[0] ?? 0);
      else if (n > 1) total += this.cachedUnion(cls, n);
    }
    return total;
  }

  /** Classes (tap residues modulo the strides). */
  get classCount(): number {
    return this.classTaps.length;
  }

  /** The (channel, class) bucket of column k: ch * classCount + class. */
  bucketOf(k: number): number {
    const tap = Math.floor(k / this.C);
    return (k - tap * this.C) * this.classTaps.length + (this.tapClass[tap] ?? indexOutOfRange(tap));
  }

  /** Sets shape i (for sharedOfShapes): tap `tap` at ofmap pixels [a, b). */
  setShape(i: number, tap: number, a: number, b: number): void {
    this.addShape(i, tap, a, b);
  }

  /** Real elements of shapes [0, n) (all of class cls) less their distinct words. */
  sharedOfShapes(cls: number, n: number): number {
    let elements = 0;
    for (let i = 0; i < n; i++) elements += this.validIn(this.shapeTap[i] ?? 0, this.shapeA[i] ?? 0, this.shapeB[i] ?? 0);
    return elements - this.cachedUnion(cls, n);
  }

  /** Real (non -1) elements of column k at ofmap pixels [a, b). */
  validElements(k: number, a: number, b: number): number {
    return b > a ? this.validIn(Math.floor(k / this.C), a, b) : 0;
  }

  /** Loads the shapes of channel ch's columns of class cls; returns how many. */
  private gatherShapes(cls: number, ch: number, ranges: TapRanges): number {
    const taps = this.classTaps[cls] ?? indexOutOfRange(cls);
    let n = 0;
    for (let i = 0; i < taps.length; i++) {
      const tap = taps[i] ?? indexOutOfRange(i);
      const k = tap * this.C + ch;
      const a = ranges.a[k] ?? indexOutOfRange(k);
      const b = ranges.b[k] ?? indexOutOfRange(k);
      if (b > a) n = this.addShape(n, tap, a, b);
    }
    return n;
  }

  private addShape(n: number, tap: number, a: number, b: number): number {
    this.shapeTap[n] = tap;
    this.shapeA[n] = a;
    this.shapeB[n] = b;
    return n + 1;
  }

  /** Real (non -1) elements of tap `tap` at ofmap pixels [a, b). */
  private validIn(tap: number, a: number, b: number): number {
    return this.validBefore(tap, b) - this.validBefore(tap, a);
  }

  private validBefore(tap: number, x: number): number {
    const vh = this.vh[tap] ?? indexOutOfRange(tap);
    const vw = this.vw[tap] ?? indexOutOfRange(tap);
    const rows = Math.floor(x / this.Ew);
    if (rows >= vh) return vh * vw;
    return rows * vw + Math.min(x - rows * this.Ew, vw);
  }

  /** The union of shapes [0, n) of class `cls`, reused when a channel repeats the last list counted for the class. */
  private cachedUnion(cls: number, n: number): number {
    const last = this.lastList[cls] ?? indexOutOfRange(cls);
    if (this.lastCount[cls] === n) {
      let same = true;
      for (let i = 0; i < n && same; i++) {
        same = last[3 * i] === this.shapeTap[i] && last[3 * i + 1] === this.shapeA[i] && last[3 * i + 2] === this.shapeB[i];
      }
      if (same) return this.lastWords[cls] ?? indexOutOfRange(cls);
    }
    for (let i = 0; i < n; i++) {
      last[3 * i] = this.shapeTap[i] ?? 0;
      last[3 * i + 1] = this.shapeA[i] ?? 0;
      last[3 * i + 2] = this.shapeB[i] ?? 0;
    }
    const words = this.union(n);
    this.lastCount[cls] = n;
    this.lastWords[cls] = words;
    return words;
  }

  /** Lattice points under the union of shapes [0, n) (all of one class). */
  private union(n: number): number {
    if (n <= INCLUSION_EXCLUSION_SHAPES) return this.unionByInclusionExclusion(n);
    const merged = this.mergeRuns(n);
    const Ew = this.Ew;
    const cuts = this.cuts;
    let nc = 0;
    for (let i = 0; i < merged; i++) {
      const tap = this.runTap[i] ?? indexOutOfRange(i);
      const qy = this.qy[tap] ?? indexOutOfRange(tap);
      const first = Math.floor((this.runA[i] ?? 0) / Ew);
      const last = Math.floor(((this.runB[i] ?? 0) - 1) / Ew);
      cuts[nc++] = qy + first;
      cuts[nc++] = qy + first + 1;
      cuts[nc++] = qy + last;
      cuts[nc++] = qy + last + 1;
      cuts[nc++] = qy + (this.vh[tap] ?? indexOutOfRange(tap));
    }
    sortPrefix(cuts, nc);
    let total = 0;
    for (let j = 0; j + 1 < nc; j++) {
      const y0 = cuts[j] ?? indexOutOfRange(j);
      const y1 = cuts[j + 1] ?? indexOutOfRange(j + 1);
      if (y1 > y0) total += this.rowUnion(merged, y0) * (y1 - y0);
    }
    return total;
  }

  /**
   * Merges shapes [0, n) into runs: taps of one row qy with consecutive qx and the same range
   * cover, on every lattice row, one interval from the first tap's start to the last tap's end.
   * Returns how many runs (runTap: the first tap, runLastQx: the last tap's qx).
   */
  private mergeRuns(n: number): number {
    const { order, shapeTap, shapeA, shapeB, qy, qx } = this;
    // Insertion sort of the shapes by (qy, a, b, qx).
    for (let i = 0; i < n; i++) {
      const tap = shapeTap[i] ?? indexOutOfRange(i);
      const y = qy[tap] ?? indexOutOfRange(tap);
      const x = qx[tap] ?? indexOutOfRange(tap);
      const a = shapeA[i] ?? indexOutOfRange(i);
      const b = shapeB[i] ?? indexOutOfRange(i);
      let p = i;
      for (; p > 0; p--) {
        const j = order[p - 1] ?? indexOutOfRange(p - 1);
        const tapJ = shapeTap[j] ?? indexOutOfRange(j);
        const dy = (qy[tapJ] ?? 0) - y;
        const da = (shapeA[j] ?? 0) - a;
        const db = (shapeB[j] ?? 0) - b;
        const dx = (qx[tapJ] ?? 0) - x;
        if (dy < 0 || (dy === 0 && (da < 0 || (da === 0 && (db < 0 || (db === 0 && dx <= 0)))))) break;
        order[p] = j;
      }
      order[p] = i;
    }
    let runs = 0;
    let lastY = -1;
    for (let p = 0; p < n; p++) {
      const i = order[p] ?? indexOutOfRange(p);
      const tap = shapeTap[i] ?? indexOutOfRange(i);
      const y = qy[tap] ?? indexOutOfRange(tap);
      const x = qx[tap] ?? indexOutOfRange(tap);
      const a = shapeA[i] ?? indexOutOfRange(i);
      const b = shapeB[i] ?? indexOutOfRange(i);
      const r = runs - 1;
      if (runs > 0 && y === lastY && a === this.runA[r] && b === this.runB[r] && x === (this.runLastQx[r] ?? 0) + 1) {
        this.runLastQx[r] = x;
        continue;
      }
      this.runTap[runs] = tap;
      this.runLastQx[runs] = x;
      this.runA[runs] = a;
      this.runB[runs] = b;
      lastY = y;
      runs++;
    }
    return runs;
  }

  /**
   * The union of a few shapes by inclusion-exclusion. Seen from shape r's ofmap pixels (oy, ox),
   * shape j (shifted by (dy, dx) from r) covers the same lattice point iff (oy - dy, ox - dx) is a
   * real pixel of j in j's range, i.e. m - (dy*Ew + dx) in [a_j, b_j) with oy - dy in [0, vh_j) and
   * ox - dx in [0, vw_j): so any intersection is a raster range of m within a rectangle of (oy, ox).
   */
  private unionByInclusionExclusion(n: number): number {
    const Ew = this.Ew;
    let total = 0;
    for (let subset = 1; subset < 1 << n; subset++) {
      const r = 31 - Math.clz32(subset & -subset); // the lowest member is the reference
      const tapR = this.shapeTap[r] ?? indexOutOfRange(r);
      const qyR = this.qy[tapR] ?? indexOutOfRange(tapR);
      const qxR = this.qx[tapR] ?? indexOutOfRange(tapR);
      let lo = 0;
      let hi = Infinity;
      let y0 = 0;
      let y1 = Infinity;
      let x0 = 0;
      let x1 = Infinity;
      let members = 0;
      for (let j = 0; j < n; j++) {
        if ((subset & (1 << j)) === 0) continue;
        members++;
        const tap = this.shapeTap[j] ?? indexOutOfRange(j);
        const dy = (this.qy[tap] ?? indexOutOfRange(tap)) - qyR;
        const dx = (this.qx[tap] ?? indexOutOfRange(tap)) - qxR;
        const shift = dy * Ew + dx;
        lo = Math.max(lo, (this.shapeA[j] ?? 0) + shift);
        hi = Math.min(hi, (this.shapeB[j] ?? 0) + shift);
        y0 = Math.max(y0, dy);
        y1 = Math.min(y1, (this.vh[tap] ?? indexOutOfRange(tap)) + dy);
        x0 = Math.max(x0, dx);
        x1 = Math.min(x1, (this.vw[tap] ?? indexOutOfRange(tap)) + dx);
      }
      if (hi <= lo || y1 <= y0 || x1 <= x0) continue;
      const common = this.inRectBefore(hi, y0, y1, x0, x1) - this.inRectBefore(lo, y0, y1, x0, x1);
      total += (members & 1) === 1 ? common : -common;
    }
    return total;
  }

  /** Ofmap pixels m < x with oy in [y0, y1) and ox in [x0, x1) (x0 < x1 <= Ew). */
  private inRectBefore(x: number, y0: number, y1: number, x0: number, x1: number): number {
    const rows = Math.floor(x / this.Ew);
    const width = x1 - x0;
    const whole = Math.max(0, Math.min(rows, y1) - y0) * width;
    if (rows < y0 || rows >= y1) return whole;
    return whole + Math.min(Math.max(x - rows * this.Ew - x0, 0), width);
  }

  /** Lattice points of lattice row y under the union of shapes [0, n). */
  private rowUnion(n: number, y: number): number {
    const Ew = this.Ew;
    const { spanLo, spanHi, order } = this;
    let m = 0;
    for (let i = 0; i < n; i++) {
      const tap = this.runTap[i] ?? indexOutOfRange(i);
      const oy = y - (this.qy[tap] ?? indexOutOfRange(tap));
      const a = this.runA[i] ?? 0;
      const b = this.runB[i] ?? 0;
      const first = Math.floor(a / Ew);
      const last = Math.floor((b - 1) / Ew);
      if (oy < first || oy > last || oy >= (this.vh[tap] ?? indexOutOfRange(tap))) continue;
      // Tap qx covers lattice columns [lo + qx, min(hi + qx, Ew + qx, lattice width)).
      const lo = (oy === first ? a - first * Ew : 0) + (this.qx[tap] ?? indexOutOfRange(tap));
      const lastQx = this.runLastQx[i] ?? indexOutOfRange(i);
      const hi = Math.min((oy === last ? b - last * Ew : Ew) + lastQx, Ew + lastQx, this.latticeCols[tap] ?? indexOutOfRange(tap));
      if (hi <= lo) continue;
      spanLo[m] = lo;
      spanHi[m] = hi;
      // Insertion by start (a handful of spans).
      let p = m;
      while (p > 0 && (spanLo[order[p - 1] ?? 0] ?? 0) > lo) {
        order[p] = order[p - 1] ?? 0;
        p--;
      }
      order[p] = m++;
    }
    let words = 0;
    let end = -Infinity;
    for (let p = 0; p < m; p++) {
      const i = order[p] ?? indexOutOfRange(p);
      const lo = Math.max(spanLo[i] ?? 0, end);
      const hi = spanHi[i] ?? 0;
      if (hi > lo) {
        words += hi - lo;
        end = hi;
      }
    }
    return words;
  }
}

/** Sorts values[0, n) ascending: insertion sort for the usual handful, the native sort (a view) beyond. */
function sortPrefix(values: Int32Array, n: number): void {
  if (n > 48) {
    values.subarray(0, n).sort();
    return;
  }
  for (let i = 1; i < n; i++) {
    const v = values[i] ?? indexOutOfRange(i);
    let j = i - 1;
    for (; j >= 0 && (values[j] ?? indexOutOfRange(j)) > v; j--) values[j + 1] = values[j] ?? indexOutOfRange(j);
    values[j + 1] = v;
  }
}
