/**
 * A layer as SCALE-sim sees it: a convolution (a GEMM is the 1 x K "mnk" convolution) and the
 * addresses of its three operand matrices (`compute/operand_matrix.py`, docs/scalesim-model.md §3):
 *   ifmap  M x K  im2col of an NHWC input, -1 where a window runs off the input (ceil quirk)
 *   filter K x N  address n*K + k
 *   ofmap  M x N  (only element counts matter to the memory model)
 * Addresses are relative to each operand's base. SCALE-sim adds Ifmap/Filter/OfmapOffset to them
 * and then reads the value -1 as "no element" everywhere (`addr == -1` in every buffer), so the one
 * element an offset puts at -1 vanishes from the layer's traffic (`AddressOffsets`); other negative
 * addresses stay real. Every operand has its own buffer, so nothing else depends on the offsets.
 */
import { indexOutOfRange } from '../../errors.js';
import type { Gemm } from '../../layers/types.js';

/** A SCALE-sim topology row: conv layer parameters (H, W, R, S, C, N, strides). */
export interface ConvShape {
  ifmapHeight: number;
  ifmapWidth: number;
  filterHeight: number;
  filterWidth: number;
  channels: number;
  numFilters: number;
  strideHeight: number;
  strideWidth: number;
}

export interface LayerGeometry {
  conv: ConvShape;
  ofmapHeight: number;
  ofmapWidth: number;
  /** GEMM view: M = ofmap pixels per filter, N = filters, K = window size. */
  gemm: Gemm;
}

/** SCALE-sim's ofmap size: ceil((H - R + s) / s), i.e. no padding but a ceiling. */
export function convGeometry(conv: ConvShape): LayerGeometry {
  const ofmapHeight = Math.ceil((conv.ifmapHeight - conv.filterHeight + conv.strideHeight) / conv.strideHeight);
  const ofmapWidth = Math.ceil((conv.ifmapWidth - conv.filterWidth + conv.strideWidth) / conv.strideWidth);
  const gemm = {
    m: ofmapHeight * ofmapWidth,
    n: conv.numFilters,
    k: conv.filterHeight * conv.filterWidth * conv.channels,
  };
  return { conv, ofmapHeight, ofmapWidth, gemm };
}

/** The "mnk" mapping of `topology_utils.load_arrays_gemm`: H=M, W=K, R=1, S=K, C=1, N, stride 1. */
export function gemmConvShape(gemm: Gemm): ConvShape {
  return {
    ifmapHeight: gemm.m,
    ifmapWidth: gemm.k,
    filterHeight: 1,
    filterWidth: gemm.k,
    channels: 1,
    numFilters: gemm.n,
    strideHeight: 1,
    strideWidth: 1,
  };
}

export function gemmGeometry(gemm: Gemm): LayerGeometry {
  return convGeometry(gemmConvShape(gemm));
}

/** An operand matrix: element (i, j) -> address in [0, addressSpace), or -1 (no data). */
export interface OperandMatrix {
  readonly addressSpace: number;
  addr(i: number, j: number): number;
}

/** SCALE-sim's base address of each operand (`IfmapOffset`, `FilterOffset`, `OfmapOffset`). */
export interface AddressOffsets {
  ifmap: number;
  filter: number;
  ofmap: number;
}

/** The relative address an offset turns into SCALE-sim's -1, or -1 if none of [0, space) does. */
export function holeAddress(offset: number, addressSpace: number): number {
  const hole = -1 - offset;
  return hole >= 0 && hole < addressSpace ? hole : -1;
}

/**
 * A matrix whose element at relative address `hole` reads as -1 (no element), as SCALE-sim sees
 * it when the operand's offset puts that element at address -1.
 */
export class HoledMatrix implements OperandMatrix {
  readonly addressSpace: number;
  constructor(
    private readonly inner: OperandMatrix,
    readonly hole: number,
  ) {
    this.addressSpace = inner.addressSpace;
  }

  addr(i: number, j: number): number {
    const a = this.inner.addr(i, j);
    return a === this.hole ? -1 : a;
  }
}

/** addr = i*rowStride + j*colStride: the filter (K x N) and every GEMM ifmap (M x K). */
export class LinearMatrix implements OperandMatrix {
  constructor(
    readonly rowStride: number,
    readonly colStride: number,
    readonly addressSpace: number,
  ) {}

  addr(i: number, j: number): number {
    return i * this.rowStride + j * this.colStride;
  }
}

/**
 * The im2col ifmap of a convolution, with the per-row and per-column parts of the address
 * precomputed so an element costs two loads, two compares and an add. The tables are built on the
 * first address asked for: the closed-form CALC walks never ask.
 */
export class Im2colMatrix implements OperandMatrix {
  readonly addressSpace: number;
  private rowBase = new Int32Array(0);
  private rowY = new Int32Array(0);
  private rowX = new Int32Array(0);
  private colOffset = new Int32Array(0);
  private colY = new Int32Array(0);
  private colX = new Int32Array(0);
  private readonly height: number;
  private readonly width: number;

