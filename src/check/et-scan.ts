/**
 * A fast, allocation-light reader of Chakra .et files for checking them (docs/astra-sim-formats.md B.2, B.3).
 * decodeEtFile builds a plain object per node, which is too slow for thousands of files of
 * thousands of nodes; this walks the wire bytes once and hands each node to a callback as a
 * reused view. Field numbers and attribute kinds come from the writers' schema, not from copies.
 */
import { defined, indexOutOfRange } from '../errors.js';
import { etSchema } from '../writers/chakra-encoding.js';

/** The attributes ASTRA-sim 2.x reads (B.5); all others are skipped. */
export const KNOWN_ATTRS = [
  'is_cpu_op', 'num_ops', 'tensor_size', 'comm_type', 'comm_size', 'involved_dim',
  'comm_priority', 'comm_src', 'comm_dst', 'comm_tag', 'pg_name',
] as const;
export type KnownAttr = (typeof KNOWN_ATTRS)[number];

export interface AttrSlot {
  /** Oneof member holding the value (e.g. 'int64_val'), or undefined when the attribute is absent. */
  kind: string | undefined;
  /** Numeric value of scalar kinds (bools as 0/1); NaN for strings and lists. */
  num: number;
  /** string_val's text. */
  text: string | undefined;
  /** bool_list's values. */
  bools: boolean[] | undefined;
}

/** One node as the scanner sees it; the same object is refilled for every node. */
export interface NodeView {
  /** Position of the node in the file (0 = first node after the metadata). */
  index: number;
  id: number;
  /** Byte range of the name in the file, decoded only when a finding needs it. */
  nameStart: number;
  nameEnd: number;
  type: number;
  /** data_deps then ctrl_deps (both honoured by ASTRA-sim 2.x, B.9): the first depCount entries. */
  deps: number[];
  depCount: number;
  durationMicros: number;
  attrs: Record<KnownAttr, AttrSlot>;
  /** The known attributes this node sets (the first presentCount), so that checks visit only those. */
  present: KnownAttr[];
  presentCount: number;
}

export class EtDecodeError extends Error {}

interface WireSchema {
  node: Record<'id' | 'name' | 'type' | 'ctrl_deps' | 'data_deps' | 'duration_micros' | 'attr', number>;
  attrName: number;
  /** Oneof member name and protobuf type, by field number. */
  valueKinds: ({ kind: string; type: string } | undefined)[];
  boolListValues: number;
  /** Encoded attribute names by byte length, to recognise them without decoding strings. */
  attrNames: { name: KnownAttr; bytes: Uint8Array }[][];
}

let wire: WireSchema | undefined;

function wireSchema(): WireSchema {
  if (wire !== undefined) return wire;
  const { node } = etSchema();
  const attrType = node.root.lookupType('ChakraProtoMsg.AttributeProto');
  const boolList = node.root.lookupType('ChakraProtoMsg.BoolList');
  const id = (t: typeof node, f: string): number => defined(t.fields[f], `field ${f} of ${t.name} in the Chakra schema`).id;
  const valueKinds: WireSchema['valueKinds'] = [];
  for (const f of defined(attrType.oneofs['value'], 'oneof value of AttributeProto in the Chakra schema').fieldsArray) valueKinds[f.id] = { kind: f.name, type: f.type };
  const enc = new TextEncoder();
  wire = {
    node: {
      id: id(node, 'id'), name: id(node, 'name'), type: id(node, 'type'), ctrl_deps: id(node, 'ctrl_deps'),
      data_deps: id(node, 'data_deps'), duration_micros: id(node, 'duration_micros'), attr: id(node, 'attr'),
    },
    attrName: id(attrType, 'name'),
    valueKinds,
    boolListValues: id(boolList, 'values'),
    attrNames: KNOWN_ATTRS.reduce<WireSchema['attrNames']>((byLength, name) => {
      const bytes = enc.encode(name);
      const sameLength = byLength[bytes.length] ?? [];
      sameLength.push({ name, bytes });
      byLength[bytes.length] = sameLength;
      return byLength;
    }, []),
  };
  return wire;
}

const TWO_32 = 4294967296;

/** A cursor over the bytes; varints decode to exact numbers below 2^53. */
class Cursor {
  pos = 0;
  /** High and low 32 bits of the last varint, for signed and zigzag kinds. */
  hi = 0;
  lo = 0;
  constructor(readonly bytes: Uint8Array, readonly view: DataView) {}

