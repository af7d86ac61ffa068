/**
 * Protobuf wire access over two kinds of byte source, behind one small interface so each ONNX
 * message has exactly one decoder:
 * - `BufferWire`: an in-memory span (no protobufjs: a run reading a model loads none of it);
 * - `FileWire`: positional reads through a small window, for models too large to load. Skipping a
 *   field (a weight payload) moves the position without reading a byte.
 * Positions are absolute file offsets in both, so lazy tensor references are the same either way.
 */
import { readSync } from 'node:fs';
import { indexOutOfRange } from '../errors.js';

export const WireType = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 } as const;

/**
 * Thrown for malformed protobuf bytes (`malformed`) or well-formed bytes describing an impossible
 * model (a negative dim); the reader turns it into a one-line InputError naming the file.
 */
export class WireError extends Error {
  constructor(message: string, readonly offset: number, readonly malformed = true) {
    super(message);
  }
}

export interface Wire {
  /** Absolute offset of the next byte. */
  readonly pos: number;
  /** Absolute offset one past the last byte of this source. */
  readonly end: number;
  /** Field tag: [fieldNumber, wireType]. */
  tag(): [number, number];
  /** Varint as an unsigned 32-bit number (lengths, enums, tags). */
  uint32(): number;
  /** Varint as a signed 64-bit integer, as a JS number (exact up to 2^53). */
  int64(): number;
  float(): number;
  double(): number;
  /** Length-prefixed bytes, copied out (only for small fields). */
  bytes(): Uint8Array;
  string(): string;
  /**
   * A name field (of a value, node, tensor, attribute): refused (a model error) when it holds
   * control characters. One of `known[from .. to)` (all of `known` by default) when it is one
   * (the same string, not a copy).
   */
  name(known?: readonly string[], from?: number, to?: number): string;
  /** Reads a length prefix and checks it fits: returns the absolute end of the field. */
  lengthEnd(): number;
  skip(byteCount: number): void;
  skipType(wireType: number): void;
  /** Bytes [start, start+length) as a new in-memory wire. */
  sub(start: number, length: number): Wire;
}

const utf8 = new TextDecoder('utf-8');

/** Lengths beyond 2^53 cannot be positions in any file JS can address exactly. */
const MAX_LENGTH = Number.MAX_SAFE_INTEGER;

/** Copied-out fields (names, strings) larger than this are refused: no real name is 16 MiB. */
const MAX_COPIED_FIELD_BYTES = 16 * 1024 * 1024;

/**
 * An unsigned varint as an exact JS number (lengths of fields over 4 GiB need more than the 32
 * bits protobufjs's `uint32()` keeps). Refuses values of 2^53 and above.
 */
function varintLength(byte: () => number, offset: () => number): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    const b = byte();
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) {
      if (value > MAX_LENGTH) throw new WireError('field length beyond 2^53 bytes', offset());
      return value;
    }
    scale *= 128;
  }
  throw new WireError('varint longer than 10 bytes', offset());
}

/** A varint as (low, high) 32-bit halves, two's complement; at most 10 bytes. */
function varint64(byte: () => number, offset: () => number): [number, number] {
  let low = 0;
  let high = 0;
  for (let shift = 0; shift < 70; shift += 7) {
    const b = byte();
    if (shift < 28) low |= (b & 0x7f) << shift;
    else if (shift === 28) {
      low |= (b & 0x0f) << 28;
      high |= (b & 0x7f) >> 4;
    } else high |= (b & 0x7f) << (shift - 32);
    if ((b & 0x80) === 0) return [low >>> 0, high | 0];
  }
  throw new WireError('varint longer than 10 bytes', offset());
}

