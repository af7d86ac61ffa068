/**
 * First and last demand position of every input pixel in an os convolution's ifmap fold tile,
 * per pixel in O(FH/sh) instead of listing the tile's R x FH x FW window taps.
 *
 * os fold tile [m0, m1) streams ofmap pixel m = oy*Ew + ox down column c = m - m0; window tap
 * (dy, dx) reads the C channels of input pixel (oy*sh + dy, ox*sw + dx) on lines
 * c + (dy*FW + dx)*C + ch. For a fixed input pixel (Y, X), dy = Y - oy*sh and dx = X - ox*sw, so
 * the line of channel 0 is
 *   (oy*Ew + ox - m0) + ((Y - oy*sh)*FW + X - ox*sw)*C,
 * linear in ox with slope 1 - sw*C <= 0: within an ofmap row the earliest occurrence is the
 * window with the largest ox (the smallest if the slope is 0: same line, smaller column) and the
 * latest the smallest ox (the largest). Comparing the at most ceil(FH/sh) ofmap rows gives the
 * pixel's first and last (line, column). Every channel ch occurs at those lines + ch, in the same
 * columns (walk-calc-pixels.ts).
 */
import type { LayerGeometry } from './layer.js';
import type { ConvCoverage } from './conv-coverage.js';

export class OsTileOccurrences {
  /** The tile's pixels (y*W + x) and their first and last (line, column) of channel 0. */
  readonly pixel: Int32Array;
  readonly firstLine: Int32Array;
  readonly firstCol: Int32Array;
  readonly lastLine: Int32Array;
  readonly lastCol: Int32Array;
  /**
   * Ofmap pixels whose windows cover each pixel: the last one before the tile, the first one
   * after it (-1: none), and the first and last of all.
   */
  readonly coverBefore: Int32Array;
  readonly coverAfter: Int32Array;
  readonly coverFirst: Int32Array;
  readonly coverLast: Int32Array;
  count = 0;
  /** Ofmap rows (columns) whose windows cover input row y (column x): [lo, hi] per y (x). */
  private readonly oyLo: Int32Array;
  private readonly oyHi: Int32Array;
  private readonly oxLo: Int32Array;
  private readonly oxHi: Int32Array;
  /** The row fold the arrays describe (-1: none yet). */
  foldRow = -1;

  constructor(
    private readonly geometry: LayerGeometry,
    private readonly coverage: ConvCoverage,
    private readonly arrayRows: number,
  ) {
    const { conv } = geometry;
    const size = Math.min(conv.ifmapHeight * conv.ifmapWidth, arrayRows * conv.filterHeight * conv.filterWidth);
    this.pixel = new Int32Array(size);
    this.firstLine = new Int32Array(size);
    this.firstCol = new Int32Array(size);
    this.lastLine = new Int32Array(size);
    this.lastCol = new Int32Array(size);
    this.coverBefore = new Int32Array(size);
    this.coverAfter = new Int32Array(size);
    this.coverFirst = new Int32Array(size);
    this.coverLast = new Int32Array(size);
    const { filterHeight: FH, filterWidth: FW, strideHeight: sh, strideWidth: sw } = conv;
    this.oyLo = Int32Array.from({ length: conv.ifmapHeight }, (_, y) => Math.max(0, Math.ceil((y - FH + 1) / sh)));
    this.oyHi = Int32Array.from({ length: conv.ifmapHeight }, (_, y) => Math.min(geometry.ofmapHeight - 1, Math.floor(y / sh)));
    this.oxLo = Int32Array.from({ length: conv.ifmapWidth }, (_, x) => Math.max(0, Math.ceil((x - FW + 1) / sw)));
    this.oxHi = Int32Array.from({ length: conv.ifmapWidth }, (_, x) => Math.min(geometry.ofmapWidth - 1, Math.floor(x / sw)));
  }

  /** Fills the arrays for row fold fr. */
  load(fr: number): this {
    if (fr === this.foldRow) return this;
    this.foldRow = fr;
    const { conv, ofmapWidth: Ew } = this.geometry;
    const { filterWidth: FW, strideHeight: sh, strideWidth: sw, channels: C, ifmapWidth: W } = conv;
    const m0 = fr * this.arrayRows;
    const m1 = Math.min(this.geometry.gemm.m, m0 + this.arrayRows);
    this.count = this.coverage.listPixels(m0, m1, this.pixel);
    const slope = 1 - sw * C;
    for (let i = 0; i < this.count; i++) {
      const p = this.pixel[i] ?? 0;
      const Y = Math.floor(p / W);
      const X = p - Y * W;
      const oyLo = this.oyLo[Y] ?? 0;
      const oyHi = this.oyHi[Y] ?? -1;
      const oxLo = this.oxLo[X] ?? 0;
      const oxHi = this.oxHi[X] ?? -1;
      let firstLine = Infinity;
      let firstCol = Infinity;
      let lastLine = -Infinity;
      let lastCol = -Infinity;
      let before = -1;
      let after = -1;
      for (let oy = oyLo; oy <= oyHi; oy++) {
        const rowStart = oy * Ew;
        // Covering ofmap pixels of this row: [rowStart + oxLo, rowStart + oxHi].
        if (rowStart + oxLo < m0) before = Math.min(rowStart + oxHi, m0 - 1);
        if (after < 0 && rowStart + oxHi >= m1) after = Math.max(rowStart + oxLo, m1);
        const lo = Math.max(oxLo, m0 - rowStart);
        const hi = Math.min(oxHi, m1 - 1 - rowStart);
        if (lo > hi) continue;
        const base = rowStart - m0 + ((Y - oy * sh) * FW + X) * C; // line of ox = 0, less ox*sw*C
        const early = slope < 0 ? hi : lo;
        const late = slope < 0 ? lo : hi;
        const earlyLine = base + early * slope;
        const earlyCol = rowStart + early - m0;
        if (earlyLine < firstLine || (earlyLine === firstLine && earlyCol < firstCol)) {
          firstLine = earlyLine;
          firstCol = earlyCol;
        }
        const lateLine = base + late * slope;
        const lateCol = rowStart + late - m0;
        if (lateLine > lastLine || (lateLine === lastLine && lateCol > lastCol)) {
          lastLine = lateLine;
          lastCol = lateCol;
        }
      }
      this.firstLine[i] = firstLine;
      this.firstCol[i] = firstCol;
      this.lastLine[i] = lastLine;
      this.lastCol[i] = lastCol;
      this.coverBefore[i] = before;
      this.coverAfter[i] = after;
      this.coverFirst[i] = oyLo * Ew + oxLo;
      this.coverLast[i] = oyHi * Ew + oxHi;
    }
    return this;
  }
}
