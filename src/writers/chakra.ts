/**
 * Chakra execution traces for ASTRA-sim 2.x: the writer's entry points. Graph building is in
 * chakra-graph.ts, the protobuf encoding in chakra-encoding.ts, the JSON dump in chakra-json.ts.
 */
import type { Collective, Workload } from '../workload/types.js';
import { encodeEtFile } from './chakra-encoding.js';
import { buildChakraTraces, ROOFLINE_PEAK_TFLOPS, type ChakraOptions, type ChakraTraces, type RoundingSummary } from './chakra-graph.js';

export { buildChakraTraces, type ChakraOptions, type ChakraTiming, type ChakraTraces } from './chakra-graph.js';
export { chakraToJson } from './chakra-json.js';
export { decodeEtFile, encodeEtFile } from './chakra-encoding.js';

export interface EtFile {
  path: string;
  bytes: Uint8Array;
}

/** `PREFIX.<rank>.et` for every NPU, as ASTRA-sim's --workload-configuration=PREFIX expects. */
export function chakraFiles(traces: ChakraTraces, prefix: string): EtFile[] {
  return traces.ranks.map((nodes, rank) => ({ path: `${prefix}.${rank}.et`, bytes: encodeEtFile(nodes) }));
}

export function writeChakra(workload: Workload, prefix: string, options: ChakraOptions = {}): { files: EtFile[]; traces: ChakraTraces } {
  const traces = buildChakraTraces(workload, options);
  return { files: chakraFiles(traces, prefix), traces };
}

/**
 * The one-layer MICRO workload of a single collective on `npus` NPUs (what ASTRA-sim's
 * microbenchmark generators and the text format's MICRO keyword describe). Write it with
 * `{ micro: true }`; pass `commNodeName` to match a generator's node name.
 */
export function microWorkload(collective: Omit<Collective, 'group'>, npus: number, name = 'micro'): Workload {
  return {
    config: { parallelism: 'DATA', npus, mpGroup: 1, dtype: 'fp32', params: 'all' },
    split: { dataWays: npus, modelWays: 1 },
    clockMHz: 1000,
    hardware: 'none',
    costModel: 'none',
    layers: [
      {
        name,
        fwdCycles: 0,
        igCycles: 0,
        wgCycles: 0,
        updateCycles: 0,
        fwdComm: { type: 'NONE', bytes: 0, group: 'all' },
        igComm: { type: 'NONE', bytes: 0, group: 'all' },
        wgComm: { ...collective, group: 'all' },
      },
    ],
  };
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The stderr line on whole-µs rounding (docs/astra-sim-formats.md C.3: report the aggregate error). */
export function roundingLine(r: RoundingSummary, timing: ChakraOptions['timing']): string {
  const errNs = r.replayNs - r.exactNs;
  const pct = r.exactNs > 0 ? (100 * errNs) / r.exactNs : 0;
  const sign = errNs >= 0 ? '+' : '-';
  const base =
    `chakra: ${r.computeNodes} compute nodes per file, ${fmt(r.exactNs)} ns exact; replayed in whole us: ` +
    `${fmt(r.replayNs)} ns (${sign}${fmt(Math.abs(errNs))} ns, ${sign}${Math.abs(pct).toFixed(3)}%), ${r.subHalfMicroNodes} node(s) under 0.5 us`;
  if (timing === 'roofline') return `${base}; roofline timing encodes the exact ns (system JSON: roofline-enabled 1, peak-perf ${ROOFLINE_PEAK_TFLOPS}, local-mem-bw >= 2)`;
  // Large errors come from sub-µs nodes: say how to avoid them.
  return Math.abs(pct) >= 1 ? `${base}; use --chakra-timing roofline for exact ns` : base;
}
