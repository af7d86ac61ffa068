/**
 * Which input pixels the windows of a range of ofmap pixels cover, in closed form.
 *
 * Ofmap pixel m = oy*Ew + ox (raster order) reads the window rows [oy*sh, oy*sh + FH) x columns
 * [ox*sw, ox*sw + FW), clipped to the input (SCALE-sim's ceil quirk lets the last window run off).
 * A raster range of ofmap pixels is, per ofmap row, one interval of ox; an input row y is read by
 * the ofmap rows oy with oy*sh <= y < oy*sh + FH, so the pixels of row y covered by a few raster
 * ranges are the union of a few column covers of ox intervals. Counting costs O(FH/sh) per input
 * row, with no per-pixel or per-tap loop.
 */
import type { LayerGeometry } from './layer.js';

export class ConvCoverage {
  private readonly H: number;
  private readonly W: number;
  private readonly FH: number;
  private readonly FW: number;
  private readonly sh: number;
  private readonly sw: number;
  private readonly Eh: number;
  private readonly Ew: number;
  /** Columns of the last window of a row past the input (0 unless the ceil quirk bites; up to FW). */
  private readonly lastClip: number;
  /** Pixels of an input row read by a whole ofmap row. */
  private readonly fullRowPixels: number;
  /** ox intervals of the current input row: [start, end) pairs. */
  private readonly spans: Int32Array;

  constructor(geometry: LayerGeometry) {
    const { conv } = geometry;
    this.H = conv.ifmapHeight;
    this.W = conv.ifmapWidth;
    this.FH = conv.filterHeight;
    this.FW = conv.filterWidth;
    this.sh = conv.strideHeight;
    this.sw = conv.strideWidth;
    this.Eh = geometry.ofmapHeight;
    this.Ew = geometry.ofmapWidth;
    this.lastClip = this.FW - Math.max(0, Math.min(this.FW, this.W - (this.Ew - 1) * this.sw));
    // At most ceil(FH/sh) ofmap rows per input row, each with one interval per range (<= 2).
    this.spans = new Int32Array(4 * (Math.ceil(this.FH / this.sh) + 1));
    this.fullRowPixels = this.addSpan(0, 0, this.Ew) === 2 ? this.columnsCovered(2) : 0;
  }

  /**
   * Input pixels covered by the windows of ofmap pixels [a0, b0) and, if b1 > a1, [a1, b1). The
   * two ranges must be disjoint.
   */
  countPixels(a0: number, b0: number, a1 = 0, b1 = 0): number {
    if (b1 <= a1) return this.countRange(a0, b0);
    if (b0 <= a0) return this.countRange(a1, b1);
    const [lo, hi] = a0 < a1 ? [a0, a1] : [a1, a0];
    const [loEnd, hiEnd] = a0 < a1 ? [b0, b1] : [b1, b0];
    let total = this.countRange(lo, loEnd) + this.countRange(hi, hiEnd);
    // Both ranges read input rows [first row of `hi`, last row of `lo`]: subtract what they share there.
    const { sh, FH, Ew } = this;
    const yEnd = Math.min(this.H, Math.floor((loEnd - 1) / Ew) * sh + FH);
    for (let y = Math.floor(hi / Ew) * sh; y < yEnd; y++) {
      total -= this.rowPixels(y, lo, loEnd, 0, 0) + this.rowPixels(y, hi, hiEnd, 0, 0) - this.rowPixels(y, lo, loEnd, hi, hiEnd);
    }
    return total;
  }

  /**
   * Input pixels under the windows of ofmap pixels [a, b). The ofmap rows strictly between the
   * first and the last are whole, so every input row they read is read whole; only the input rows
   * read by the first or last ofmap row alone are counted one by one.
   */
  private countRange(a: number, b: number): number {
    if (b <= a) return 0;
    const { sh, FH, Ew, H } = this;
    const oyFirst = Math.floor(a / Ew);
    const oyLast = Math.floor((b - 1) / Ew);
    let total = 0;
    if (oyLast - oyFirst < 2) {
      const yEnd = Math.min(H, oyLast * sh + FH);
      for (let y = oyFirst * sh; y < yEnd; y++) total += this.rowPixels(y, a, b, 0, 0);
      return total;
    }
    // Rows read by a whole ofmap row (never past the input: only the last ofmap row can run off).
    const step = Math.min(sh, FH);
    total += ((oyLast - oyFirst - 1) * step + FH - step) * this.fullRowPixels;
    const headEnd = oyFirst * sh + step;
    for (let y = oyFirst * sh; y < headEnd; y++) total += this.rowPixels(y, a, b, 0, 0);
    const tailEnd = Math.min(H, oyLast * sh + FH);
    for (let y = oyLast * sh + FH - step; y < tailEnd; y++) total += this.rowPixels(y, a, b, 0, 0);
    return total;
  }

