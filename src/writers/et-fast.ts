/**
 * A direct protobuf encoder for Chakra nodes, byte-identical to chakra-encoding.ts's protobufjs
 * path (a test checks it) but without building message objects: writing 1,024 rank files of
 * thousands of nodes each is dominated by encoding otherwise. Field numbers: et_def.proto.
 */
import type { EtAttr, EtNode, EtNodeType } from './chakra-encoding.js';

const NODE_TYPE: Record<EtNodeType, number> = { COMP_NODE: 4, COMM_SEND_NODE: 5, COMM_RECV_NODE: 6, COMM_COLL_NODE: 7 };
const encoder = new TextEncoder();

/** Copies shorter than this go byte by byte: TypedArray.set costs ~350 ns a call (1.25M calls of under 100 bytes were ~430 ms of the 100k-node chain's two rank files). */
const SMALL_COPY_BYTES = 256;

/** Bytes of `value` as a protobuf varint (non-negative). */
export function varintSize(value: number): number {
  let n = 1;
  let v = value;
  while (v >= 0x80) {
    n++;
    v = Math.floor(v / 0x80);
  }
  return n;
}

/** Whether every UTF-16 unit of `text` is ASCII (a byte each in UTF-8). */
function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** UTF-8 bytes of `text` (node and layer names are ASCII: their length, nothing encoded). */
function utf8Length(text: string): number {
  return isAscii(text) ? text.length : encoder.encode(text).length;
}

/** A length-delimited string field's bytes after its tag: the length varint and the UTF-8. */
function stringFieldSize(text: string): number {
  const n = utf8Length(text);
  return varintSize(n) + n;
}

/** Growable byte buffer with protobuf's varint and length-delimited writes. */
export class ByteSink {
  private buf: Uint8Array;
  length = 0;

  constructor(initialBytes = 256) {
    this.buf = new Uint8Array(initialBytes);
  }

