/**
 * A direct protobuf encoder for Chakra nodes, byte-identical to chakra-encoding.ts's protobufjs
 * path (a test checks it) but without building message objects: writing 1,024 rank files of
 * thousands of nodes each is dominated by encoding otherwise. Field numbers: et_def.proto.
 */
import type { EtAttr, EtNode, EtNodeType } from './chakra-encoding.js';

const NODE_TYPE: Record<EtNodeType, number> = { COMP_NODE: 4, COMM_SEND_NODE: 5, COMM_RECV_NODE: 6, COMM_COLL_NODE: 7 };
const encoder = new TextEncoder();

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
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  varint(value: number): void {
    this.ensure(10);
    if (value < 0) throw new RangeError(`varint ${value} < 0`);
    let v = value;
    while (v >= 0x80) {
      this.buf[this.length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.length++] = v;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  /** UTF-8 of `text` with its length prefix; ASCII (node and layer names) byte by byte, with no encoder output to allocate. */
  string(text: string): void {
    const n = text.length;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      if (text.charCodeAt(i) >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (!ascii) {
      const b = encoder.encode(text);
      this.varint(b.length);
      this.bytes(b);
      return;
    }
    this.varint(n);
    this.ensure(n);
    for (let i = 0; i < n; i++) this.buf[this.length++] = text.charCodeAt(i);
  }

  /** Field `field` as a length-delimited message built by `body` (in a reused scratch sink: no buffer per message). */
  message(field: number, body: (s: ByteSink) => void): void {
    const inner = scratchSink();
    try {
      body(inner);
      this.varint((field << 3) | 2);
      this.varint(inner.length);
      this.bytes(inner.view());
    } finally {
      releaseScratch();
    }
  }

  /** The bytes written so far (a view: copy it before the sink is written again). */
  view(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

/** Scratch sinks by nesting depth (node, attr, list): emptied and reused, never allocated per message. */
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

function attr(s: ByteSink, a: EtAttr): void {
  s.message(10, (m) => {
    stringField(m, 1, a.name);
    const v = a.value;
    switch (v.kind) {
      case 'bool_val':
        m.varint(27 << 3);
        m.varint(v.value ? 1 : 0);
        break;
      case 'int32_val':
        m.varint(7 << 3);
        m.varint(v.value);
        break;
      case 'int64_val':
        m.varint(9 << 3);
        m.varint(v.value);
        break;
      case 'uint64_val':
        m.varint(13 << 3);
        m.varint(v.value);
        break;
      case 'string_val':
        stringField(m, 29, v.value);
        break;
      case 'bool_list':
        m.message(28, (l) => {
          if (v.value.length === 0) return;
          l.varint((1 << 3) | 2);
          l.varint(v.value.length);
          for (const x of v.value) l.varint(x ? 1 : 0);
        });
        break;
    }
  });
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
    const deps = scratchSink();
    try {
      for (const d of node.dataDeps) deps.varint(d);
      s.varint((5 << 3) | 2);
      s.varint(deps.length);
      s.bytes(deps.view());
    } finally {
      releaseScratch();
    }
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