  /** Pixels of input row y under the windows of ofmap pixels [a0, b0) and [a1, b1) (either may be empty). */
  private rowPixels(y: number, a0: number, b0: number, a1: number, b1: number): number {
    const { FH, sh, Ew, Eh } = this;
    const oyLo = Math.max(0, Math.ceil((y - FH + 1) / sh));
    const oyHi = Math.min(Eh - 1, Math.floor(y / sh));
    let n = 0;
    for (let oy = oyLo; oy <= oyHi; oy++) {
      const rowStart = oy * Ew;
      n = this.addSpan(n, Math.max(0, a0 - rowStart), Math.min(Ew, b0 - rowStart));
      n = this.addSpan(n, Math.max(0, a1 - rowStart), Math.min(Ew, b1 - rowStart));
    }
    return this.columnsCovered(n);
  }

  private addSpan(n: number, start: number, end: number): number {
    if (end <= start) return n;
    this.spans[n] = start;
    this.spans[n + 1] = end;
    return n + 2;
  }

  /**
   * Writes the input pixels (y*W + x) under the windows of ofmap pixels [a, b) into `out`, row by
   * row, columns ascending; returns how many.
   */
  listPixels(a: number, b: number, out: Int32Array): number {
    if (b <= a) return 0;
    const { FH, sh, sw, FW, W, Ew, Eh } = this;
    const oyFirst = Math.floor(a / Ew);
    const oyLast = Math.floor((b - 1) / Ew);
    const yEnd = Math.min(this.H, oyLast * sh + FH);
    const s = this.spans;
    let count = 0;
    for (let y = oyFirst * sh; y < yEnd; y++) {
      const oyLo = Math.max(oyFirst, Math.ceil((y - FH + 1) / sh));
      const oyHi = Math.min(oyLast, Eh - 1, Math.floor(y / sh));
      let n = 0;
      for (let oy = oyLo; oy <= oyHi; oy++) n = this.addSpan(n, Math.max(0, a - oy * Ew), Math.min(Ew, b - oy * Ew));
      this.sortSpans(n);
      let next = 0; // columns below this are listed
      for (let i = 0; i < n; i += 2) {
        const end = s[i + 1] ?? 0;
        for (let ox = s[i] ?? 0; ox < end; ox++) {
          const stop = Math.min(W, ox * sw + FW);
          for (let x = Math.max(next, ox * sw); x < stop; x++) out[count++] = y * W + x;
          next = Math.max(next, stop);
        }
      }
    }
    return count;
  }

  /** Insertion sort of the pairs spans[0, n) by start (a handful of them). */
  private sortSpans(n: number): void {
    const s = this.spans;
    for (let i = 2; i < n; i += 2) {
      const start = s[i] ?? 0;
      const end = s[i + 1] ?? 0;
      let j = i - 2;
      for (; j >= 0 && (s[j] ?? 0) > start; j -= 2) {
        s[j + 2] = s[j] ?? 0;
        s[j + 3] = s[j + 1] ?? 0;
      }
      s[j + 2] = start;
      s[j + 3] = end;
    }
  }

  /** Input columns covered by the windows of the ox intervals spans[0, n) (pairs). */
  private columnsCovered(n: number): number {
    const s = this.spans;
    this.sortSpans(n);
    const { sw, FW, W, Ew } = this;
    let total = 0;
    if (sw > FW) {
      // Windows never overlap: FW columns per distinct ox, less the clipped last window.
      let covered = -1; // ox below this are counted
      for (let i = 0; i < n; i += 2) {
        const start = Math.max(s[i] ?? 0, covered);
        const end = s[i + 1] ?? 0;
        if (end <= start) continue;
        total += (end - start) * FW - (end === Ew ? this.lastClip : 0);
        covered = end;
      }
      return total;
    }
    // Windows of consecutive ox overlap or touch: an ox interval covers one column interval.
    let colEnd = 0; // columns below this are counted
    for (let i = 0; i < n; i += 2) {
      const lo = Math.max((s[i] ?? 0) * sw, colEnd);
      const hi = Math.min(W, ((s[i + 1] ?? 0) - 1) * sw + FW);
      if (hi <= lo) continue;
      total += hi - lo;
      colEnd = hi;
    }
    return total;
  }

  /** The first ofmap pixel m >= from whose window covers input pixel (y, x), or -1. */
  firstCovering(y: number, x: number, from: number): number {
    const { FH, FW, sh, sw, Eh, Ew } = this;
    const oyLo = Math.max(0, Math.ceil((y - FH + 1) / sh));
    const oyHi = Math.min(Eh - 1, Math.floor(y / sh));
    const oxLo = Math.max(0, Math.ceil((x - FW + 1) / sw));
    const oxHi = Math.min(Ew - 1, Math.floor(x / sw));
    if (oxLo > oxHi) return -1;
    for (let oy = oyLo; oy <= oyHi; oy++) {
      const rowStart = oy * Ew;
      if (rowStart + oxHi >= from) return Math.max(from, rowStart + oxLo);
    }
    return -1;
  }
}
