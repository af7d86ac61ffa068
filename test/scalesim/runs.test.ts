/**
 * Every SCALE-sim v2 reference run (CALC: scale and google configs, os/ws/is; USER: scaleuser,
 * Bandwidth 10) reproduced per layer: cycles, stalls, the three utilisations, SRAM and DRAM
 * access counts and start/stop cycles. All exact: SCALE-sim's floats are compared with ===.
 */
import { describe, expect, it } from 'vitest';
import { at } from '../../src/errors.js';
import { simulateScaleSim } from '../../src/scalesim/run.js';
import { referenceRuns, runLayers, runProfile } from './reference.js';

const runs = referenceRuns();

describe('SCALE-sim reference runs', () => {
  it('has the reference set: CALC and USER runs in all three dataflows', () => {
    expect(runs.length).toBe(37);
    for (const prefix of ['scale__', 'scaleuser__', 'google__']) expect(runs.some((r) => r.file.startsWith(prefix))).toBe(true);
    for (const df of ['os', 'ws', 'is']) expect(runs.filter((r) => r.config === 'scaleuser' && r.dataflow === df).length).toBe(3);
  });

  for (const run of runs) {
    it(`${run.file}: every reported figure is exact`, () => {
      const layers = runLayers(run.topology);
      const results = simulateScaleSim(layers, runProfile(run));
      expect(results.length).toBe(Math.max(...run.rows.map((r) => r.layer_id)) + 1);
      for (const row of run.rows) {
        const r = at(results, row.layer_id);
        const ours = {
          M: r.gemm.m, N: r.gemm.n, K: r.gemm.k,
          total_cycles: r.totalCycles, stall_cycles: r.stallCycles,
          overall_util_pct: r.overallUtilPct, mapping_efficiency_pct: r.mappingEfficiencyPct, compute_util_pct: r.computeUtilPct,
          sram_ifmap_start_cycle: r.sram.ifmap.startCycle, sram_ifmap_stop_cycle: r.sram.ifmap.stopCycle, sram_ifmap_reads: r.sram.ifmap.words,
          sram_filter_start_cycle: r.sram.filter.startCycle, sram_filter_stop_cycle: r.sram.filter.stopCycle, sram_filter_reads: r.sram.filter.words,
          sram_ofmap_start_cycle: r.sram.ofmap.startCycle, sram_ofmap_stop_cycle: r.sram.ofmap.stopCycle, sram_ofmap_writes: r.sram.ofmap.words,
          dram_ifmap_start_cycle: r.dram.ifmap.startCycle, dram_ifmap_stop_cycle: r.dram.ifmap.stopCycle, dram_ifmap_reads: r.dram.ifmap.words,
          dram_filter_start_cycle: r.dram.filter.startCycle, dram_filter_stop_cycle: r.dram.filter.stopCycle, dram_filter_reads: r.dram.filter.words,
          dram_ofmap_start_cycle: r.dram.ofmap.startCycle, dram_ofmap_stop_cycle: r.dram.ofmap.stopCycle, dram_ofmap_writes: r.dram.ofmap.words,
        };
        const expected = Object.fromEntries(Object.keys(ours).map((k) => [k, row[k]]));
        expect(ours, `layer ${row.layer_id}`).toEqual(expected);
      }
    });
  }

  it('reproduces the thrash artifact of scaleuser ws test.csv (27x the filter re-read)', () => {
    const run = runs.find((r) => r.file === 'scaleuser__ws__test.csv');
    if (run === undefined) throw new Error('fixture runs/scaleuser__ws__test.csv is missing');
    const r = at(simulateScaleSim(runLayers(run.topology), runProfile(run)), 0);
    expect(r.dram.filter.words).toBe(17_925_190);
    expect(r.dram.filter.words / (r.gemm.k * r.gemm.n)).toBeGreaterThan(27);
    expect(r.stallCycles).toBe(1_713_614);
  });
});
