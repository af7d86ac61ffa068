/**
 * Chips of many identical cores (GPU SMs with tensor cores, TPU TensorCores with MXUs): a profile
 * with `cores` > 1 (docs/scalesim-model.md §11).
 *
 * A GEMM's M x N output is cut into tiles of tileM x tileN; tiles are dealt to the cores, so the
 * busiest core runs ceil(tiles / cores) of them one after another, each costed by the per-core
 * SCALE-sim-exact model (`costTile`: the core's `arrays` arrays, its own SRAMs) for the tile's GEMM
 * (tileM, tileN, K). Tile edges are balanced (ceil(M / ceil(M / T))), so every tile costs at most
 * the first one's cycles; the tile size is searched over powers of two whose output tile fits the
 * core's ofmap SRAM, keeping the fastest (as a GEMM library picks its tile per shape). The GEMM
 * also needs its operands moved: each operand once over HBM (the L2 keeps the reuse between
 * tiles) and every tile's A and B panels plus C over the L2; with no L2 in the profile, the tile
 * panels go over HBM. cycles = max(compute, memory).
 */
import type { Gemm } from '../layers/types.js';
import type { GemmCost, HardwareProfile } from './types.js';

/** Cores of a profile (1 for single-core profiles). */
export function coresOf(profile: HardwareProfile): number {
  return profile.cores ?? 1;
}

/** Multiply-accumulate units of the whole chip: cores x arrays x rows x cols. */
export function processingElementsOf(profile: HardwareProfile): number {
  return coresOf(profile) * profile.arrays * profile.arrayRows * profile.arrayCols;
}

/** Peak MAC throughput in FLOP/s (2 FLOPs per MAC): what a vendor quotes as dense peak. */
export function peakFlopsPerSecond(profile: HardwareProfile): number {
  return 2 * processingElementsOf(profile) * profile.clockMHz * 1e6;
}

/**
 * One core as a single-core profile: the per-core SRAMs and arrays, an even share of the HBM
 * bandwidth (what a USER-mode walk of one tile sees), no L2.
 */
export function coreProfileOf(profile: HardwareProfile): HardwareProfile {
  const { cores: _cores, l2Bytes: _l2, l2BytesPerCycle: _l2bw, ...core } = profile;
  return {
    ...core,
    name: `${profile.name} (one core)`,
    dramBandwidthWordsPerCycle: profile.dramBandwidthWordsPerCycle / coresOf(profile),
  };
}

export interface CoreTiling {
  tileM: number;
  tileN: number;
  tilesM: number;
  tilesN: number;
  tilesPerCore: number;
  /** Cycles of one tile on one core (the per-core SCALE-sim model). */
  tileCycles: number;
  computeCycles: number;
  memoryCycles: number;
}

/** Smallest tile edge tried: below it a tile's fill and drain dominate any real kernel. */
const MIN_TILE_EDGE = 16;

/** Candidate tile edges for a dim of `size`: powers of two from 16 up to the first >= size, and size. */
function edgeCandidates(size: number): number[] {
  const edges = new Set<number>();
  for (let t = Math.min(MIN_TILE_EDGE, size); ; t *= 2) {
    edges.add(Math.min(t, size));
    if (t >= size) break;
  }
  return [...edges];
}

/** Balanced edge: `count` = ceil(size / edge) tiles of ceil(size / count) (edges differ by at most 1). */
function balanced(size: number, edge: number): { count: number; edge: number } {
  const count = Math.ceil(size / edge);
  return { count, edge: Math.ceil(size / count) };
}

/** Memory cycles of a GEMM tiled tileM x tileN (bytes over HBM, and over the L2 if there is one). */
export function memoryCyclesOf(gemm: Gemm, profile: HardwareProfile, tilesM: number, tilesN: number): number {
  const { m, n, k } = gemm;
  const eb = profile.elementBytes;
  const operandBytes = (m * k + k * n + m * n) * eb;
  // Every tile reads its A panel (tileM x K) and B panel (K x tileN): A is read tilesN times, B tilesM times.
  const tiledBytes = (tilesN * m * k + tilesM * k * n + m * n) * eb;
  const hbmBytesPerCycle = profile.dramBandwidthWordsPerCycle * eb;
  if (profile.l2Bytes === undefined || profile.l2BytesPerCycle === undefined) return Math.ceil(tiledBytes / hbmBytesPerCycle);
  return Math.max(Math.ceil(operandBytes / hbmBytesPerCycle), Math.ceil(tiledBytes / profile.l2BytesPerCycle));
}

/** The fastest tiling (ties: fewer tiles) and its cycles. `costTile` is the per-core model. */
export function chooseTiling(gemm: Gemm, profile: HardwareProfile, costTile: (tile: Gemm) => GemmCost): CoreTiling {
  const cores = coresOf(profile);
  const maxTileWords = Math.floor(profile.ofmapSramBytes / profile.elementBytes);
  let best: CoreTiling | undefined;
  for (const tm of edgeCandidates(gemm.m)) {
    const rows = balanced(gemm.m, tm);
    for (const tn of edgeCandidates(gemm.n)) {
      const cols = balanced(gemm.n, tn);
      // A tile's outputs stay in the core's ofmap SRAM until done (the smallest tile is always allowed).
      if (rows.edge * cols.edge > maxTileWords && !(tm === Math.min(MIN_TILE_EDGE, gemm.m) && tn === Math.min(MIN_TILE_EDGE, gemm.n))) continue;
      const tiles = rows.count * cols.count;
      const tilesPerCore = Math.ceil(tiles / cores);
      const tileCycles = costTile({ m: rows.edge, n: cols.edge, k: gemm.k }).cycles;
      const computeCycles = tilesPerCore * tileCycles;
      const memoryCycles = memoryCyclesOf(gemm, profile, rows.count, cols.count);
      const candidate: CoreTiling = { tileM: rows.edge, tileN: cols.edge, tilesM: rows.count, tilesN: cols.count, tilesPerCore, tileCycles, computeCycles, memoryCycles };
      if (best === undefined) {
        best = candidate;
        continue;
      }
      const time = Math.max(computeCycles, memoryCycles);
      const bestTime = Math.max(best.computeCycles, best.memoryCycles);
      if (time < bestTime || (time === bestTime && tiles < best.tilesM * best.tilesN)) best = candidate;
    }
  }
  if (best === undefined) throw new Error('multicore: no tiling'); // unreachable: the smallest tile is always tried
  return best;
}

/** Cost of a GEMM on a multi-core profile (see the module comment). */
export function multicoreGemmCost(gemm: Gemm, profile: HardwareProfile, costTile: (tile: Gemm) => GemmCost): GemmCost {
  const tiling = chooseTiling(gemm, profile, costTile);
  const tile = costTile({ m: tiling.tileM, n: tiling.tileN, k: gemm.k });
  const cycles = Math.max(tiling.computeCycles, tiling.memoryCycles);
  const macs = gemm.m * gemm.n * gemm.k;
  // Padding of the balanced tiles (tiles x tile outputs >= M x N) lowers the mapping figures.
  const padding = (gemm.m * gemm.n) / (tiling.tilesM * tiling.tilesN * tiling.tileM * tiling.tileN);
  return {
    cycles,
    stallCycles: cycles - tiling.computeCycles + tiling.tilesPerCore * tile.stallCycles,
    overallUtilPct: (100 * macs) / (cycles * processingElementsOf(profile)),
    mappingEfficiencyPct: tile.mappingEfficiencyPct * padding,
    computeUtilPct: tile.computeUtilPct * padding,
  };
}
