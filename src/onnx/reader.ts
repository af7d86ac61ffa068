/**
 * `readModel(path)`: the ONNX file -> `Model`. Small files are loaded and decoded in memory with
 * protobufjs; large ones are walked with positional reads, skipping every weight payload, so the
 * cost depends on the graph, not on the weights.
 */
import { closeSync, openSync, statSync } from 'node:fs';
import { InputError, fsErrorWords } from '../errors.js';
import type { Model } from '../ir/graph.js';
import { decodeModel } from './decode.js';
import type { SpanReader } from './tensor-data.js';
import { BufferWire, FileWire, readFullyAt, WireError, type ReadStats, type Wire } from './wire.js';

/** Files up to this size are read whole; beyond it, positional reads. */
const IN_MEMORY_LIMIT_BYTES = 16 * 1024 * 1024;

export interface LoadedModel {
  model: Model;
  /** Reads inline tensor payloads of this model on demand (small tensors only). */
  spans: SpanReader;
  stats: ReadStats & { fileBytes: number };
}

export interface ReadOptions {
  /** Force positional reads even for small files (tests, benchmarks). */
  streaming?: boolean;
}

function readWhole(path: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const size = statSync(path).size;
    const buf = Buffer.allocUnsafe(size);
    return buf.subarray(0, readFullyAt(fd, buf, 0));
  } finally {
    closeSync(fd);
  }
}

/** Reads [offset, offset + length) of the model file on demand (a small inline tensor). */
function readFileRange(path: string, offset: number, length: number, stats: ReadStats): Uint8Array {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new InputError(`${path}: cannot reopen the model file to read a tensor (${fsErrorWords(e)})`);
  }
  try {
    const out = Buffer.alloc(length);
    const got = readFullyAt(fd, out, offset);
    if (got < length) throw new InputError(`${path}: the file ends inside a tensor's data (it changed while being read?)`);
    stats.bytesRead += got;
    stats.reads += 1;
    return out;
  } finally {
    closeSync(fd);
  }
}

export function readModel(path: string, options: ReadOptions = {}): LoadedModel {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new InputError(`${path}: ${st.isDirectory() ? 'is a folder' : 'not a regular file'}, not an ONNX model`);
    size = st.size;
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`${path}: cannot read the model file (${fsErrorWords(e)})`);
  }
  if (size === 0) throw new InputError(`${path}: empty file, not an ONNX model`);

  const stats: ReadStats & { fileBytes: number } = { bytesRead: 0, reads: 0, fileBytes: size };
  let wire: Wire;
  let spans: SpanReader;
  let fd: number | undefined;
  if (size <= IN_MEMORY_LIMIT_BYTES && options.streaming !== true) {
    const buf = readWhole(path);
    stats.bytesRead = buf.length;
    stats.reads = 1;
    wire = new BufferWire(buf, 0);
    spans = { modelPath: path, readSpan: (offset, length) => buf.subarray(offset, offset + length) };
  } else {
    fd = openSync(path, 'r');
    wire = new FileWire(fd, 0, size, stats);
    spans = {
      modelPath: path,
      readSpan: (offset, length) => readFileRange(path, offset, length, stats),
    };
  }
  try {
    const fields = decodeModel(wire, size);
    if (fields.graph === undefined) throw new InputError(`${path}: not an ONNX model (no graph found)`);
    if (fields.opsets.size === 0 && fields.irVersion === 0) throw new InputError(`${path}: not an ONNX model (no IR version or opset)`);
    const model: Model = {
      path,
      irVersion: fields.irVersion,
      producerName: fields.producerName,
      producerVersion: fields.producerVersion,
      opsets: fields.opsets,
      graph: fields.graph,
    };
    return { model, spans, stats };
  } catch (e) {
    if (e instanceof WireError) {
      if (e.malformed && looksTruncated(e, size)) {
        throw new InputError(`${path}: the file looks truncated (${size} bytes; ${e.message} at byte ${e.offset}); copy or download it again`);
      }
      throw new InputError(e.malformed ? `${path}: not a valid ONNX file: ${e.message} at byte ${e.offset}` : `${path}: ${e.message}`);
    }
    if (e instanceof InputError) throw e;
    // protobufjs or decoding surprises on garbage input are input errors too.
    if (e instanceof RangeError || e instanceof TypeError) throw new InputError(`${path}: not a valid ONNX file: ${e.message}`);
    throw e;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A read that needs bytes past the end of the file: the file was cut short, not garbled. */
function looksTruncated(e: WireError, fileBytes: number): boolean {
  if (e.message === 'unexpected end of data') return true;
  const length = /^field length (\d+) runs past the end/.exec(e.message);
  return length !== null && e.offset + Number(length[1]) > fileBytes;
}
