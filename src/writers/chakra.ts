/**
 * Chakra execution traces of the legacy per-layer table's converter graph (`--chakra-dims`:
 * schedule/converter-graph.ts, with involved_dim masks), and the module's entry points. Graph building is in
 * chakra-graph.ts, the protobuf encoding in chakra-encoding.ts, the JSON dump in chakra-json.ts;
 * traces of a step schedule are chakra-schedule.ts's.
 */
import type { ConverterGraph } from '../schedule/converter-graph.js';
import { encodeEtFile } from './chakra-encoding.js';
import { buildChakraTraces, roundingLine, type ChakraOptions, type ChakraTiming, type ChakraTraces } from './chakra-graph.js';
import { chakraToJson } from './chakra-json.js';
import { fileOrStdout, type Writer } from './output.js';

export { buildChakraTraces, roundingLine, type ChakraOptions, type ChakraTiming, type ChakraTraces } from './chakra-graph.js';
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

export function writeChakra(graph: ConverterGraph, prefix: string, options: ChakraOptions = {}): { files: EtFile[]; traces: ChakraTraces } {
  const traces = buildChakraTraces(graph, options);
  return { files: chakraFiles(traces, prefix), traces };
}

export interface ConverterTraceOptions {
  timing: ChakraTiming;
  networkDims: number;
}

/** `--format chakra --chakra-dims N`: one .et file per NPU of the converter graph. */
export const converterEtWriter: Writer<ConverterGraph, ConverterTraceOptions & { prefix: string }> = (graph, o) => {
  const { files, traces } = writeChakra(graph, o.prefix, o);
  return { files, notes: [roundingLine(traces.rounding, o.timing)], what: `${graph.npus} files ${o.prefix}.<rank>.et (involved_dim over ${o.networkDims} dims)` };
};

/** `--format chakra-json --chakra-dims N`: the same nodes as JSON, `meta` first. */
export const converterJsonWriter: Writer<ConverterGraph, ConverterTraceOptions & { output?: string; meta: Record<string, unknown> }> = (graph, o) => {
  const traces = buildChakraTraces(graph, o);
  return fileOrStdout(o.output, chakraToJson(traces, o.meta), [roundingLine(traces.rounding, o.timing)]);
};
