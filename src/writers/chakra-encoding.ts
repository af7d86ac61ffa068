/**
 * Chakra .et encoding (docs/astra-sim-formats.md Part B): a varint-length-delimited GlobalMetadata, then one
 * varint-length-delimited Node per graph node, encoded with protobufjs from the embedded schema.
 *
 * Two proto3 presence rules matter for byte-exactness (B.6):
 * - plain scalars equal to their default (id 0, duration 0, empty name) are omitted, as the
 *   reference encoder does: protobufjs writes any field that is set, so we leave them unset;
 * - a oneof member is always written once set, even when zero: `comm_type = ALL_REDUCE (0)` is
 *   `48 00` and `is_cpu_op = false` is `d8 01 00`. Every attribute value therefore sets exactly
 *   one oneof member explicitly.
 */
import protobuf from 'protobufjs';
import { ET_DEF_PROTO } from './chakra-et-def.js';

/** Attribute value kinds ASTRA-sim's feeders read (docs/astra-sim-formats.md B.5). */
export type EtAttrValue =
  | { kind: 'bool_val'; value: boolean }
  | { kind: 'int32_val'; value: number }
  | { kind: 'int64_val'; value: number }
  | { kind: 'uint64_val'; value: number }
  | { kind: 'string_val'; value: string }
  | { kind: 'bool_list'; value: boolean[] };

export interface EtAttr {
  name: string;
  value: EtAttrValue;
}

export type EtNodeType = 'COMP_NODE' | 'COMM_SEND_NODE' | 'COMM_RECV_NODE' | 'COMM_COLL_NODE';

export interface EtNode {
  id: number;
  name: string;
  type: EtNodeType;
  /** Every edge goes here; ctrl_deps stay empty (B.9). */
  dataDeps: number[];
  /** Replay time in whole microseconds (C.1). */
  durationMicros: number;
  attrs: EtAttr[];
}

/** GlobalMetadata version string of ASTRA-sim's shipped examples. */
export const ET_VERSION = '0.0.4';

interface Schema {
  metadata: protobuf.Type;
  node: protobuf.Type;
}

let schema: Schema | undefined;

/** The schema, parsed once (keepCase: the JSON dump and tests use the proto's own field names). */
export function etSchema(): Schema {
  if (schema === undefined) {
    const root = protobuf.parse(ET_DEF_PROTO, { keepCase: true }).root;
    schema = { metadata: root.lookupType('ChakraProtoMsg.GlobalMetadata'), node: root.lookupType('ChakraProtoMsg.Node') };
  }
  return schema;
}

const NODE_TYPE_VALUE: Record<EtNodeType, number> = { COMP_NODE: 4, COMM_SEND_NODE: 5, COMM_RECV_NODE: 6, COMM_COLL_NODE: 7 };

function attrMessage(attr: EtAttr): Record<string, unknown> {
  const { kind, value } = attr.value;
  // Exactly one oneof member, set explicitly even when 0/false (B.6).
  return { name: attr.name, [kind]: kind === 'bool_list' ? { values: value } : value };
}

/** The protobufjs message object of a node, leaving default-valued plain scalars unset. */
export function nodeMessage(node: EtNode): Record<string, unknown> {
  const msg: Record<string, unknown> = {};
  if (node.id !== 0) msg['id'] = node.id;
  if (node.name !== '') msg['name'] = node.name;
  msg['type'] = NODE_TYPE_VALUE[node.type];
  if (node.dataDeps.length > 0) msg['data_deps'] = node.dataDeps;
  if (node.durationMicros !== 0) msg['duration_micros'] = node.durationMicros;
  if (node.attrs.length > 0) msg['attr'] = node.attrs.map(attrMessage);
  return msg;
}

/** One rank's file: metadata then nodes, each prefixed by its varint length. */
export function encodeEtFile(nodes: readonly EtNode[], version: string = ET_VERSION): Uint8Array {
  const { metadata, node } = etSchema();
  const writer = protobuf.Writer.create();
  metadata.encodeDelimited(metadata.create({ version }), writer);
  for (const n of nodes) node.encodeDelimited(node.create(nodeMessage(n)), writer);
  return writer.finish();
}

export interface DecodedEtFile {
  version: string;
  /** Nodes as plain objects with the proto's field names; 64-bit integers as numbers. */
  nodes: DecodedNode[];
}

export interface DecodedNode {
  id: number;
  name: string;
  type: string;
  data_deps: number[];
  ctrl_deps: number[];
  duration_micros: number;
  attr: Record<string, unknown>[];
}

/** Decodes a .et file with the schema (used by tests and by anyone checking a trace). */
export function decodeEtFile(bytes: Uint8Array): DecodedEtFile {
  const { metadata, node } = etSchema();
  const reader = protobuf.Reader.create(bytes);
  const meta = metadata.toObject(metadata.decodeDelimited(reader), { defaults: true });
  const nodes: DecodedNode[] = [];
  while (reader.pos < reader.len) {
    const decoded = node.decodeDelimited(reader);
    nodes.push(node.toObject(decoded, { longs: Number, enums: String, defaults: true, arrays: true, oneofs: true }) as DecodedNode);
  }
  return { version: String(meta['version']), nodes };
}

/** The value of a decoded attribute and the oneof member that holds it. */
export function decodedAttr(n: DecodedNode, name: string): { kind: string; value: unknown } | undefined {
  const a = n.attr.find((x) => x['name'] === name);
  if (a === undefined) return undefined;
  const kind = String(a['value']);
  const raw = a[kind];
  const value = kind === 'bool_list' ? (raw as { values: boolean[] }).values : raw;
  return { kind, value };
}
