/**
 * One `gemm` trio and `passes` object per GEMM geometry, shared by every layer of that geometry
 * (layers are read-only once lowered). A 100k-node graph of repeated blocks otherwise holds eleven
 * identical small objects per layer, which the garbage collector copies and marks again and again.
 * The plan shares its per-rank passes the same way (`passesOf`, frozen: a writer that changed one
 * layer's would change all of them).
 */
import { innerMap } from '../maps.js';
import { makePasses, type Gemm, type GemmWork, type Layer, type LayerPasses, type VectorWork } from './types.js';

type LayerWork = { gemm: Layer['gemm']; passes: LayerPasses };

/** A vector or embedding layer's GEMM: none. */
const NO_GEMM: Gemm = { m: 0, n: 0, k: 0 };
const NO_GEMM_TRIO: Layer['gemm'] = { fwd: NO_GEMM, ig: NO_GEMM, wg: NO_GEMM };

export class SharedPasses {
  /** By m, n, k, count: number keys, no string per lookup. */
  private readonly byGeometry = new Map<number, Map<number, Map<number, Map<number, LayerWork>>>>();
  private readonly byVectorWork = new Map<string, LayerWork>();
  private lastVector: LayerWork | undefined;
  /** Every layer without GEMM passes shares these empty lists. */
  private readonly none: GemmWork[] = [];
  private readonly noPasses: LayerPasses = { fwd: this.none, ig: this.none, wg: this.none };
  private readonly noWork: LayerWork = { gemm: NO_GEMM_TRIO, passes: this.noPasses };

  /** The last geometry asked for and its work (runs of layers of one geometry skip the maps). */
  private last: { m: number; n: number; k: number; count: number; work: LayerWork } | undefined;

  /** The passes of `count` GEMMs of `gemm` (kept on first use). */
  gemm(gemm: Gemm, count: number): LayerWork {
    return this.work(gemm.m, gemm.n, gemm.k, count, gemm);
  }

  /** The work of `count` GEMMs of m x n x k; a new geometry keeps `gemm` (or a new object of those dims). */
  private work(m: number, n: number, k: number, count: number, gemm?: Gemm): LayerWork {
    const last = this.last;
    if (last !== undefined && last.m === m && last.n === n && last.k === k && last.count === count) return last.work;
    const byCount = innerMap(innerMap(innerMap(this.byGeometry, m), n), k);
    let work = byCount.get(count);
    if (work === undefined) {
      work = makePasses(gemm ?? { m, n, k }, count);
      byCount.set(count, work);
    }
    this.last = { m, n, k, count, work };
    return work;
  }

  /** The passes of `count` GEMMs of m x n x k (their own objects on first use), frozen. */
  passesOf(m: number, n: number, k: number, count: number): LayerPasses {
    const p = this.work(m, n, k, count).passes;
    return Object.isFrozen(p) ? p : frozenPasses(p);
  }

  /** No GEMM passes (an embedding), or a vector layer's element work only (`passes.vector`: one object per distinct work). */
  noGemm(gemm: Gemm, vector: VectorWork | undefined): LayerWork {
    if (gemm.m !== 0 || gemm.n !== 0 || gemm.k !== 0) return { gemm: { fwd: gemm, ig: gemm, wg: gemm }, passes: vector ? this.vectorWork(vector).passes : this.noPasses };
    // The common case: one shared work object per distinct vector work (or none), not one per layer.
    return vector ? this.vectorWork(vector) : this.noWork;
  }

  private vectorWork(vector: VectorWork): LayerWork {
    // Runs of layers with the same work (a repeated block's activations) skip building the key.
    const lastWork = this.lastVector;
    const last = lastWork?.passes.vector;
    if (lastWork !== undefined && last !== undefined && last.opClass === vector.opClass && last.elements === vector.elements && last.bytesIn === vector.bytesIn && last.bytesOut === vector.bytesOut && last.hasParams === vector.hasParams) {
      return lastWork;
    }
    const key = `${vector.opClass} ${vector.elements} ${vector.bytesIn} ${vector.bytesOut} ${vector.hasParams}`;
    let work = this.byVectorWork.get(key);
    if (work === undefined) {
      work = { gemm: NO_GEMM_TRIO, passes: { fwd: this.none, ig: this.none, wg: this.none, vector } };
      this.byVectorWork.set(key, work);
    }
    this.lastVector = work;
    return work;
  }
}

/** Shared objects are frozen: a writer that changed one layer's would change all of them. */
function frozenPasses(p: LayerPasses): LayerPasses {
  for (const list of [p.fwd, p.ig, p.wg]) {
    for (const w of list) Object.freeze(Object.freeze(w).gemm);
    Object.freeze(list);
  }
  return Object.freeze(p);
}
