/**
 * One `gemm` trio and `passes` object per GEMM geometry, shared by every layer of that geometry
 * (layers are read-only once lowered). A 100k-node graph of repeated blocks otherwise holds eleven
 * identical small objects per layer, which the garbage collector copies and marks again and again.
 * The plan shares its per-rank passes the same way (`passes`, frozen: a writer that changed one
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
  private readonly byVectorWork = new Map<string, LayerPasses>();
  private lastVector: LayerPasses | undefined;
  /** Every layer without GEMM passes shares these empty lists. */
  private readonly none: GemmWork[] = [];
  private readonly noPasses: LayerPasses = { fwd: this.none, ig: this.none, wg: this.none };

  /** The last geometry asked for and its work (runs of layers of one geometry skip the maps). */
  private last: { m: number; n: number; k: number; count: number; work: LayerWork; frozen: boolean } | undefined;

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
    this.last = { m, n, k, count, work, frozen: Object.isFrozen(work.passes) };
    return work;
  }

  /** The passes of `count` GEMMs of `gemm`'s dims (a copy of them on first use), frozen. */
  passes(gemm: Gemm, count: number): LayerPasses {
    return this.passesOf(gemm.m, gemm.n, gemm.k, count);
  }

  /** The passes of `count` GEMMs of m x n x k (their own objects on first use), frozen. */
  passesOf(m: number, n: number, k: number, count: number): LayerPasses {
    const work = this.work(m, n, k, count);
    const last = this.last;
    if (last !== undefined && last.work === work && last.frozen) return work.passes;
    const p = Object.isFrozen(work.passes) ? work.passes : frozenPasses(work.passes);
    if (last !== undefined && last.work === work) last.frozen = true;
    return p;
  }

  /** No GEMM passes (an embedding), or a vector layer's element work only (`passes.vector`: one object per distinct work). */
  noGemm(gemm: Gemm, vector: VectorWork | undefined): LayerWork {
    const trio = gemm.m === 0 && gemm.n === 0 && gemm.k === 0 ? NO_GEMM_TRIO : { fwd: gemm, ig: gemm, wg: gemm };
    return { gemm: trio, passes: vector ? this.vectorPasses(vector) : this.noPasses };
  }

  private vectorPasses(vector: VectorWork): LayerPasses {
    // Runs of layers with the same work (a repeated block's activations) skip building the key.
    const lastPasses = this.lastVector;
    const last = lastPasses?.vector;
    if (lastPasses !== undefined && last !== undefined && last.opClass === vector.opClass && last.elements === vector.elements && last.bytesIn === vector.bytesIn && last.bytesOut === vector.bytesOut && last.hasParams === vector.hasParams) {
      return lastPasses;
    }
    const key = `${vector.opClass} ${vector.elements} ${vector.bytesIn} ${vector.bytesOut} ${vector.hasParams}`;
    let passes = this.byVectorWork.get(key);
    if (passes === undefined) {
      passes = { fwd: this.none, ig: this.none, wg: this.none, vector };
      this.byVectorWork.set(key, passes);
    }
    this.lastVector = passes;
    return passes;
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
