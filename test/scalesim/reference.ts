/**
 * The SCALE-sim v2 reference runs copied into test/fixtures/scalesim/ (from
 * shared/reference/scalesim: runs/, configs/, topologies/, RUNTIMES.csv).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadScaleSimProfile } from '../../src/cost/scalesim-config.js';
import type { Dataflow, HardwareProfile } from '../../src/cost/types.js';
import { type TopologyLayer, readTopology } from '../../src/scalesim/topology.js';

export const FIXTURES = fileURLToPath(new URL('../fixtures/scalesim/', import.meta.url));

/** Columns the tests read by name: every run file must have them. */
const NAMED_COLUMNS = [
  'layer_id', 'M', 'N', 'K', 'total_cycles', 'stall_cycles', 'overall_util_pct', 'mapping_efficiency_pct', 'compute_util_pct',
  'sram_ifmap_reads', 'sram_filter_reads', 'sram_ofmap_writes', 'dram_ifmap_reads', 'dram_filter_reads', 'dram_ofmap_writes',
] as const;

/** One layer row of runs/<config>__<dataflow>__<topology>.csv: every column as a number. */
export type RunRow = Record<string, number> & Record<(typeof NAMED_COLUMNS)[number], number>;

export interface ReferenceRun {
  file: string;
  config: string;
  dataflow: Dataflow;
  topology: string;
  rows: RunRow[];
}

const TEXT_COLUMNS = new Set(['config', 'dataflow', 'topology', 'layer_name']);

export function referenceRuns(): ReferenceRun[] {
  return readdirSync(`${FIXTURES}runs`)
    .filter((f) => f.endsWith('.csv'))
    .sort()
    .map((file) => {
      const [header = '', ...lines] = readFileSync(`${FIXTURES}runs/${file}`, 'utf8').trim().split('\n');
      const columns = header.split(',');
      const missing = NAMED_COLUMNS.filter((c) => !columns.includes(c));
      if (missing.length > 0) throw new Error(`fixture runs/${file}: no column ${missing.join(', ')}`);
      const raw = lines.map((line) => line.split(','));
      const rows = raw.map((cells) => {
        const row: Record<string, number> = {};
        columns.forEach((c, i) => {
          if (!TEXT_COLUMNS.has(c)) row[c] = Number(cells[i]);
        });
        return row as RunRow;
      });
      const [config, dataflow] = file.split('__');
      const topology = raw[0]?.[columns.indexOf('topology')];
      if (config === undefined || dataflow === undefined || topology === undefined) {
        throw new Error(`fixture runs/${file}: expected <config>__<dataflow>__<topology>.csv with a topology column and a row`);
      }
      return { file, config, dataflow: dataflow as Dataflow, topology, rows };
    });
}

export function runProfile(run: { config: string; dataflow: string }): HardwareProfile {
  return loadScaleSimProfile(`${FIXTURES}configs/variants/${run.config}_${run.dataflow}.cfg`);
}

export function runLayers(topology: string): TopologyLayer[] {
  return readTopology(`${FIXTURES}topologies/${topology}`, topology.startsWith('GEMM_mnk/') ? 'gemm' : 'conv');
}