  /** Empty again, its buffer kept (a view taken before is overwritten by what is written next). */
  reset(): void {
    this.length = 0;
  }

  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = Math.max(1, this.buf.length * 2);
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  varint(value: number): void {
    this.ensure(10);
    if (value < 0) throw new RangeError(`varint ${value} < 0`);
    const buf = this.buf;
    let at = this.length;
    let v = value;
    while (v >= 0x80) {
      buf[at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buf[at++] = v;
    this.length = at;
  }

  bytes(b: Uint8Array): void {
    const n = b.length;
    this.ensure(n);
    if (n < SMALL_COPY_BYTES) {
      const buf = this.buf;
      const at = this.length;
      for (let i = 0; i < n; i++) buf[at + i] = b[i] ?? 0;
    } else {
      this.buf.set(b, this.length);
    }
    this.length += n;
  }

  /** UTF-8 of `text` with its length prefix; ASCII (node and layer names) byte by byte, with no encoder output to allocate. */
  string(text: string): void {
    if (!isAscii(text)) {
      const b = encoder.encode(text);
      this.varint(b.length);
      this.bytes(b);
      return;
    }
    const n = text.length;
    this.varint(n);
    this.ensure(n);
    const buf = this.buf;
    const at = this.length;
    for (let i = 0; i < n; i++) buf[at + i] = text.charCodeAt(i);
    this.length = at + n;
  }

  /** The bytes written so far (a view: copy it before the sink is written again). */
  view(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

/** Scratch sinks by nesting depth (a node of appendNode): emptied and reused, never allocated per message. */
const scratch: ByteSink[] = [];
let scratchDepth = 0;

function scratchSink(): ByteSink {
  let sink = scratch[scratchDepth];
  if (sink === undefined) {
    sink = new ByteSink(1024);
    scratch[scratchDepth] = sink;
  }
  scratchDepth++;
  sink.length = 0;
  return sink;
}

function releaseScratch(): void {
  scratchDepth--;
}

function stringField(s: ByteSink, field: number, text: string): void {
  s.varint((field << 3) | 2);
  s.string(text);
}

/** Field numbers of AttributeProto's value oneof (et_def.proto), for the size and the write alike. */
const ATTR_VALUE_FIELD = { int32_val: 7, int64_val: 9, uint64_val: 13, bool_val: 27, bool_list: 28, string_val: 29 } as const satisfies Record<EtAttr['value']['kind'], number>;

/** Bytes of a bool_list's packed body: empty for an empty list, else field 1's length and one byte per value. */
const boolListBodySize = (values: readonly boolean[]): number => (values.length === 0 ? 0 : 1 + varintSize(values.length) + values.length);

/**
 * Bytes of an attribute's message body (name, then its one value field), computed before it is
 * written: its length prefix goes first, and a scratch buffer copied after would double the bytes moved.
 */
function attrBodySize(a: EtAttr): number {
  const name = 1 + stringFieldSize(a.name);
  const v = a.value;
  const field = ATTR_VALUE_FIELD[v.kind];
  switch (v.kind) {
    case 'bool_val':
      return name + varintSize(field << 3) + 1;
    case 'int32_val':
    case 'int64_val':
    case 'uint64_val':
      return name + varintSize(field << 3) + varintSize(v.value);
    case 'string_val':
      return name + varintSize((field << 3) | 2) + stringFieldSize(v.value);
    case 'bool_list': {
      const body = boolListBodySize(v.value);
      return name + varintSize((field << 3) | 2) + varintSize(body) + body;
    }
  }
}

function attr(s: ByteSink, a: EtAttr): void {
  const v = a.value;
  // A negative value would need protobuf's 10-byte form: refused before any byte is written.
  if (v.kind !== 'bool_val' && v.kind !== 'string_val' && v.kind !== 'bool_list' && v.value < 0) throw new RangeError(`varint ${v.value} < 0`);
  s.varint((10 << 3) | 2);
  s.varint(attrBodySize(a));
  stringField(s, 1, a.name);
  const field = ATTR_VALUE_FIELD[v.kind];
  switch (v.kind) {
    case 'bool_val':
      s.varint(field << 3);
      s.varint(v.value ? 1 : 0);
      break;
    case 'int32_val':
    case 'int64_val':
    case 'uint64_val':
      s.varint(field << 3);
      s.varint(v.value);
      break;
    case 'string_val':
      stringField(s, field, v.value);
      break;
    case 'bool_list':
      s.varint((field << 3) | 2);
      s.varint(boolListBodySize(v.value));
      if (v.value.length === 0) break;
      s.varint((1 << 3) | 2);
      s.varint(v.value.length);
      for (const x of v.value) s.varint(x ? 1 : 0);
      break;
  }
}

/** One node, length-prefixed, appended to `out`. */
export function appendNode(out: ByteSink, node: EtNode): void {
  const s = scratchSink();
  try {
    writeNodeMessage(s, node);
    out.varint(s.length);
    out.bytes(s.view());
  } finally {
    releaseScratch();
  }
}

/** A node's message without its length prefix. Attributes come last, so attr entries can be appended to it. */
export function nodeMessageBytes(node: EtNode): Uint8Array {
  const s = scratchSink();
  try {
    writeNodeMessage(s, node);
    return s.view().slice();
  } finally {
    releaseScratch();
  }
}

/** A node's message without its length prefix, appended to `out` (many nodes' bodies can share one buffer). */
export function appendNodeBody(out: ByteSink, node: EtNode): void {
  writeNodeMessage(out, node);
}

/** Bytes of a node's message without its length prefix (what appendNodeBody writes), computed without writing it. */
export function nodeBodySize(node: EtNode): number {
  // Every field number is below 16: a tag is one byte.
  let size = 0;
  if (node.id !== 0) size += 1 + varintSize(node.id);
  if (node.name !== '') size += 1 + stringFieldSize(node.name);
  size += 1 + varintSize(NODE_TYPE[node.type]);
  if (node.dataDeps.length > 0) {
    let packed = 0;
    for (const d of node.dataDeps) packed += varintSize(d);
    size += 1 + varintSize(packed) + packed;
  }
  if (node.durationMicros !== 0) size += 1 + varintSize(node.durationMicros);
  for (const a of node.attrs) {
    const body = attrBodySize(a);
    size += 1 + varintSize(body) + body;
  }
  return size;
}

/** One `attr` entry (field 10) of a node message. */
export function attrEntryBytes(a: EtAttr): Uint8Array {
  const s = new ByteSink(64);
  attr(s, a);
  return s.view().slice();
}

function writeNodeMessage(s: ByteSink, node: EtNode): void {
  if (node.id !== 0) {
    s.varint(1 << 3);
    s.varint(node.id);
  }
  if (node.name !== '') stringField(s, 2, node.name);
  s.varint(3 << 3);
  s.varint(NODE_TYPE[node.type]);
  if (node.dataDeps.length > 0) {
    let packed = 0;
    for (const d of node.dataDeps) {
      if (d < 0) throw new RangeError(`varint ${d} < 0`);
      packed += varintSize(d);
    }
    s.varint((5 << 3) | 2);
    s.varint(packed);
    for (const d of node.dataDeps) s.varint(d);
  }
  if (node.durationMicros !== 0) {
    s.varint(7 << 3);
    s.varint(node.durationMicros);
  }
  for (const a of node.attrs) attr(s, a);
}

/** GlobalMetadata { version } with its length prefix. */
export function appendMetadata(out: ByteSink, version: string): void {
  const s = scratchSink();
  try {
    stringField(s, 1, version);
    out.varint(s.length);
    out.bytes(s.view());
  } finally {
    releaseScratch();
  }
}