  constructor(private readonly geom: LayerGeometry) {
    const { conv } = geom;
    this.height = conv.ifmapHeight;
    this.width = conv.ifmapWidth;
    this.addressSpace = conv.ifmapHeight * conv.ifmapWidth * conv.channels;
  }

  private buildTables(): void {
    const geom = this.geom;
    const { conv } = geom;
    const { m, k } = geom.gemm;
    this.rowBase = new Int32Array(m);
    this.rowY = new Int32Array(m);
    this.rowX = new Int32Array(m);
    for (let i = 0; i < m; i++) {
      const y = Math.floor(i / geom.ofmapWidth) * conv.strideHeight;
      const x = (i % geom.ofmapWidth) * conv.strideWidth;
      this.rowY[i] = y;
      this.rowX[i] = x;
      this.rowBase[i] = (y * conv.ifmapWidth + x) * conv.channels;
    }
    this.colOffset = new Int32Array(k);
    this.colY = new Int32Array(k);
    this.colX = new Int32Array(k);
    const rowWords = conv.filterWidth * conv.channels;
    for (let j = 0; j < k; j++) {
      const dy = Math.floor(j / rowWords);
      const rest = j % rowWords;
      const dx = Math.floor(rest / conv.channels);
      this.colY[j] = dy;
      this.colX[j] = dx;
      this.colOffset[j] = (dy * conv.ifmapWidth + dx) * conv.channels + (rest % conv.channels);
    }
  }

  addr(i: number, j: number): number {
    if (this.rowBase.length === 0) this.buildTables(); // m >= 1: empty means not built yet
    if ((this.rowY[i] ?? indexOutOfRange(i)) + (this.colY[j] ?? indexOutOfRange(j)) >= this.height || (this.rowX[i] ?? indexOutOfRange(i)) + (this.colX[j] ?? indexOutOfRange(j)) >= this.width) return -1;
    return (this.rowBase[i] ?? indexOutOfRange(i)) + (this.colOffset[j] ?? indexOutOfRange(j));
  }
}

export interface LayerOperands {
  geometry: LayerGeometry;
  ifmap: OperandMatrix;
  filter: OperandMatrix;
  /** Relative ofmap address (N*m + n) that SCALE-sim sees as -1 and never writes; -1 if none. */
  ofmapHole: number;
  /**
   * Lowest relative address whose absolute address is >= 0. CALC mode times its first DRAM epoch
   * from the first demand line whose largest address is > -1, which a negative offset can delay.
   */
  requestFloor: { ifmap: number; filter: number };
}

export const NO_OFFSETS: AddressOffsets = { ifmap: 0, filter: 0, ofmap: 0 };

/** A GEMM's ifmap is dense row-major (address m*K + k), so it needs no im2col tables. */
export function layerOperands(geometry: LayerGeometry, offsets: AddressOffsets = NO_OFFSETS): LayerOperands {
  const { conv, gemm } = geometry;
  const isPlainGemm =
    conv.filterHeight === 1 && conv.filterWidth === conv.ifmapWidth && conv.channels === 1 &&
    conv.strideHeight === 1 && conv.strideWidth === 1;
  const ifmap = isPlainGemm
    ? new LinearMatrix(gemm.k, 1, gemm.m * gemm.k)
    : new Im2colMatrix(geometry);
  const filter = new LinearMatrix(1, gemm.k, gemm.k * gemm.n);
  const withHole = (matrix: OperandMatrix, offset: number): OperandMatrix => {
    const hole = holeAddress(offset, matrix.addressSpace);
    return hole < 0 ? matrix : new HoledMatrix(matrix, hole);
  };
  return {
    geometry,
    ifmap: withHole(ifmap, offsets.ifmap),
    filter: withHole(filter, offsets.filter),
    ofmapHole: holeAddress(offsets.ofmap, gemm.m * gemm.n),
    requestFloor: { ifmap: Math.max(0, -offsets.ifmap), filter: Math.max(0, -offsets.filter) },
  };
}

/** True if an offset removes an element (the exact shortcuts assume every element is real). */
export function hasHoles(operands: LayerOperands): boolean {
  return operands.ifmap instanceof HoledMatrix || operands.filter instanceof HoledMatrix || operands.ofmapHole >= 0;
}

/**
 * Distinct ifmap addresses the layer reads: input rows and columns covered by some window,
 * times channels. Used to skip walking an operand that never leaves half of its SRAM.
 */
export function distinctIfmapWords(geometry: LayerGeometry): number {
  const { conv } = geometry;
  const coveredRows = coveredExtent(geometry.ofmapHeight, conv.strideHeight, conv.filterHeight, conv.ifmapHeight);
  const coveredCols = coveredExtent(geometry.ofmapWidth, conv.strideWidth, conv.filterWidth, conv.ifmapWidth);
  return coveredRows * coveredCols * conv.channels;
}

function coveredExtent(outputs: number, stride: number, window: number, size: number): number {
  if (stride <= window) return Math.min(size, (outputs - 1) * stride + window);
  let covered = 0;
  for (let o = 0; o < outputs; o++) covered += Math.max(0, Math.min(window, size - o * stride));
  return covered;
}
