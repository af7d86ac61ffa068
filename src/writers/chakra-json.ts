/**
 * `--format chakra-json`: the nodes of every rank's .et file as readable JSON, field names as in
 * et_def.proto and each attribute keyed by name with its oneof member spelled out
 * (`"comm_type": { "int64_val": 0 }`), so the value kinds can be checked by eye.
 */
import type { EtAttr, EtNode } from './chakra-encoding.js';
import { ET_VERSION } from './chakra-encoding.js';
import type { ChakraTraces } from './chakra-graph.js';

function attrsJson(attrs: readonly EtAttr[]): Record<string, Record<string, unknown>> {
  return Object.fromEntries(attrs.map((a) => [a.name, { [a.value.kind]: a.value.value }]));
}

function nodeJson(n: EtNode): Record<string, unknown> {
  return {
    id: n.id,
    name: n.name,
    type: n.type,
    data_deps: n.dataDeps,
    duration_micros: n.durationMicros,
    attr: attrsJson(n.attrs),
  };
}

export function chakraToJson(traces: Pick<ChakraTraces, 'ranks' | 'rounding'>, meta: Record<string, unknown> = {}): string {
  const doc = {
    version: ET_VERSION,
    ...meta,
    rounding: traces.rounding,
    ranks: traces.ranks.map((nodes, rank) => ({ rank, nodes: nodes.map(nodeJson) })),
  };
  return JSON.stringify(doc, null, 2) + '\n';
}
