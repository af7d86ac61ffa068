/**
 * Builds small ONNX files for tests with protobufjs's Writer (field numbers of onnx.proto3), so
 * tests can make exactly the graph a case needs: grouped convs, external data, broken files...
 */
import protobuf from 'protobufjs/minimal.js';

export type AttrValue = number | number[] | string | { float: number } | { floats: number[] } | { tensor: TensorSpec } | { graph: GraphSpec };

export interface TensorSpec {
  name: string;
  dtype: number;
  dims: number[];
  /** Inline elements as raw little-endian (int64 or float per dtype). */
  values?: number[];
  external?: { location: string; offset?: number; length?: number };
}

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  name?: string;
  domain?: string;
  attrs?: Record<string, AttrValue>;
}

export interface ValueSpec {
  name: string;
  dtype: number;
  dims: (number | string)[];
}

export interface GraphSpec {
  nodes: NodeSpec[];
  inputs: ValueSpec[];
  outputs: ValueSpec[];
  initializers?: TensorSpec[];
  name?: string;
}

type W = protobuf.Writer;

function message(w: W, field: number, body: (w: W) => void): void {
  w.uint32((field << 3) | 2).fork();
  body(w);
  w.ldelim();
}

function rawBytes(t: TensorSpec): Uint8Array {
  const values = t.values ?? [];
  const size = t.dtype === 7 || t.dtype === 11 ? 8 : 4;
  const buf = Buffer.alloc(values.length * size);
  values.forEach((v, i) => {
    if (t.dtype === 7) buf.writeBigInt64LE(BigInt(v), i * 8);
    else if (t.dtype === 1) buf.writeFloatLE(v, i * 4);
    else if (t.dtype === 11) buf.writeDoubleLE(v, i * 8);
    else buf.writeInt32LE(v, i * 4);
  });
  return buf;
}

export function writeTensor(w: W, t: TensorSpec): void {
  for (const d of t.dims) w.uint32(8).int64(d);
  w.uint32(16).int32(t.dtype);
  w.uint32(66).string(t.name);
  if (t.external) {
    const entries: [string, string][] = [['location', t.external.location]];
    if (t.external.offset !== undefined) entries.push(['offset', String(t.external.offset)]);
    if (t.external.length !== undefined) entries.push(['length', String(t.external.length)]);
    for (const [k, v] of entries) message(w, 13, (e) => e.uint32(10).string(k).uint32(18).string(v));
    w.uint32(112).int32(1);
  } else if (t.values !== undefined) w.uint32(74).bytes(rawBytes(t));
}

function writeAttr(w: W, name: string, v: AttrValue): void {
  w.uint32(10).string(name);
  if (typeof v === 'number') w.uint32(24).int64(v).uint32(160).int32(2);
  else if (typeof v === 'string') w.uint32(34).bytes(Buffer.from(v)).uint32(160).int32(3);
  else if (Array.isArray(v)) {
    for (const x of v) w.uint32(64).int64(x);
    w.uint32(160).int32(7);
  } else if ('float' in v) w.uint32(21).float(v.float).uint32(160).int32(1);
  else if ('floats' in v) {
    for (const x of v.floats) w.uint32(61).float(x);
    w.uint32(160).int32(6);
  } else if ('tensor' in v) {
    message(w, 5, (t) => writeTensor(t, v.tensor));
    w.uint32(160).int32(4);
  } else {
    message(w, 6, (g) => writeGraph(g, v.graph));
    w.uint32(160).int32(5);
  }
}

function writeValue(w: W, v: ValueSpec): void {
  w.uint32(10).string(v.name);
  message(w, 2, (type) => message(type, 1, (tensor) => {
    tensor.uint32(8).int32(v.dtype);
    message(tensor, 2, (shape) => {
      for (const d of v.dims) message(shape, 1, (dim) => (typeof d === 'number' ? dim.uint32(8).int64(d) : dim.uint32(18).string(d)));
    });
  }));
}

export function writeGraph(w: W, g: GraphSpec): void {
  for (const [i, n] of g.nodes.entries()) {
    message(w, 1, (nw) => {
    for (const x of n.inputs) nw.uint32(10).string(x);
    for (const x of n.outputs) nw.uint32(18).string(x);
    nw.uint32(26).string(n.name ?? `${n.op}_${i}`);
    nw.uint32(34).string(n.op);
    if (n.domain !== undefined) nw.uint32(58).string(n.domain);
    for (const [k, v] of Object.entries(n.attrs ?? {})) message(nw, 5, (a) => writeAttr(a, k, v));
    });
  }
  w.uint32(18).string(g.name ?? 'g');
  for (const t of g.initializers ?? []) message(w, 5, (tw) => writeTensor(tw, t));
  for (const v of g.inputs) message(w, 11, (vw) => writeValue(vw, v));
  for (const v of g.outputs) message(w, 12, (vw) => writeValue(vw, v));
}

export function buildModel(g: GraphSpec, opset = 13, otherDomains: Record<string, number> = {}): Uint8Array {
  const w = protobuf.Writer.create();
  w.uint32(8).int64(7);
  w.uint32(18).string('modtrans-test');
  message(w, 7, (gw) => writeGraph(gw, g));
  message(w, 8, (o) => o.uint32(10).string('').uint32(16).int64(opset));
  for (const [domain, version] of Object.entries(otherDomains)) message(w, 8, (o) => o.uint32(10).string(domain).uint32(16).int64(version));
  return w.finish();
}

export const FLOAT = 1;
export const INT64 = 7;
