/**
 * A small streaming reader for .tar.gz archives (ustar, GNU long names, pax headers), enough for
 * the ONNX Model Zoo's archives: gunzip with node:zlib, walk 512-byte headers, write regular files
 * as they stream (a 500 MB archive is never held in memory). Links and devices are skipped; entry
 * paths that are absolute or climb out of the destination are refused.
 * Written here rather than taken from npm: ~150 lines, no dependency to audit for path traversal.
 */
import { closeSync, mkdirSync, openSync, writeSync, createReadStream } from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

const BLOCK = 512;

export class TarError extends Error {}

interface Header {
  name: string;
  size: number;
  type: string;
}

function text(block: Buffer, start: number, length: number): string {
  const raw = block.subarray(start, start + length);
  const nul = raw.indexOf(0);
  return raw.subarray(0, nul === -1 ? raw.length : nul).toString('utf8');
}

/** Size field: octal text, or base-256 (high bit set) for sizes over 8 GiB. */
function sizeOf(block: Buffer): number {
  const field = block.subarray(124, 136);
  if (field[0]! & 0x80) {
    let value = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    return value;
  }
  const digits = text(block, 124, 12).trim();
  if (!/^[0-7]*$/.test(digits)) throw new TarError(`bad size field '${digits}'`);
  return digits === '' ? 0 : parseInt(digits, 8);
}

function checksumOk(block: Buffer): boolean {
  const recorded = parseInt(text(block, 148, 8).trim(), 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : block[i]!;
  return sum === recorded;
}

function parseHeader(block: Buffer): Header {
  if (!checksumOk(block)) throw new TarError('bad header checksum (not a tar archive?)');
  const name = text(block, 0, 100);
  const magic = text(block, 257, 6);
  const prefix = magic.startsWith('ustar') ? text(block, 345, 155) : '';
  return { name: prefix === '' ? name : `${prefix}/${name}`, size: sizeOf(block), type: String.fromCharCode(block[156]!) };
}

/** Long names and pax records are metadata: real ones are a few hundred bytes. */
const MAX_METADATA_ENTRY_BYTES = 1 << 20;

/** A pax `size` record; anything but a whole number of bytes would stall the parser (NaN never reaches 0). */
function paxSize(text: string): number {
  const size = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(size)) throw new TarError(`bad pax size '${text}'`);
  return size;
}

/** pax extended header records: "LEN key=value\n". */
function paxRecords(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of data.toString('utf8').split('\n')) {
    const m = /^\d+ ([^=]+)=(.*)$/s.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** Destination of an entry, or undefined when its path would leave `root`. */
export function safeEntryPath(root: string, name: string): string | undefined {
  const cleaned = normalize(name.replace(/\\/g, '/'));
  if (cleaned === '.' || cleaned === '' || isAbsolute(cleaned) || cleaned.split(sep).includes('..')) return undefined;
  return join(root, cleaned);
}

/** The parser state machine: headers, then each entry's data padded to 512 bytes. */
class TarExtractor extends Writable {
  readonly files: string[] = [];
  private pending: Buffer = Buffer.alloc(0);
  private entry: { header: Header; left: number; fd?: number; collect?: Buffer[] } | undefined;
  private padding = 0;
  private longName: string | undefined;
  private pax = new Map<string, string>();
  private ended = false;
  constructor(private readonly root: string) {
    super();
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error) => void): void {
    try {
      this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
      this.drain();
      done();
    } catch (e) {
      this.closeEntry();
      done(e as Error);
    }
  }
  override _final(done: (e?: Error) => void): void {
    this.closeEntry();
    done(this.entry !== undefined ? new TarError('archive ends inside an entry') : undefined);
  }
  private drain(): void {
    for (;;) {
      if (this.entry !== undefined) {
        if (!this.consumeData()) return;
        continue;
      }
      const skip = Math.min(this.padding, this.pending.length);
      this.pending = this.pending.subarray(skip);
      this.padding -= skip;
      if (this.padding > 0 || this.pending.length < BLOCK || this.ended) {
        if (this.ended) this.pending = Buffer.alloc(0);
        return;
      }
      const block = this.pending.subarray(0, BLOCK);
      this.pending = this.pending.subarray(BLOCK);
      if (block.every((b) => b === 0)) {
        this.ended = true; // end-of-archive marker; anything after is ignored
        continue;
      }
      this.startEntry(parseHeader(block));
    }
  }
  private startEntry(header: Header): void {
    const name = this.pax.get('path') ?? this.longName ?? header.name;
    const size = this.pax.has('size') ? paxSize(this.pax.get('size')!) : header.size;
    const entry = { header: { ...header, name, size }, left: size } as NonNullable<TarExtractor['entry']>;
    if (header.type === 'L' || header.type === 'x') {
      // These are held in memory: a hostile archive must not make us buffer gigabytes.
      if (size > MAX_METADATA_ENTRY_BYTES) throw new TarError(`a ${size}-byte long-name or pax header (at most ${MAX_METADATA_ENTRY_BYTES})`);
      entry.collect = [];
    }
    else {
      this.longName = undefined;
      this.pax = new Map();
    }
    if (header.type === '0' || header.type === '\0') {
      const target = safeEntryPath(this.root, name);
      if (target === undefined) throw new TarError(`entry '${name}' points outside the archive folder`);
      mkdirSync(dirname(target), { recursive: true });
      entry.fd = openSync(target, 'w');
      this.files.push(target);
    } else if (header.type === '5') {
      const target = safeEntryPath(this.root, name);
      if (target !== undefined) mkdirSync(target, { recursive: true });
    }
    this.entry = entry;
    this.padding = (BLOCK - (size % BLOCK)) % BLOCK;
    if (size === 0) this.finishEntry();
  }
  /** Feeds pending bytes to the current entry; false when more input is needed. */
  private consumeData(): boolean {
    const entry = this.entry!;
    const take = Math.min(entry.left, this.pending.length);
    if (take === 0) return false;
    const piece = this.pending.subarray(0, take);
    if (entry.fd !== undefined) writeSync(entry.fd, piece);
    else if (entry.collect !== undefined) entry.collect.push(Buffer.from(piece));
    this.pending = this.pending.subarray(take);
    entry.left -= take;
    if (entry.left === 0) this.finishEntry();
    return true;
  }
  private finishEntry(): void {
    const entry = this.entry!;
    if (entry.header.type === 'L') this.longName = text(Buffer.concat(entry.collect!), 0, entry.header.size);
    else if (entry.header.type === 'x') this.pax = paxRecords(Buffer.concat(entry.collect!));
    this.closeEntry();
    this.entry = undefined;
  }
  private closeEntry(): void {
    if (this.entry?.fd !== undefined) {
      closeSync(this.entry.fd);
      this.entry.fd = undefined;
    }
  }
}

/** Unpacks a .tar.gz into `root`; returns the files written. */
export async function extractTarGz(archivePath: string, root: string): Promise<string[]> {
  mkdirSync(root, { recursive: true });
  const extractor = new TarExtractor(root);
  try {
    await pipeline(createReadStream(archivePath), createGunzip(), extractor);
  } catch (e) {
    if (e instanceof TarError) throw e;
    throw new TarError((e as NodeJS.ErrnoException).code === 'Z_DATA_ERROR' ? 'not a gzip file or corrupted' : (e as Error).message);
  }
  return extractor.files;
}
