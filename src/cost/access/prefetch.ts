/**
 * USER-mode prefetch order and its 100 "sets" (`create_*_prefetch_mat` in the compute modules,
 * `read_buffer.set_fetch_matrix` / `prepare_hashed_buffer`; docs/scalesim-model.md §7c).
 *
 * The prefetch matrix stacks each fold's operand tile (padded to the array with -1) once per
 * distinct tile, and for skewed operands reads it anti-diagonal by anti-diagonal. Its real
 * elements, in that order, are cut into sets of ceil(S/100) elements (duplicates counted); a
 * trailing, possibly empty, set always follows. The read buffer's hit test asks whether an
 * address belongs to any set of its active window, so we index address -> set ids (CSR).
 */
import { indexOutOfRange } from '../../errors.js';
import type { Dataflow } from '../types.js';
import { type ArrayShape, foldCounts, spatialMapping } from '../systolic/mapping.js';
import type { LayerOperands, OperandMatrix } from './layer.js';

/** The stacked prefetch matrix of one operand: `tiles` blocks of rowsPerTile x width. */
export interface StackedOperand {
  matrix: OperandMatrix;
  tiles: number;
  rowsPerTile: number;
  width: number;
  /** Extent of the folded dimension; columns past it are -1 padding. */
  foldedTotal: number;
  /** true: the tile row indexes the matrix's i dimension and the folded column its j. */
  rowIsI: boolean;
  /** Read anti-diagonally (SCALE-sim's fix for skewed demand, issues #15/#16). */
  rolled: boolean;
}

export function prefetchLayout(
  operands: LayerOperands,
  array: ArrayShape,
  dataflow: Dataflow,
  operand: 'ifmap' | 'filter',
): StackedOperand {
  const { m, n, k } = operands.geometry.gemm;
  const { rowFolds, colFolds } = foldCounts(spatialMapping(operands.geometry.gemm, dataflow), array);
  const R = array.rows;
  const C = array.cols;
  const ifmap = operands.ifmap;
  const filter = operands.filter;
  const key = `${dataflow}-${operand}`;
  switch (key) {
    case 'os-ifmap':
      return { matrix: ifmap, tiles: rowFolds, rowsPerTile: k, width: R, foldedTotal: m, rowIsI: false, rolled: true };
    case 'os-filter':
      return { matrix: filter, tiles: colFolds, rowsPerTile: k, width: C, foldedTotal: n, rowIsI: true, rolled: true };
    case 'ws-ifmap':
      return { matrix: ifmap, tiles: rowFolds, rowsPerTile: m, width: R, foldedTotal: k, rowIsI: true, rolled: true };
    case 'ws-filter':
      return { matrix: filter, tiles: colFolds, rowsPerTile: k, width: C, foldedTotal: n, rowIsI: true, rolled: false };
    case 'is-ifmap':
      return { matrix: ifmap, tiles: colFolds, rowsPerTile: k, width: C, foldedTotal: m, rowIsI: false, rolled: false };
    default: // is-filter
      return { matrix: filter, tiles: rowFolds, rowsPerTile: n, width: R, foldedTotal: k, rowIsI: false, rolled: true };
  }
}

function stackedElement(s: StackedOperand, row: number, col: number): number {
  const tile = Math.floor(row / s.rowsPerTile);
  const r = row - tile * s.rowsPerTile;
  const f = tile * s.width + col;
  if (f >= s.foldedTotal) return -1;
  return s.rowIsI ? s.matrix.addr(r, f) : s.matrix.addr(f, r);
}

/** Real addresses of the prefetch matrix in fetch order, and where each tile's words lie in it. */
export interface PrefetchSequence {
  addresses: Int32Array;
  /** Per stacked tile: first and last position of its words in `addresses`. */
  tileFirst: Int32Array;
  tileLast: Int32Array;
}

export function prefetchSequence(s: StackedOperand): PrefetchSequence {
  const rows = s.tiles * s.rowsPerTile;
  const cols = s.width;
  const out = new Int32Array(rows * cols);
  const tileFirst = new Int32Array(s.tiles).fill(-1);
  const tileLast = new Int32Array(s.tiles).fill(-1);
  let n = 0;
  const take = (row: number, col: number): void => {
    const a = stackedElement(s, row, col);
    if (a < 0) return;
    const tile = Math.floor(row / s.rowsPerTile);
    if ((tileFirst[tile] ?? indexOutOfRange(tile)) < 0) tileFirst[tile] = n;
    tileLast[tile] = n;
    out[n++] = a;
  };
  if (!s.rolled) {
    for (let row = 0; row < rows; row++) for (let col = 0; col < cols; col++) take(row, col);
  } else {
    // Anti-diagonals d = row + col, each from its bottom-left end to its top-right end.
    for (let d = 0; d < rows + cols - 1; d++) {
      const rowLo = Math.max(0, d - cols + 1);
      for (let row = Math.min(d, rows - 1); row >= rowLo; row--) take(row, d - row);
    }
  }
  return { addresses: out.subarray(0, n), tileFirst, tileLast };
}

/** Address -> ids of the sets holding it, plus the figures the read buffer needs. */
export interface SetIndex {
  /** Number of sets, including the trailing (possibly empty) one. */
  setCount: number;
  /** CSR: the set ids of address a are ids[offsets[a] .. offsets[a+1]), ascending. */
  offsets: Int32Array;
  ids: Int32Array;
  /** Lines of the fetch matrix: all prefetch elements, padding included, in `bandwidth`-wide rows. */
  fetchRows: number;
  /** Per stacked tile: the lowest and highest set holding its words (-1 for an empty tile). */
  tileMinSet: Int32Array;
  tileMaxSet: Int32Array;
}

export function buildSetIndex(s: StackedOperand, elemsPerSet: number, bandwidthWordsPerCycle: number): SetIndex {
  const sequence = prefetchSequence(s);
  const seq = sequence.addresses;
  const space = s.matrix.addressSpace;
  const lastSet = new Int32Array(space).fill(-1);
  const counts = new Int32Array(space + 1);
  for (let p = 0; p < seq.length; p++) {
    const a = seq[p] ?? indexOutOfRange(p);
    const set = Math.floor(p / elemsPerSet);
    if (lastSet[a] !== set) {
      lastSet[a] = set;
      counts[a + 1] = (counts[a + 1] ?? indexOutOfRange(a + 1)) + 1;
    }
  }
  const offsets = counts; // prefix sums in place
  for (let a = 0; a < space; a++) offsets[a + 1] = (offsets[a + 1] ?? indexOutOfRange(a + 1)) + (offsets[a] ?? indexOutOfRange(a));
  const ids = new Int32Array(offsets[space] ?? indexOutOfRange(space));
  const fill = offsets.slice(0, space);
  lastSet.fill(-1);
  for (let p = 0; p < seq.length; p++) {
    const a = seq[p] ?? indexOutOfRange(p);
    const set = Math.floor(p / elemsPerSet);
    if (lastSet[a] !== set) {
      lastSet[a] = set;
      const slot = fill[a] ?? indexOutOfRange(a);
      fill[a] = slot + 1;
      ids[slot] = set;
    }
  }
  const totalElems = s.tiles * s.rowsPerTile * s.width;
  const setOf = (position: number): number => (position < 0 ? -1 : Math.floor(position / elemsPerSet));
  return {
    setCount: Math.floor(seq.length / elemsPerSet) + 1,
    offsets,
    ids,
    fetchRows: Math.ceil(totalElems / bandwidthWordsPerCycle),
    tileMinSet: sequence.tileFirst.map(setOf),
    tileMaxSet: sequence.tileLast.map(setOf),
  };
}
