/** SCALE-sim's report files, byte for byte, and Python's number formatting. */
import { describe, expect, it } from 'vitest';
import { pyFloat } from '../../src/scalesim/python-format.js';
import { DETAILED_ACCESS_REPORT_HEADER, scaleSimReports } from '../../src/scalesim/reports.js';
import { simulateScaleSim } from '../../src/scalesim/run.js';
import { referenceRuns, runLayers, runProfile } from './reference.js';
import { present } from '../helpers/present.js';

describe('SCALE-sim reports', () => {
  it("writes alexnet Conv1 on scale.cfg/ws exactly as SCALE-sim's golden trace", () => {
    // The layer of SCALE-sim's own regression test (test/general/golden_trace): same bytes.
    const run = present(referenceRuns().find((r) => r.file === 'scale__ws__alexnet_part.csv'), 'scale__ws__alexnet_part.csv');
    const reports = scaleSimReports(simulateScaleSim(runLayers(run.topology), runProfile(run)));
    expect(reports['COMPUTE_REPORT.csv']).toBe(
      'LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n' +
        '0, 112283, 0, 91.68309650614964, 94.53125, 90.78000992063485,\n',
    );
    expect(reports['BANDWIDTH_REPORT.csv']).toBe(
      'LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,\n' +
        '0, 29.338590881967885, 0.31035864734643714, 31.035864734643713, 15.686576632947475, 0.3280954308794592, 31.243441697000126,\n',
    );
    expect(reports['DETAILED_ACCESS_REPORT.csv']).toBe(
      `${DETAILED_ACCESS_REPORT_HEADER}\n` +
        '0, 33.0, 112176.0, 3294225, 1.0, 109197.0, 34848, 63.0, 112283.0, 3484800, -3243.0, 111824.0, 1805023, -3275.0, 102937.0, 34848, 1102.0, 112639.0, 3484831,\n',
    );
  });

  it('reports every reference run with the reference figures in every column, one line per layer', () => {
    const dramColumns = (unit: string): string[] => ['ifmap', 'filter', 'ofmap'].flatMap((op) => [
      `${unit}_${op}_start_cycle`, `${unit}_${op}_stop_cycle`, `${unit}_${op}_${op === 'ofmap' ? 'writes' : 'reads'}`,
    ]);
    const expectedColumns = {
      'COMPUTE_REPORT.csv': ['total_cycles', 'stall_cycles', 'overall_util_pct', 'mapping_efficiency_pct', 'compute_util_pct'],
      'BANDWIDTH_REPORT.csv': ['sram_ifmap', 'sram_filter', 'sram_ofmap', 'dram_ifmap', 'dram_filter', 'dram_ofmap'].map((c) => `avg_${c}_bw`),
      'DETAILED_ACCESS_REPORT.csv': [...dramColumns('sram'), ...dramColumns('dram')],
    } as const;
    for (const run of referenceRuns()) {
      const reports = scaleSimReports(simulateScaleSim(runLayers(run.topology), runProfile(run)));
      for (const [file, columns] of Object.entries(expectedColumns)) {
        // Rows are "id, v1, ..., vn," : drop the trailing comma before splitting.
        const rows = reports[file as keyof typeof reports].trim().split('\n').slice(1).map((l) => l.replace(/,$/, '').split(', ').map(Number));
        expect(rows.length, `${run.file} ${file}`).toBe(run.rows.length);
        for (const row of run.rows) {
          const ours = rows[row.layer_id];
          expect(ours?.[0]).toBe(row.layer_id);
          expect(ours?.slice(1), `${run.file} ${file} layer ${row.layer_id}`).toEqual(columns.map((c) => row[c]));
        }
      }
    }
  });

  it("formats floats like Python's repr", () => {
    expect(pyFloat(33)).toBe('33.0');
    expect(pyFloat(-3243)).toBe('-3243.0');
    expect(pyFloat(100)).toBe('100.0');
    expect(pyFloat(94.53125)).toBe('94.53125');
    expect(pyFloat(0.1)).toBe('0.1');
    expect(pyFloat(0.0001)).toBe('0.0001');
    expect(pyFloat(0.00001)).toBe('1e-05');
    expect(pyFloat(1.5e-7)).toBe('1.5e-07');
    expect(pyFloat(1e16)).toBe('1e+16');
    expect(pyFloat(123456789012345680)).toBe('1.2345678901234568e+17');
    expect(pyFloat(9999999999999998)).toBe('9999999999999998.0');
    expect(pyFloat(0)).toBe('0.0');
    expect(pyFloat(Infinity)).toBe('inf');
  });
});
