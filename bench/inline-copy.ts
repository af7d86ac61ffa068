/**
 * Writes a copy of a (graph-only) model with every initializer's data inline as `raw_data` zeros,
 * streamed to disk: how the bench and the tests make VGG16-sized and > 4 GiB models without holding
 * them in memory. With `sparse`, payloads are seeked over instead of written (a sparse file on file
 * systems that support it), so a 5 GB model costs a few KB of disk.
 */
import { elementCount } from '../src/ir/dim.js';
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dtypeBits } from '../src/ir/dtype.js';
import { decodeTensor } from '../src/onnx/decode.js';
import { BufferWire, WireType } from '../src/onnx/wire.js';

export interface InlineCopyOptions {
  /** Seek over payloads instead of writing zeros. */
  sparse?: boolean;
}

export interface InlineCopyResult {
  fileBytes: number;
  payloadBytes: number;
  initializers: number;
}

/** A varint of any length up to 2^53 (field lengths beyond 4 GiB). */
export function encodeVarint(value: number): Buffer {
  const bytes: number[] = [];
  let v = value;
  while (v >= 128) {
    bytes.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

/** A part of the output: bytes to write, or a run of zero payload bytes. */
type Part = Buffer | { zeros: number };

const partBytes = (p: Part): number => (Buffer.isBuffer(p) ? p.length : p.zeros);

/** TensorProto with dims, data_type, name and a raw_data field of `payloadBytes`, header only. */
function inlineTensorHeader(name: string, dtype: number, dims: readonly number[], payloadBytes: number): Buffer {
  const parts: Buffer[] = [];
  for (const d of dims) parts.push(encodeVarint(1 << 3), encodeVarint(d));
  parts.push(encodeVarint(2 << 3), encodeVarint(dtype));
  const nameBytes = Buffer.from(name, 'utf8');
  parts.push(encodeVarint((8 << 3) | 2), encodeVarint(nameBytes.length), nameBytes);
  parts.push(encodeVarint((9 << 3) | 2), encodeVarint(payloadBytes));
  return Buffer.concat(parts);
}

/** Top-level fields of a message as [field, wireType, start, end] (start = the tag's offset). */
function fieldsOf(buf: Uint8Array, base: number, end: number): [number, number, number, number][] {
  const w = new BufferWire(buf.subarray(base, end), base);
  const out: [number, number, number, number][] = [];
  while (w.pos < end) {
    const start = w.pos;
    const [field, wt] = w.tag();
    w.skipType(wt);
    out.push([field, wt, start, w.pos]);
  }
  return out;
}

/** The graph's parts with each initializer rewritten inline. */
function graphParts(src: Buffer, start: number, end: number): { parts: Part[]; payloadBytes: number; count: number } {
  const parts: Part[] = [];
  let payloadBytes = 0;
  let count = 0;
  for (const [field, wt, from, to] of fieldsOf(src, start, end)) {
    if (field !== 5 || wt !== WireType.LEN) {
      parts.push(src.subarray(from, to));
      continue;
    }
    const w = new BufferWire(src.subarray(from, to), from);
    w.tag();
    const bodyEnd = w.lengthEnd();
    const t = decodeTensor(w, bodyEnd);
    const payload = (elementCount(t.dims) * dtypeBits(t.dtype)) / 8;
    const header = inlineTensorHeader(t.name, t.dtype, t.dims, payload);
    parts.push(encodeVarint((5 << 3) | 2), encodeVarint(header.length + payload), header, { zeros: payload });
    payloadBytes += payload;
    count++;
  }
  return { parts, payloadBytes, count };
}

/** Streams `parts` to `path`; zero runs are written in chunks, or seeked over when sparse. */
function writeParts(path: string, parts: Part[], sparse: boolean): number {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(4 * 1024 * 1024);
  let position = 0;
  try {
    for (const p of parts) {
      if (Buffer.isBuffer(p)) position += writeSync(fd, p, 0, p.length, position);
      else if (sparse) position += p.zeros;
      else {
        for (let left = p.zeros; left > 0; ) {
          const n = writeSync(fd, chunk, 0, Math.min(chunk.length, left), position);
          position += n;
          left -= n;
        }
      }
    }
    ftruncateSync(fd, position); // a sparse tail needs the size set explicitly
    return position;
  } finally {
    closeSync(fd);
  }
}

export function writeInlineCopy(srcPath: string, dstPath: string, options: InlineCopyOptions = {}): InlineCopyResult {
  const src = readFileSync(srcPath);
  const parts: Part[] = [];
  let payloadBytes = 0;
  let initializers = 0;
  for (const [field, wt, from, to] of fieldsOf(src, 0, src.length)) {
    if (field !== 7 || wt !== WireType.LEN) {
      parts.push(src.subarray(from, to));
      continue;
    }
    const w = new BufferWire(src.subarray(from, to), from);
    w.tag();
    const graphEnd = w.lengthEnd();
    const graph = graphParts(src, w.pos, graphEnd);
    const graphBytes = graph.parts.reduce((a, p) => a + partBytes(p), 0);
    parts.push(encodeVarint((7 << 3) | 2), encodeVarint(graphBytes), ...graph.parts);
    payloadBytes += graph.payloadBytes;
    initializers += graph.count;
  }
  const fileBytes = writeParts(dstPath, parts, options.sparse === true);
  return { fileBytes, payloadBytes, initializers };
}