  varint(end: number): number {
    const b = this.bytes;
    // Fast path: most varints (keys, lengths, small values) are one byte.
    if (this.pos < end) {
      const first = b[this.pos] ?? indexOutOfRange(this.pos);
      if (first < 0x80) {
        this.pos++;
        this.hi = 0;
        this.lo = first;
        return first;
      }
    }
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) throw new EtDecodeError(`truncated varint at byte ${this.pos}`);
      const byte = b[this.pos] ?? indexOutOfRange(this.pos);
      this.pos++;
      if (i < 4) lo |= (byte & 0x7f) << (7 * i);
      else if (i === 4) {
        lo |= (byte & 0x7f) << 28;
        hi |= (byte & 0x7f) >>> 4;
      } else hi |= (byte & 0x7f) << (7 * i - 32);
      if ((byte & 0x80) === 0) {
        this.lo = lo >>> 0;
        this.hi = hi >>> 0;
        return this.hi * TWO_32 + this.lo;
      }
    }
    throw new EtDecodeError(`varint longer than 10 bytes at byte ${this.pos}`);
  }

  skip(wireType: number, end: number): void {
    if (wireType === 0) this.varint(end);
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 2) this.pos += this.varint(end);
    else if (wireType === 5) this.pos += 4;
    else throw new EtDecodeError(`unsupported wire type ${wireType} at byte ${this.pos}`);
    if (this.pos > end) throw new EtDecodeError(`field runs past its message at byte ${end}`);
  }

  /** End offset of a length-delimited field starting at pos. */
  lengthEnd(end: number): number {
    const len = this.varint(end);
    const stop = this.pos + len;
    if (stop > end) throw new EtDecodeError(`length ${len} at byte ${this.pos} runs past the end (${end})`);
    return stop;
  }
}

/** Signed 64-bit value of the last varint (exact below 2^53 in magnitude). */
const signed64 = (c: Cursor): number => (c.hi | 0) * TWO_32 + c.lo;
/** Zigzag-decoded value of the last varint (sint32, sint64). */
const zigzag = (c: Cursor): number => {
  const half = c.hi * 2147483648 + (c.lo >>> 1);
  return c.lo & 1 ? -half - 1 : half;
};

function scalarValue(c: Cursor, type: string, wireType: number, end: number): number {
  if (wireType === 0) {
    c.varint(end);
    switch (type) {
      case 'int32': return c.lo | 0;
      case 'uint32': return c.lo >>> 0;
      case 'int64': return signed64(c);
      case 'sint32':
      case 'sint64': return zigzag(c);
      case 'bool': return c.lo !== 0 || c.hi !== 0 ? 1 : 0;
      default: return c.hi * TWO_32 + c.lo;
    }
  }
  const at = c.pos;
  if (wireType === 5) {
    c.pos += 4;
    if (c.pos > end) throw new EtDecodeError(`truncated fixed32 at byte ${at}`);
    if (type === 'float') return c.view.getFloat32(at, true);
    return type === 'sfixed32' ? c.view.getInt32(at, true) : c.view.getUint32(at, true);
  }
  if (wireType === 1) {
    c.pos += 8;
    if (c.pos > end) throw new EtDecodeError(`truncated fixed64 at byte ${at}`);
    if (type === 'double') return c.view.getFloat64(at, true);
    return Number(type === 'sfixed64' ? c.view.getBigInt64(at, true) : c.view.getBigUint64(at, true));
  }
  c.skip(wireType, end);
  return Number.NaN;
}

const textDecoder = new TextDecoder();

export function decodeName(bytes: Uint8Array, start: number, end: number): string {
  // Short ASCII strings (pg_name, most node names) without TextDecoder's per-call cost.
  if (end - start <= 32) {
    let text = '';
    for (let i = start; i < end; i++) {
      const b = bytes[i] ?? indexOutOfRange(i);
      if (b >= 0x80) return textDecoder.decode(bytes.subarray(start, end));
      text += String.fromCharCode(b);
    }
    return text;
  }
  return textDecoder.decode(bytes.subarray(start, end));
}

function matchName(bytes: Uint8Array, start: number, end: number, names: WireSchema['attrNames']): KnownAttr | undefined {
  const len = end - start;
  const candidates = names[len];
  if (candidates === undefined) return undefined;
  for (let c = 0; c < candidates.length; c++) {
    const candidate = candidates[c] ?? indexOutOfRange(c);
    const nb = candidate.bytes;
    // From the end: comm_src, comm_dst and comm_tag differ only there.
    let i = len - 1;
    while (i >= 0 && bytes[start + i] === nb[i]) i--;
    if (i < 0) return candidate.name;
  }
  return undefined;
}

function readDeps(c: Cursor, wireType: number, end: number, v: NodeView): void {
  if (wireType === 2) {
    const stop = c.lengthEnd(end);
    while (c.pos < stop) v.deps[v.depCount++] = c.varint(stop);
  } else if (wireType === 0) v.deps[v.depCount++] = c.varint(end);
  else c.skip(wireType, end);
}

