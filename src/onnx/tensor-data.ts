/**
 * Reading a tensor's elements on demand. Only small tensors are ever read (Reshape targets, Slice
 * starts, Constant scalars); weights are never touched. External data is resolved relative to the
 * model's folder and refused when absolute or escaping it, as text and after symbolic links are
 * resolved (realpath): a link inside the folder pointing outside it is refused unread.
 */
import { elementCount } from '../ir/dim.js';
import { closeSync, constants, fstatSync, openSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { InputError, fsErrorWords, shown } from '../errors.js';
import type { TensorRef } from '../ir/graph.js';
import { DType, dtypeBits, dtypeName } from '../ir/dtype.js';
import { decodeTensor } from './decode.js';
import { BufferWire, readFullyAt, WireType } from './wire.js';

/**
 * External data refused for where it is or what it is (outside the model's folder, not a regular
 * file), as opposed to missing: shape inference passes over a missing weight file, never over this.
 */
export class RefusedDataError extends InputError {}

/** Reads byte spans of the model file itself (inline tensor payloads). */
export interface SpanReader {
  readonly modelPath: string;
  readSpan(offset: number, length: number): Uint8Array;
}

/** Reading more than this many elements is refused: shape logic never needs weight-sized data. */
const MAX_VALUE_ELEMENTS = 1 << 20;

export type TensorValues = number[] | string[];

/** Largest varint element (int64 as 10 bytes): bounds the bytes a packed field of `count` needs. */
const MAX_ELEMENT_BYTES = 10;
/** Tensors whose elements are split over several fields are re-decoded whole, up to this size. */
const MAX_MIXED_BYTES = 16 * 1024 * 1024;

/**
 * Reads `wanted` bytes at `offset` of an external data file, after checking the declared span
 * [offset, offset + length) lies inside it; only what the dims need is read, never the whole span.
 */
function readFileSpan(path: string, offset: number, length: number | undefined, wanted: number, what: string): Uint8Array {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO would otherwise block the open until a writer comes.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new InputError(`${what}: external data file '${shown(path)}' cannot be opened (${fsErrorWords(e)})`);
  }
  try {
    const stats = fstatSync(fd);
    // A folder opens fine on Linux; reading it would throw EISDIR, a bug-looking error; a device reads forever.
    if (!stats.isFile()) throw new RefusedDataError(`${what}: external data '${shown(path)}' is not a regular file`);
    const size = stats.size;
    const byteLength = length ?? size - offset;
    if (offset + byteLength > size || byteLength < 0) {
      throw new InputError(`${what}: external data [${offset}, ${offset + byteLength}) lies beyond the end of '${shown(path)}' (${size} bytes)`);
    }
    const readBytes = Math.min(byteLength, wanted);
    const buf = Buffer.alloc(readBytes);
    return buf.subarray(0, readFullyAt(fd, buf, offset));
  } finally {
    closeSync(fd);
  }
}

/** The external data file of a tensor, checked to stay inside the model's folder. */
function resolveExternalLocation(modelPath: string, location: string, tensorName: string): string {
  const base = dirname(resolve(modelPath));
  const what = `${modelPath}: tensor '${shown(tensorName)}': external data location '${shown(location)}'`;
  if (isAbsolute(location)) throw new RefusedDataError(`${what} is absolute (must be relative to the model's folder)`);
  const target = resolve(base, location);
  if (!inside(base, target)) throw new RefusedDataError(`${what} escapes the model's folder`);
  // The text stays inside; symbolic links may still lead out (w.bin -> /etc/passwd).
  let real: string;
  try {
    real = realpathSync(target);
  } catch {
    return target; // missing (stripped weights): opening it says so, and shape inference passes over it
  }
  const realBase = realpathSync(base);
  if (!inside(realBase, real)) throw new RefusedDataError(`${what} resolves to '${shown(real)}', outside the model's folder ${shown(realBase)}`);
  return real;
}

/** Whether `target` lies strictly inside the folder `base` (both absolute). */
function inside(base: string, target: string): boolean {
  const rel = relative(base, target);
  return !(rel === '' || rel.startsWith('..' + sep) || rel === '..' || isAbsolute(rel));
}

function tensorElements(ref: TensorRef): number {
  return elementCount(ref.dims);
}

/** The elements of a tensor as numbers (bool -> 0/1) or strings. */
export function readTensorValues(ref: TensorRef, spans: SpanReader): TensorValues {
  const count = tensorElements(ref);
  const what = `${spans.modelPath}: tensor '${ref.name}'`;
  if (count > MAX_VALUE_ELEMENTS) throw new InputError(`${what}: ${count} elements are too many to read for shape inference`);
  const data = ref.data;
  if (data.kind === 'empty') {
    if (count === 0) return [];
    throw new InputError(`${what}: has ${count} elements but carries no data`);
  }
  if (data.kind === 'external') {
    const path = resolveExternalLocation(spans.modelPath, data.location, ref.name);
    return decodeRaw(readFileSpan(path, data.offset, data.length, rawBytesNeeded(ref, what), what), ref.dtype, count, what);
  }
  if (data.encoding === 'raw') {
    // Only the bytes the dims need: a hostile raw_data may be far longer than its dims say.
    const needed = rawBytesNeeded(ref, what);
    if (data.byteLength < needed) throw new InputError(`${what}: raw data holds ${data.byteLength} bytes, ${needed} needed`);
    return decodeRaw(spans.readSpan(data.offset, needed), ref.dtype, count, what);
  }
  const limit = data.encoding === 'mixed' || data.encoding === 'string' ? MAX_MIXED_BYTES : count * MAX_ELEMENT_BYTES + MAX_ELEMENT_BYTES;
  if (data.byteLength > limit) {
    throw new InputError(`${what}: ${data.byteLength} bytes of data are more than its dims (${count} elements) can need`);
  }
  const bytes = spans.readSpan(data.offset, data.byteLength);
  if (data.encoding === 'mixed') return decodeFields(bytes, data.offset, ref, what);
  // One string_data field: the span is the string's own bytes.
  if (data.encoding === 'string') return [new TextDecoder().decode(bytes)];
  return decodePacked(new BufferWire(bytes, data.offset), data.encoding, ref.dtype, bytes.length, what, count);
}

