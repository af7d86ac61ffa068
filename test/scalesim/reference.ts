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

/** One layer row of runs/<config>__<dataflow>__<topology>.csv: every column as a number. */
export type RunRow = Record<string, number> & { layer_id: number };

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
      const [header, ...lines] = readFileSync(`${FIXTURES}runs/${file}`, 'utf8').trim().split('\n');
      const columns = header.split(',');
      const raw = lines.map((line) => line.split(','));
      const rows = raw.map((cells) => {
        const row: Record<string, number> = {};
        columns.forEach((c, i) => {
          if (!TEXT_COLUMNS.has(c)) row[c] = Number(cells[i]);
        });
        return row as RunRow;
      });
      const [config, dataflow] = file.split('__');
      return { file, config, dataflow: dataflow as Dataflow, topology: raw[0][columns.indexOf('topology')], rows };
    });
}

export function runProfile(run: { config: string; dataflow: string }): HardwareProfile {
  return loadScaleSimProfile(`${FIXTURES}configs/variants/${run.config}_${run.dataflow}.cfg`);
}

export function runLayers(topology: string): TopologyLayer[] {
  return readTopology(`${FIXTURES}topologies/${topology}`, topology.startsWith('GEMM_mnk/') ? 'gemm' : 'conv');
}
