/** The closed-form compute model (docs/scalesim-model.md §4-6) and its identities. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { overallUtilPct, systolicCompute } from '../../src/cost/systolic/compute.js';
import { scalesimFoldMeans } from '../../src/cost/systolic/fold-means.js';
import { foldLineCount, gemmFromMapping, spatialMapping } from '../../src/cost/systolic/mapping.js';
import type { Dataflow } from '../../src/cost/types.js';

const dims = fc.integer({ min: 1, max: 3000 });
const gemmArb = fc.record({ m: dims, n: dims, k: dims });
const anyArrayArb = fc.record({ rows: fc.integer({ min: 1, max: 300 }), cols: fc.integer({ min: 1, max: 300 }) });
/** Every array but 1x1: there, os folds are T lines and SCALE-sim's "-1" undercuts the ideal. */
const arrayArb = anyArrayArb.filter((a) => a.rows + a.cols >= 3);
const dataflowArb = fc.constantFrom<Dataflow>('os', 'ws', 'is');

describe('systolic compute model', () => {
  it("matches SCALE-sim's golden test: alexnet Conv1 on 32x32 ws is 112283 cycles", () => {
    // M = 55*55 (ceil quirk), N = 96, K = 11*11*3 (docs/scalesim-model.md §5).
    const c = systolicCompute({ m: 3025, n: 96, k: 363 }, { rows: 32, cols: 32 }, 'ws');
    expect(c.mapping).toEqual({ sr: 363, sc: 96, t: 3025 });
    expect(c.folds).toEqual({ rowFolds: 12, colFolds: 3, folds: 36 });
    expect(c.foldLines).toBe(3119);
    expect(c.computeCycles).toBe(112283);
    expect(c.sram).toEqual({ ifmapReads: 3294225, filterReads: 34848, ofmapWrites: 3484800 });
  });

  it('keeps the os ofmap-writes quirk: M*N + folds*(R+C)', () => {
    const c = systolicCompute({ m: 25, n: 384, k: 1728 }, { rows: 32, cols: 32 }, 'os');
    expect(c.sram.ofmapWrites).toBe(25 * 384 + 12 * 64);
  });

  it('uses the cyc_f quirk in compute util: 2R+2C+T-3 per fold for ws/is, F for os', () => {
    const array = { rows: 8, cols: 4 };
    const gemm = { m: 8, n: 4, k: 8 }; // one full fold in os and ws, T = 8
    expect(systolicCompute(gemm, array, 'os').computeUtilPct).toBeCloseTo((100 * 8) / (8 + 4 + 8 - 2), 12);
    expect(systolicCompute(gemm, array, 'ws').computeUtilPct).toBeCloseTo((100 * 8) / (16 + 8 + 8 - 3), 12);
  });

  it('never beats the ideal: cycles >= ceil(MACs / (R*C)), utilisations in (0, 100]', () => {
    fc.assert(
      fc.property(gemmArb, arrayArb, dataflowArb, (gemm, array, df) => {
        const c = systolicCompute(gemm, array, df);
        const pes = array.rows * array.cols;
        expect(c.computeCycles).toBeGreaterThanOrEqual(Math.ceil(c.macs / pes));
        for (const pct of [c.mappingEfficiencyPct, c.computeUtilPct, overallUtilPct(c.macs, c.computeCycles, pes)]) {
          expect(pct).toBeGreaterThan(0);
          expect(pct).toBeLessThanOrEqual(100);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("keeps SCALE-sim's -1 even where it undercuts the ideal: a 1x1 array in os", () => {
    const c = systolicCompute({ m: 3, n: 2, k: 5 }, { rows: 1, cols: 1 }, 'os');
    expect(c.computeCycles).toBe(3 * 2 * 5 - 1); // F = T: one line per MAC, minus one
    // ws: 5 x 2 folds of F = 2R + C + T - 2 = T + 1 lines stays above the ideal.
    expect(systolicCompute({ m: 3, n: 2, k: 5 }, { rows: 1, cols: 1 }, 'ws').computeCycles).toBe(10 * (3 + 1) - 1);
  });

  it('closed-form means equal SCALE-sim-style per-fold float means', () => {
    fc.assert(
      fc.property(gemmArb, anyArrayArb, dataflowArb, (gemm, array, df) => {
        const c = systolicCompute(gemm, array, df);
        const means = scalesimFoldMeans(spatialMapping(gemm, df), array, df);
        expect(Math.abs(means.mappingEfficiencyPct - c.mappingEfficiencyPct)).toBeLessThan(1e-9 * c.mappingEfficiencyPct);
        expect(Math.abs(means.computeUtilPct - c.computeUtilPct)).toBeLessThan(1e-9 * c.computeUtilPct);
      }),
      { numRuns: 200 },
    );
  });

  it('transposition identities between dataflows and training passes', () => {
    fc.assert(
      fc.property(gemmArb, arrayArb, ({ m, n, k }, array) => {
        // ws on (M,N,K) maps exactly like is on (N,M,K); ifmap and filter swap roles.
        const ws = systolicCompute({ m, n, k }, array, 'ws');
        const is = systolicCompute({ m: n, n: m, k }, array, 'is');
        expect(is.mapping).toEqual(ws.mapping);
        expect(is.computeCycles).toBe(ws.computeCycles);
        expect(is.mappingEfficiencyPct).toBe(ws.mappingEfficiencyPct);
        expect(is.computeUtilPct).toBe(ws.computeUtilPct);
        expect(is.sram).toEqual({ ifmapReads: ws.sram.filterReads, filterReads: ws.sram.ifmapReads, ofmapWrites: ws.sram.ofmapWrites });
        // The weight-gradient pass (K,N,M) in ws streams like the forward pass (M,N,K) in os,
        // plus R weight-load lines per fold.
        const fwdOs = systolicCompute({ m, n, k }, array, 'os');
        const wgWs = systolicCompute({ m: k, n, k: m }, array, 'ws');
        expect(wgWs.mapping).toEqual(fwdOs.mapping);
        expect(wgWs.computeCycles).toBe(fwdOs.computeCycles + fwdOs.folds.folds * array.rows);
        // The input-gradient pass (M,K,N) in is maps like the transposed forward GEMM (N,M,K) in
        // os (dX^T = W . dY^T), again plus R lines per fold.
        const igIs = systolicCompute({ m, n: k, k: n }, array, 'is');
        const fwdTOs = systolicCompute({ m: n, n: m, k }, array, 'os');
        expect(igIs.mapping).toEqual(fwdTOs.mapping);
        expect(igIs.computeCycles).toBe(fwdTOs.computeCycles + fwdTOs.folds.folds * array.rows);
        expect(igIs.mappingEfficiencyPct).toBe(fwdTOs.mappingEfficiencyPct);
      }),
      { numRuns: 300 },
    );
  });

  it('gemmFromMapping inverts spatialMapping and fold lines follow F', () => {
    fc.assert(
      fc.property(gemmArb, dataflowArb, (gemm, df) => {
        expect(gemmFromMapping(spatialMapping(gemm, df), df)).toEqual(gemm);
      }),
    );
    expect(foldLineCount('os', { rows: 32, cols: 16 }, 100)).toBe(32 + 16 + 100 - 2);
    expect(foldLineCount('is', { rows: 32, cols: 16 }, 100)).toBe(64 + 16 + 100 - 2);
  });
});