function rawBytesNeeded(ref: TensorRef, what: string): number {
  const bits = dtypeBits(ref.dtype);
  if (bits === 0 || bits % 8 !== 0) throw new InputError(`${what}: cannot read values of type ${dtypeName(ref.dtype)}`);
  return (bits / 8) * tensorElements(ref);
}

function decodeRaw(bytes: Uint8Array, dtype: number, count: number, what: string): number[] {
  const bits = dtypeBits(dtype);
  if (bits === 0 || bits % 8 !== 0) throw new InputError(`${what}: cannot read values of type ${dtypeName(dtype)}`);
  if (bytes.length < (bits / 8) * count) throw new InputError(`${what}: raw data holds ${bytes.length} bytes, ${(bits / 8) * count} needed`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) out[i] = readElement(view, dtype, i);
  return out;
}

function readElement(view: DataView, dtype: number, i: number): number {
  switch (dtype) {
    case DType.FLOAT: return view.getFloat32(i * 4, true);
    case DType.DOUBLE: return view.getFloat64(i * 8, true);
    case DType.INT64: return Number(view.getBigInt64(i * 8, true));
    case DType.UINT64: return Number(view.getBigUint64(i * 8, true));
    case DType.INT32: return view.getInt32(i * 4, true);
    case DType.UINT32: return view.getUint32(i * 4, true);
    case DType.INT16: return view.getInt16(i * 2, true);
    case DType.UINT16: return view.getUint16(i * 2, true);
    case DType.INT8: return view.getInt8(i);
    case DType.UINT8: case DType.BOOL: return view.getUint8(i);
    case DType.FLOAT16: return halfToNumber(view.getUint16(i * 2, true));
    case DType.BFLOAT16: return bfloat16ToNumber(view.getUint16(i * 2, true));
    default: return view.getUint8(i);
  }
}

/** A bfloat16 is the high half of a float32's bits. */
const bfloat16Scratch = new DataView(new ArrayBuffer(4));
function bfloat16ToNumber(bits: number): number {
  bfloat16Scratch.setUint32(0, (bits & 0xffff) << 16);
  return bfloat16Scratch.getFloat32(0);
}

function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

function decodePacked(w: BufferWire, encoding: string, dtype: number, byteLength: number, what: string, count: number): TensorValues {
  const end = w.pos + byteLength;
  const out: number[] = [];
  while (w.pos < end) {
    switch (encoding) {
      case 'float': out.push(w.float()); break;
      case 'double': out.push(w.double()); break;
      case 'int32': out.push(int32Field(w.int64(), dtype)); break;
      case 'int64': case 'uint64': out.push(w.int64()); break;
      case 'string': return [new TextDecoder().decode(w.bytes())];
      default: throw new InputError(`${what}: unreadable data encoding`);
    }
  }
  if (out.length !== count) throw new InputError(`${what}: holds ${out.length} elements, dims say ${count}`);
  return out;
}

/** int32_data carries every small type; float16/bfloat16 as raw bit patterns. */
function int32Field(v: number, dtype: number): number {
  if (dtype === DType.FLOAT16) return halfToNumber(v & 0xffff);
  if (dtype === DType.BFLOAT16) return bfloat16ToNumber(v);
  return v;
}

function decodeFields(bytes: Uint8Array, offset: number, ref: TensorRef, what: string): TensorValues {
  // Re-decode the whole TensorProto, collecting every data element in order.
  const w = new BufferWire(bytes, offset);
  const numbers: number[] = [];
  const strings: string[] = [];
  decodeTensor(new BufferWire(bytes, offset), offset + bytes.length); // validates structure
  while (w.pos < offset + bytes.length) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    const one = (): number => (field === 4 ? w.float() : field === 10 ? w.double() : field === 5 ? int32Field(w.int64(), ref.dtype) : w.int64());
    if (field === 6 && wt === WireType.LEN) strings.push(new TextDecoder().decode(w.bytes()));
    else if ([4, 5, 7, 10, 11].includes(field)) {
      if (wt === WireType.LEN) {
        const end = w.lengthEnd();
        while (w.pos < end) numbers.push(one());
      } else numbers.push(one());
      if (numbers.length > tensorElements(ref)) break; // more than the dims say: reported below
    } else w.skipType(wt);
  }
  if (strings.length > 0) return strings;
  if (numbers.length !== tensorElements(ref)) throw new InputError(`${what}: holds ${numbers.length} elements, dims say ${tensorElements(ref)}`);
  return numbers;
}