function readAttr(c: Cursor, end: number, s: WireSchema, v: NodeView): void {
  let slot: AttrSlot | undefined;
  let slotName: KnownAttr | undefined;
  let nameSeen = false;
  let kind: string | undefined;
  let num = Number.NaN;
  let text: string | undefined;
  let bools: boolean[] | undefined;
  while (c.pos < end) {
    const key = c.varint(end);
    const field = key >>> 3;
    const wireType = key & 7;
    if (field === s.attrName && wireType === 2) {
      const stop = c.lengthEnd(end);
      const name = matchName(c.bytes, c.pos, stop, s.attrNames);
      c.pos = stop;
      nameSeen = true;
      if (name === undefined) {
        c.pos = end;
        return;
      }
      slot = v.attrs[name];
      slotName = name;
      continue;
    }
    const member = s.valueKinds[field];
    if (member === undefined) {
      c.skip(wireType, end);
      continue;
    }
    // A later oneof member replaces an earlier one, as protobuf merging does.
    kind = member.kind;
    num = Number.NaN;
    text = undefined;
    bools = undefined;
    if (member.type === 'string' && wireType === 2) {
      const stop = c.lengthEnd(end);
      text = decodeName(c.bytes, c.pos, stop);
      c.pos = stop;
    } else if (member.type === 'BoolList' && wireType === 2) {
      const stop = c.lengthEnd(end);
      bools = [];
      while (c.pos < stop) {
        const k = c.varint(stop);
        if (k >>> 3 !== s.boolListValues) c.skip(k & 7, stop);
        else if ((k & 7) === 2) {
          const listEnd = c.lengthEnd(stop);
          while (c.pos < listEnd) bools.push(c.varint(listEnd) !== 0);
        } else bools.push(c.varint(stop) !== 0);
      }
    } else if (wireType === 2) c.skip(wireType, end);
    else num = scalarValue(c, member.type, wireType, end);
  }
  // The first attribute of a name wins; a later duplicate is ignored.
  if (nameSeen && slot !== undefined && slotName !== undefined && slot.kind === undefined && kind !== undefined) {
    v.present[v.presentCount++] = slotName;
    slot.kind = kind;
    slot.num = num;
    slot.text = text;
    slot.bools = bools;
  }
}

function emptyAttrs(): NodeView['attrs'] {
  const attrs = {} as NodeView['attrs'];
  for (const name of KNOWN_ATTRS) attrs[name] = { kind: undefined, num: Number.NaN, text: undefined, bools: undefined };
  return attrs;
}

function resetView(v: NodeView, index: number): void {
  v.index = index;
  v.id = 0;
  v.nameStart = 0;
  v.nameEnd = 0;
  v.type = 0;
  // Buffers are reused with a count: no allocation per node.
  v.depCount = 0;
  v.durationMicros = 0;
  for (let i = 0; i < v.presentCount; i++) {
    const a = v.attrs[v.present[i] ?? indexOutOfRange(i)];
    a.kind = undefined;
    a.num = Number.NaN;
    a.text = undefined;
    a.bools = undefined;
  }
  v.presentCount = 0;
}

/**
 * Calls onNode for every node of a .et file, in file order; returns the node count. Throws
 * EtDecodeError when the bytes are not a length-delimited GlobalMetadata followed by Nodes.
 */
export function scanEtFile(bytes: Uint8Array, onNode: (node: NodeView) => void): number {
  const s = wireSchema();
  const c = new Cursor(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const total = bytes.length;
  if (total === 0) throw new EtDecodeError('empty file (no GlobalMetadata)');
  c.pos = c.lengthEnd(total); // GlobalMetadata: ASTRA-sim does not interpret it (B.3).
  const v: NodeView = { index: 0, id: 0, nameStart: 0, nameEnd: 0, type: 0, deps: [], depCount: 0, durationMicros: 0, attrs: emptyAttrs(), present: [], presentCount: 0 };
  let index = 0;
  const f = s.node;
  while (c.pos < total) {
    const end = c.lengthEnd(total);
    resetView(v, index);
    while (c.pos < end) {
      const key = c.varint(end);
      if (key > 0xffffffff) throw new EtDecodeError(`bad field key at byte ${c.pos}`);
      const field = key >>> 3;
      const wireType = key & 7;
      if (field === f.id && wireType === 0) v.id = c.varint(end);
      else if (field === f.type && wireType === 0) v.type = c.varint(end);
      else if (field === f.duration_micros && wireType === 0) v.durationMicros = c.varint(end);
      else if (field === f.name && wireType === 2) {
        v.nameEnd = c.lengthEnd(end);
        v.nameStart = c.pos;
        c.pos = v.nameEnd;
      } else if (field === f.data_deps || field === f.ctrl_deps) readDeps(c, wireType, end, v);
      else if (field === f.attr && wireType === 2) readAttr(c, c.lengthEnd(end), s, v);
      else c.skip(wireType, end);
    }
    onNode(v);
    index++;
  }
  return index;
}
