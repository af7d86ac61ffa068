/** The SCALE-sim-exact CostModel: reference runs through costGemm, multi-array split, updates. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../../src/cost/ideal.js';
import { LinearMatrix, layerOperands } from '../../src/cost/access/layer.js';
import { OPTIMIZER_TRAFFIC_FACTOR, memoryConfigFor, scalesimCostModel } from '../../src/cost/scalesim-model.js';
import { InputError, at } from '../../src/errors.js';
import { systolicCompute } from '../../src/cost/systolic/compute.js';
import type { Dataflow, HardwareProfile } from '../../src/cost/types.js';
import { referenceRuns, runLayers, runProfile } from '../scalesim/reference.js';

const runs = referenceRuns();

function profile(over: Partial<HardwareProfile> = {}): HardwareProfile {
  return {
    name: 'test', source: 'test', arrayRows: 128, arrayCols: 128, arrays: 1, dataflow: 'ws',
    ifmapSramBytes: 8 << 20, filterSramBytes: 8 << 20, ofmapSramBytes: 4 << 20, bandwidthMode: 'calc',
    dramBandwidthWordsPerCycle: 100, clockMHz: 1000, elementBytes: 2, ...over,
  };
}

describe('scalesimCostModel', () => {
  it('costs every reference-run layer as SCALE-sim does (cycles, stalls, utilisation, SRAM counts)', () => {
    let layers = 0;
    for (const run of runs.filter((r) => !r.config.endsWith('user'))) {
      const model = scalesimCostModel(runProfile(run));
      for (const row of run.rows) {
        const c = model.costGemm({ m: row.M, n: row.N, k: row.K });
        expect(c.cycles, run.file).toBe(row.total_cycles);
        expect(c.stallCycles).toBe(0);
        expect(c.overallUtilPct).toBe(row.overall_util_pct);
        expect(c.mappingEfficiencyPct).toBeCloseTo(row.mapping_efficiency_pct, 10);
        expect(c.computeUtilPct).toBeCloseTo(row.compute_util_pct, 10);
        expect(c.sram).toEqual({ ifmapReads: row.sram_ifmap_reads, filterReads: row.sram_filter_reads, ofmapWrites: row.sram_ofmap_writes });
        expect(c.dram).toBeUndefined(); // CALC: closed form, no walk
        layers++;
      }
    }
    expect(layers).toBe(91);
  });

  it('simulates DRAM traffic exactly for layers that are plain GEMMs (USER always, CALC on request)', () => {
    let checked = 0;
    let userChecked = 0;
    for (const run of runs) {
      const layers = runLayers(run.topology);
      const user = run.config.endsWith('user');
      const model = scalesimCostModel(runProfile(run), { dramTraffic: true });
      for (const row of run.rows) {
        if (!(layerOperands(at(layers, row.layer_id).geometry).ifmap instanceof LinearMatrix)) continue; // im2col layer
        const c = model.costGemm({ m: row.M, n: row.N, k: row.K });
        expect(c.cycles).toBe(row.total_cycles);
        expect(c.stallCycles).toBe(row.stall_cycles);
        expect(c.dram).toEqual({ ifmapReads: row.dram_ifmap_reads, filterReads: row.dram_filter_reads, ofmapWrites: row.dram_ofmap_writes });
        checked++;
        if (user) userChecked++;
      }
    }
    expect(checked).toBe(79); // the dlrm and GEMM_mnk layers
    expect(userChecked).toBe(3);
  });

  it('memoises per GEMM shape', () => {
    const model = scalesimCostModel(profile({ bandwidthMode: 'user', arrayRows: 16, arrayCols: 16, ifmapSramBytes: 4096, filterSramBytes: 4096, dramBandwidthWordsPerCycle: 1 }));
    const a = model.costGemm({ m: 300, n: 200, k: 100 });
    expect(model.costGemm({ m: 300, n: 200, k: 100 })).toBe(a);
    expect(a.stallCycles).toBeGreaterThan(0);
  });

  it('costs an empty GEMM as zero and rejects fractional dims', () => {
    const model = scalesimCostModel(profile());
    expect(model.costGemm({ m: 0, n: 5, k: 5 })).toMatchObject({ cycles: 0, stallCycles: 0, overallUtilPct: 0 });
    expect(() => model.costGemm({ m: 1.5, n: 5, k: 5 })).toThrow(/integers/);
  });

  it('spreads folds over arrays: busiest array sets the cycles, idle arrays lower utilisation', () => {
    const v4 = profile({ arrays: 4 });
    const one = scalesimCostModel(profile());
    const four = scalesimCostModel(v4);
    // ws: Sr = K = 512 (4 row folds), Sc = N = 1024 (8 column folds): 2 column folds per array.
    const F = 2 * 128 + 128 + 512 - 2;
    expect(four.costGemm({ m: 512, n: 1024, k: 512 }).cycles).toBe(2 * 4 * F - 1);
    expect(one.costGemm({ m: 512, n: 1024, k: 512 }).cycles).toBe(32 * F - 1);
    // One column fold: the four arrays take one row fold each.
    expect(four.costGemm({ m: 512, n: 128, k: 512 }).cycles).toBe(F - 1);
    // A single fold cannot be split: three arrays idle.
    const single = four.costGemm({ m: 512, n: 128, k: 128 });
    expect(single.cycles).toBe(one.costGemm({ m: 512, n: 128, k: 128 }).cycles);
    expect(single.overallUtilPct).toBeCloseTo(one.costGemm({ m: 512, n: 128, k: 128 }).overallUtilPct / 4, 10);
  });

  it('multi-array cycles: between the perfect split and one array, utilisation in (0, 100]', () => {
    const dims = fc.integer({ min: 1, max: 5000 });
    fc.assert(
      fc.property(dims, dims, dims, fc.integer({ min: 1, max: 8 }), fc.constantFrom<Dataflow>('os', 'ws', 'is'), (m, n, k, arrays, df) => {
        const p = profile({ arrays, dataflow: df, arrayRows: 32, arrayCols: 32 });
        const c = scalesimCostModel(p).costGemm({ m, n, k });
        const single = systolicCompute({ m, n, k }, { rows: 32, cols: 32 }, df);
        expect(c.cycles).toBeLessThanOrEqual(single.computeCycles);
        expect(c.cycles).toBeGreaterThanOrEqual(Math.ceil(single.folds.folds / arrays) * single.foldLines - 1);
        expect(c.overallUtilPct).toBeGreaterThan(0);
        expect(c.overallUtilPct).toBeLessThanOrEqual(100);
      }),
      { numRuns: 300 },
    );
  });

  it('edge profiles: 1x1 arrays, 2-word SRAMs, 1 word/cycle shared by several arrays, huge GEMMs', () => {
    fc.assert(
      fc.property(
        fc.record({ m: fc.integer({ min: 1, max: 60 }), n: fc.integer({ min: 1, max: 60 }), k: fc.integer({ min: 1, max: 60 }) }),
        fc.constantFrom<Dataflow>('os', 'ws', 'is'),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 3 }),
        (gemm, df, arrays, side) => {
          const p = profile({
            bandwidthMode: 'user', dataflow: df, arrays, arrayRows: side, arrayCols: side, elementBytes: 1, dramBandwidthWordsPerCycle: arrays,
            ifmapSramBytes: 2 * arrays, filterSramBytes: 2 * arrays, ofmapSramBytes: 2 * arrays,
          });
          const c = scalesimCostModel(p).costGemm(gemm);
          const single = systolicCompute(gemm, { rows: side, cols: side }, df);
          // At least a perfect split's compute cycles; at most one array's plus the stalls (a read
          // stall of the last line counts as a stall but not in the total, as in SCALE-sim).
          expect(c.cycles).toBeGreaterThanOrEqual(Math.ceil(single.folds.folds / arrays) * single.foldLines - 1);
          expect(c.cycles - c.stallCycles).toBeLessThanOrEqual(single.computeCycles);
          expect(c.stallCycles).toBeGreaterThanOrEqual(0);
        },
      ),
      { numRuns: 150 },
    );
    // CALC never walks memory: a GEMM of 10^17 MACs is closed-form and instant.
    const huge = scalesimCostModel(profile()).costGemm({ m: 1e7, n: 1e5, k: 1e5 });
    expect(huge.cycles).toBe(systolicCompute({ m: 1e7, n: 1e5, k: 1e5 }, { rows: 128, cols: 128 }, 'ws').computeCycles);
  });

  it('refuses SRAMs below 2 words per array with an InputError naming the profile and key', () => {
    // One word leaves the prefetch / drain half empty: SCALE-sim's buffers would never progress.
    const tiny = profile({ bandwidthMode: 'user', arrays: 2, elementBytes: 2, ofmapSramBytes: 7 });
    expect(() => memoryConfigFor(tiny)).toThrow(InputError);
    expect(() => scalesimCostModel(tiny)).toThrow(/test: ofmapSram holds 1 word\(s\) per array/);
    // CALC without DRAM traffic never walks the buffers, so their size does not matter.
    expect(scalesimCostModel({ ...tiny, bandwidthMode: 'calc' }).costGemm({ m: 4, n: 4, k: 4 }).cycles).toBeGreaterThan(0);
  });

  it('weight update: optimizer traffic over the DRAM interface', () => {
    const p = profile({ dramBandwidthWordsPerCycle: 100, elementBytes: 2 }); // 200 B/cycle
    expect(scalesimCostModel(p).costWeightUpdate(1000)).toBe(Math.ceil((3 * 1000) / 200));
    expect(scalesimCostModel(p, { optimizer: 'adam' }).costWeightUpdate(1000)).toBe(35);
    expect(scalesimCostModel(p, { optimizer: 'momentum' }).costWeightUpdate(1000)).toBe(25);
    expect(scalesimCostModel(p).costWeightUpdate(0)).toBe(0);
    expect(OPTIMIZER_TRAFFIC_FACTOR).toEqual({ sgd: 3, momentum: 5, adam: 7 });
    // The ideal model prices the optimizer step the same way.
    expect(idealCostModel(p).costWeightUpdate(1000)).toBe(15);
    expect(idealCostModel(p, { optimizer: 'adam' }).costWeightUpdate(1000)).toBe(35);
    expect(idealCostModel(p).costWeightUpdate(0)).toBe(0);
  });

  it('ideal model: ceil(MACs / PEs), zero for an empty GEMM', () => {
    const ideal = idealCostModel(profile({ arrays: 2, arrayRows: 4, arrayCols: 4 }));
    expect(ideal.costGemm({ m: 3, n: 5, k: 7 })).toMatchObject({ cycles: Math.ceil(105 / 32), stallCycles: 0 });
    expect(ideal.costGemm({ m: 0, n: 5, k: 7 })).toEqual({ cycles: 0, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 });
  });
});