/** C0 controls and DEL: never part of a real name, and they would break one-line messages. */
function hasControlChars(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** A well-formed file naming something with control characters (not "not a valid ONNX file"). */
function controlCharsError(name: string, offset: number): WireError {
  return new WireError(`the name ${JSON.stringify(name.slice(0, 40))} holds control characters`, offset, false);
}

/** Node's native latin1 decoder, without `toString`'s argument checks (every name of a graph goes through it). */
type Latin1Slicing = Buffer & { latin1Slice(start: number, end: number): string };

/** Strings up to this many bytes are tried as ASCII first. */
const ASCII_FAST_PATH_BYTES = 64;

/** Whether bytes [from, end) are all ASCII (then latin1 decoding is exact and cheaper than UTF-8). */
function isAscii(buf: Uint8Array, from: number, end: number): boolean {
  for (let i = from; i < end; i++) if ((buf[i] ?? 0x80) >= 0x80) return false;
  return true;
}

/** An in-memory span [base, base + buf.length) of the file. */
export class BufferWire implements Wire {
  private readonly buf: Latin1Slicing;
  /** Offset of the next byte in `buf`. */
  private at = 0;
  /** Absolute offset of `buf[0]`. */
  private readonly base: number;
  constructor(bytes: Uint8Array, base = 0) {
    this.base = base;
    // A Buffer view (no copy) for its native latin1 decoding of ASCII names.
    this.buf = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) as Latin1Slicing;
  }
  get pos(): number {
    return this.base + this.at;
  }
  get end(): number {
    return this.base + this.buf.length;
  }
  tag(): [number, number] {
    const t = this.uint32();
    return [t >>> 3, t & 7];
  }
  // Varints are decoded here, not by protobufjs, so every malformed one is a WireError. One-byte
  // varints (most tags, lengths and dims of a graph) take the fast path. The multi-byte paths are
  // methods of their own: a closure over `this` in these methods would make every call allocate
  // its context once the slow path has run (the 100k-node chain: 26 MB of garbage in lengthEnd).
  uint32(): number {
    const b = this.buf[this.at];
    if (b !== undefined && b < 0x80) {
      this.at++;
      return b;
    }
    return this.varintHalves()[0];
  }
  int64(): number {
    const b = this.buf[this.at];
    if (b !== undefined && b < 0x80) {
      this.at++;
      return b;
    }
    const [low, high] = this.varintHalves();
    return high * 4294967296 + low;
  }
  private varintHalves(): [number, number] {
    return varint64(() => this.byte(), () => this.pos);
  }
  private multiByteLength(): number {
    return varintLength(() => this.byte(), () => this.pos);
  }
  float(): number {
    const i = this.fixed(4);
    return this.buf.readFloatLE(i);
  }
  double(): number {
    const i = this.fixed(8);
    return this.buf.readDoubleLE(i);
  }
  /** Moves over a fixed-size field, returning its offset in `buf`. */
  private fixed(byteCount: number): number {
    const i = this.at;
    if (i + byteCount > this.buf.length) throw new WireError('unexpected end of data', this.pos);
    this.at = i + byteCount;
    return i;
  }
  bytes(): Uint8Array {
    const end = this.lengthEnd();
    const from = this.at;
    if (end - this.pos > MAX_COPIED_FIELD_BYTES) throw new WireError(`a ${end - this.pos}-byte string field is too long`, this.pos);
    this.at = end - this.base;
    return this.buf.subarray(from, this.at);
  }
  string(): string {
    const end = this.lengthEnd() - this.base;
    const from = this.at;
    // Short ASCII strings (every name of a real graph): no view, no decoder call.
    if (end - from <= ASCII_FAST_PATH_BYTES && isAscii(this.buf, from, end)) {
      this.at = end;
      return this.buf.latin1Slice(from, end);
    }
    if (end - from > MAX_COPIED_FIELD_BYTES) throw new WireError(`a ${end - from}-byte string field is too long`, this.pos);
    this.at = end;
    return utf8.decode(this.buf.subarray(from, end));
  }
  name(known?: readonly string[], knownFrom = 0, knownTo = known?.length ?? 0): string {
    const at = this.pos;
    const end = this.lengthEnd() - this.base;
    const from = this.at;
    const length = end - from;
    const buf = this.buf;
    if (known !== undefined) {
      for (let k = knownFrom; k < knownTo; k++) {
        const candidate = known[k] ?? '';
        if (candidate.length !== length) continue;
        let same = true;
        // Printable ASCII bytes only: there a byte is its character (a control byte is refused below).
        for (let i = 0; i < length && same; i++) {
          const b = buf[from + i] ?? 0;
          same = b >= 0x20 && b < 0x7f && candidate.charCodeAt(i) === b;
        }
        if (same) {
          this.at = end;
          return candidate;
        }
      }
    }
    // One pass over the bytes: ASCII (then latin1 is exact) and free of controls. Decoded UTF-8
    // holds a control character exactly where the bytes hold one (multi-byte sequences never
    // contain a byte below 0x80).
    if (length > MAX_COPIED_FIELD_BYTES) throw new WireError(`a ${length}-byte string field is too long`, this.pos);
    let ascii = length <= ASCII_FAST_PATH_BYTES;
    let control = false;
    for (let i = from; i < end; i++) {
      const b = buf[i] ?? 0;
      if (b >= 0x80) ascii = false;
      else if (b < 0x20 || b === 0x7f) control = true;
    }
    this.at = end;
    const name = ascii ? buf.latin1Slice(from, end) : utf8.decode(buf.subarray(from, end));
    if (control) throw controlCharsError(name, at);
    return name;
  }
  private byte(): number {
    const b = this.buf[this.at];
    if (b === undefined) throw new WireError('unexpected end of data', this.pos);
    this.at++;
    return b;
  }
  lengthEnd(): number {
    const b = this.buf[this.at];
    let length: number;
    if (b !== undefined && b < 0x80) {
      this.at++;
      length = b;
    } else length = this.multiByteLength();
    const end = this.pos + length;
    if (end > this.end) throw new WireError(`field length ${length} runs past the end of its message`, this.pos);
    return end;
  }
  skip(byteCount: number): void {
    if (byteCount < 0 || this.pos + byteCount > this.end) throw new WireError('unexpected end of data', this.pos);
    this.at += byteCount;
  }
  skipType(wireType: number): void {
    if (wireType === WireType.SGROUP || wireType === WireType.EGROUP || wireType > 5) {
      throw new WireError(`unsupported wire type ${wireType}`, this.pos);
    }
    // LEN through our 64-bit length: protobufjs would truncate lengths of 4 GiB and more.
    if (wireType === WireType.LEN) this.at = this.lengthEnd() - this.base;
    else if (wireType === WireType.VARINT) this.uint32();
    else this.skip(wireType === WireType.I64 ? 8 : 4);
  }
  sub(start: number, length: number): Wire {
    const from = start - this.base;
    if (from < 0 || length < 0 || from + length > this.buf.length) throw new WireError('span outside the data', start);
    return new BufferWire(this.buf.subarray(from, from + length), start);
  }
}

