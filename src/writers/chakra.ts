/**
 * Chakra execution traces for ASTRA-sim 2.x: the writer's entry points. Graph building is in
 * chakra-graph.ts, the protobuf encoding in chakra-encoding.ts, the JSON dump in chakra-json.ts.
 */
import type { LayerTable } from '../schedule/types.js';
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

export function writeChakra(table: LayerTable, prefix: string, options: ChakraOptions = {}): { files: EtFile[]; traces: ChakraTraces } {
  const traces = buildChakraTraces(table, options);
  return { files: chakraFiles(traces, prefix), traces };
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
