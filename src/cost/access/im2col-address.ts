/**
 * The im2col ifmap address of one element computed from scratch (docs/scalesim-model.md §3): no
 * tables, so locating the first and last demand lines of a layer whose reads are counted in
 * closed form costs a few hundred divisions instead of O(M + K) set-up (layer.ts Im2colMatrix,
 * which the word-by-word walks use).
 */
import type { LayerGeometry, OperandMatrix } from './layer.js';

export class Im2colAddress implements OperandMatrix {
  readonly addressSpace: number;
  constructor(private readonly geometry: LayerGeometry) {
    const { conv } = geometry;
    this.addressSpace = conv.ifmapHeight * conv.ifmapWidth * conv.channels;
  }

  addr(i: number, j: number): number {
    const { conv, ofmapWidth } = this.geometry;
    const oy = Math.floor(i / ofmapWidth);
    const y = oy * conv.strideHeight;
    const x = (i - oy * ofmapWidth) * conv.strideWidth;
    const rowWords = conv.filterWidth * conv.channels;
    const dy = Math.floor(j / rowWords);
    const rest = j - dy * rowWords;
    const dx = Math.floor(rest / conv.channels);
    if (y + dy >= conv.ifmapHeight || x + dx >= conv.ifmapWidth) return -1;
    return ((y + dy) * conv.ifmapWidth + x + dx) * conv.channels + rest - dx * conv.channels;
  }
}