/** Counts what a FileWire actually read from disk (for the bench). */
export interface ReadStats {
  bytesRead: number;
  reads: number;
}

/** Largest window; sequential reads double up to it. */
const MAX_WINDOW_BYTES = 64 * 1024;
/**
 * Window after a jump (a skipped payload): the next tensor header is usually under 200 bytes, so
 * re-reading 64 KiB after each skipped weight would read mostly bytes that are skipped next.
 */
const MIN_WINDOW_BYTES = 1024;

/**
 * Positional reads over a file of any size (offsets are JS numbers, exact to 2^53, so files
 * beyond 2 GiB work). Only the window around the current position is ever held; its size adapts:
 * small after a skip, doubling while reads stay sequential.
 */
export class FileWire implements Wire {
  private window = Buffer.alloc(0);
  private windowStart = 0;
  private nextWindowBytes = MAX_WINDOW_BYTES;
  private position: number;
  private readonly limit: number;
  constructor(
    private readonly fd: number,
    start: number,
    end: number,
    readonly stats: ReadStats,
  ) {
    this.position = start;
    this.limit = end;
  }
  get pos(): number {
    return this.position;
  }
  get end(): number {
    return this.limit;
  }
  /** Window size for a refill at the current position: grow when sequential, shrink after a jump. */
  private windowBytesFor(count: number): number {
    const sequential = this.position === this.windowStart + this.window.length;
    this.nextWindowBytes = sequential ? Math.min(MAX_WINDOW_BYTES, this.nextWindowBytes * 2) : MIN_WINDOW_BYTES;
    return Math.min(Math.max(this.nextWindowBytes, count), this.limit - this.position);
  }
  /** Makes [position, position + count) available in the window. */
  private ensure(count: number): number {
    if (this.position + count > this.limit) throw new WireError('unexpected end of data', this.position);
    const offsetInWindow = this.position - this.windowStart;
    if (offsetInWindow >= 0 && offsetInWindow + count <= this.window.length) return offsetInWindow;
    const length = this.windowBytesFor(count);
    const buf = Buffer.allocUnsafe(length);
    const got = readFullyAt(this.fd, buf, this.position);
    this.stats.bytesRead += got;
    this.stats.reads += 1;
    this.window = buf.subarray(0, got);
    this.windowStart = this.position;
    if (got < count) throw new WireError('unexpected end of file', this.position + got);
    return 0;
  }
  private byte(): number {
    const i = this.ensure(1);
    this.position += 1;
    return this.window[i] ?? indexOutOfRange(i);
  }
  tag(): [number, number] {
    const t = this.uint32();
    return [t >>> 3, t & 7];
  }
  private varint(): [number, number] {
    return varint64(() => this.byte(), () => this.position);
  }
  /** The next byte when it is a whole varint already in the window (most tags and lengths), else -1. */
  private oneByteVarint(): number {
    const i = this.position - this.windowStart;
    const b = i >= 0 ? this.window[i] : undefined;
    if (b === undefined || b >= 0x80) return -1;
    this.position++;
    return b;
  }
  uint32(): number {
    const b = this.oneByteVarint();
    return b >= 0 ? b : this.varint()[0];
  }
  int64(): number {
    const b = this.oneByteVarint();
    if (b >= 0) return b;
    const [low, high] = this.varint();
    return high * 4294967296 + low;
  }
  float(): number {
    const i = this.ensure(4);
    this.position += 4;
    return this.window.readFloatLE(i);
  }
  double(): number {
    const i = this.ensure(8);
    this.position += 8;
    return this.window.readDoubleLE(i);
  }
  bytes(): Uint8Array {
    const end = this.lengthEnd();
    const length = end - this.position;
    if (length > MAX_COPIED_FIELD_BYTES) throw new WireError(`a ${length}-byte string field is too long`, this.position);
    const i = this.ensure(length);
    this.position = end;
    return Uint8Array.prototype.slice.call(this.window, i, i + length);
  }
  string(): string {
    return utf8.decode(this.bytes());
  }
  name(): string {
    const at = this.position;
    const name = this.string();
    if (hasControlChars(name)) throw controlCharsError(name, at);
    return name;
  }
  private multiByteLength(): number {
    return varintLength(() => this.byte(), () => this.position);
  }
  lengthEnd(): number {
    const b = this.oneByteVarint();
    const length = b >= 0 ? b : this.multiByteLength();
    const end = this.position + length;
    if (end > this.limit) throw new WireError(`field length ${length} runs past the end of its message`, this.position);
    return end;
  }
  skip(byteCount: number): void {
    if (byteCount < 0 || this.position + byteCount > this.limit) throw new WireError('unexpected end of data', this.position);
    this.position += byteCount;
  }
  skipType(wireType: number): void {
    switch (wireType) {
      case WireType.VARINT:
        this.varint();
        return;
      case WireType.I64:
        this.skip(8);
        return;
      case WireType.LEN:
        this.position = this.lengthEnd();
        return;
      case WireType.I32:
        this.skip(4);
        return;
      default:
        throw new WireError(`unsupported wire type ${wireType}`, this.position);
    }
  }
  sub(start: number, length: number): Wire {
    if (start < 0 || length < 0 || start + length > this.limit) throw new WireError('span outside the file', start);
    if (length > MAX_COPIED_FIELD_BYTES) throw new WireError(`a ${length}-byte span is too large to load`, start);
    const saved = this.position;
    this.position = start;
    const i = this.ensure(length);
    const copy = Uint8Array.prototype.slice.call(this.window, i, i + length);
    this.position = saved;
    return new BufferWire(copy, start);
  }
}

/**
 * Fills `buf` from `fd` at byte `position`, looping because readSync may return fewer bytes than
 * asked; returns the bytes read, fewer than `buf.length` only at the end of the file.
 */
export function readFullyAt(fd: number, buf: Uint8Array, position: number): number {
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}
