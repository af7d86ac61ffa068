/** Summing a layer's training passes (src/cost/training.ts). */
import { describe, expect, it } from 'vitest';
import { scalesimCostModel } from '../../src/cost/scalesim-model.js';
import { costLayerPasses, costPass } from '../../src/cost/training.js';
import type { CostModel, GemmCost, HardwareProfile } from '../../src/cost/types.js';
import type { Gemm } from '../../src/layers/types.js';

const profile: HardwareProfile = {
  name: 't', source: 't', arrayRows: 4, arrayCols: 4, arrays: 2, dataflow: 'os', ifmapSramBytes: 1 << 20,
  filterSramBytes: 1 << 20, ofmapSramBytes: 1 << 20, bandwidthMode: 'calc', dramBandwidthWordsPerCycle: 8, clockMHz: 1000, elementBytes: 1,
};

/** A fake model with hand-picked figures, to check the arithmetic of the sums. */
function fakeModel(table: Record<string, GemmCost>): CostModel {
  return {
    name: 'fake',
    profile,
    costGemm: (g: Gemm) => {
      const cost = table[`${g.m}x${g.n}x${g.k}`];
      if (cost === undefined) throw new Error(`fake model: no figures for ${g.m}x${g.n}x${g.k}`);
      return cost;
    },
    costWeightUpdate: (bytes: number) => bytes / 2,
  };
}

describe('costLayerPasses', () => {
  const a: GemmCost = { cycles: 100, stallCycles: 10, overallUtilPct: 0, mappingEfficiencyPct: 50, computeUtilPct: 40, sram: { ifmapReads: 1, filterReads: 2, ofmapWrites: 3 } };
  const b: GemmCost = { cycles: 30, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 100, computeUtilPct: 90, sram: { ifmapReads: 10, filterReads: 20, ofmapWrites: 30 } };
  const model = fakeModel({ '2x3x4': a, '4x4x4': b });

  it('sums count x cycles and stalls; MAC-weights mapping and compute util; recomputes overall util', () => {
    const pass = costPass([{ gemm: { m: 2, n: 3, k: 4 }, count: 3 }, { gemm: { m: 4, n: 4, k: 4 }, count: 1 }], model);
    expect(pass.cycles).toBe(3 * 100 + 30);
    expect(pass.stallCycles).toBe(30);
    const macsA = 3 * 24;
    const macsB = 64;
    expect(pass.mappingEfficiencyPct).toBeCloseTo((macsA * 50 + macsB * 100) / (macsA + macsB), 12);
    expect(pass.computeUtilPct).toBeCloseTo((macsA * 40 + macsB * 90) / (macsA + macsB), 12);
    expect(pass.overallUtilPct).toBeCloseTo((100 * (macsA + macsB)) / (330 * 4 * 4 * 2), 12);
    expect(pass.sram).toEqual({ ifmapReads: 13, filterReads: 26, ofmapWrites: 39 });
    expect(pass.dram).toBeUndefined(); // not every GEMM had DRAM counts
    // Empty GEMMs (a zero dim or count) add nothing and do not drop the access counts.
    const withEmpty = costPass([{ gemm: { m: 0, n: 3, k: 4 }, count: 2 }, { gemm: { m: 4, n: 4, k: 4 }, count: 0 }, { gemm: { m: 4, n: 4, k: 4 }, count: 1 }], model);
    expect(withEmpty).toEqual(costPass([{ gemm: { m: 4, n: 4, k: 4 }, count: 1 }], model));
    expect(withEmpty.sram).toEqual(b.sram);
  });

  it('gives zero passes for an embedding-like layer but still costs its update', () => {
    const cost = costLayerPasses({ fwd: [], ig: [], wg: [] }, 1000, model);
    for (const p of [cost.fwd, cost.ig, cost.wg]) {
      expect(p).toEqual({ cycles: 0, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 });
    }
    expect(cost.updateCycles).toBe(500);
    expect(costLayerPasses({ fwd: [], ig: [], wg: [] }, 0, model).updateCycles).toBe(0);
  });

  it('on the SCALE-sim model, a pass of n identical GEMMs costs n times one', () => {
    const real = scalesimCostModel({ ...profile, arrays: 1 });
    const gemm = { m: 37, n: 21, k: 50 };
    const one = real.costGemm(gemm);
    const layer = costLayerPasses(
      { fwd: [{ gemm, count: 5 }], ig: [{ gemm: { m: 37, n: 50, k: 21 }, count: 5 }], wg: [{ gemm: { m: 50, n: 21, k: 37 }, count: 5 }] },
      4096,
      real,
    );
    expect(layer.fwd.cycles).toBe(5 * one.cycles);
    expect(layer.fwd.overallUtilPct).toBeCloseTo(one.overallUtilPct, 12);
    expect(layer.fwd.mappingEfficiencyPct).toBeCloseTo(one.mappingEfficiencyPct, 12);
    expect(layer.ig.cycles).toBe(5 * real.costGemm({ m: 37, n: 50, k: 21 }).cycles);
    expect(layer.updateCycles).toBe(Math.ceil((3 * 4096) / 8));
  });
});
