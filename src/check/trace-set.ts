/**
 * A trace set as it is on disk: the prefix a user names (the forms `translate -o` takes), the rank
 * files found, and what is wrong with the set as files before any is decoded: rank numbers out
 * of range, files that are not regular (a FIFO, a device: never opened) or too large to read, and,
 * when the writer's manifest `PREFIX.manifest.json` is there, files it does not list, lists with
 * another size, or a write that was interrupted. Sizes are checked before reading; reads are
 * bounded by them.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError, fsErrorWords } from '../errors.js';
import type { Manifest } from '../writers/manifest.js';
import type { Finding } from './findings.js';

/** The highest rank check-trace takes (2^20 - 1): more NPUs than any trace set is written for. */
export const MAX_RANK = 1_048_575;
/** A trace file larger than this is not read (a 10,000-node rank file is about 1 MB). */
export const MAX_TRACE_BYTES = 1 << 30;
/** Comm-groups files and manifests are read only up to this size. */
export const MAX_JSON_BYTES = 256 << 20;

export interface TraceFileOnDisk {
  rank: number;
  path: string;
}

export interface TraceSetOnDisk {
  prefix: string;
  files: TraceFileOnDisk[];
  /** What is wrong with the files as files (before decoding). */
  findings: Finding[];
  /** Ranks the manifest says the set has (0..ranks-1), when a complete manifest is there. */
  ranks?: number;
  /** The manifest read, if any. */
  manifest?: string;
}

const RANK_NAME = /^(0|[1-9][0-9]*)$/;

/** What a non-regular file is, in words. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * A regular file's bytes, at most `maxBytes`: opened without blocking (a FIFO swapped in would
 * otherwise block), checked to be a regular file of bounded size, read to its size and no further.
 * `what` names the file in errors.
 */
export function readRegularFile(path: string, maxBytes: number, what: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (e) {
    throw new InputError(`${path}: cannot read the ${what} (${fsErrorWords(e)})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new InputError(`${path}: the ${what} is ${kindOf(st)}, not a regular file`);
    if (st.size > maxBytes) throw new InputError(`${path}: the ${what} is ${st.size} bytes, more than the ${maxBytes} bytes read`);
    const out = Buffer.alloc(st.size);
    let done = 0;
    while (done < out.length) {
      const n = readSync(fd, out, done, out.length - done, done);
      if (n === 0) break;
      done += n;
    }
    return done === out.length ? out : out.subarray(0, done);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`${path}: cannot read the ${what} (${fsErrorWords(e)})`);
  } finally {
    closeSync(fd);
  }
}

/** Trace set bases in a folder: `BASE` of every `BASE.<rank>.et` and `BASE.manifest.json`. */
function setsIn(names: readonly string[]): string[] {
  const bases = new Set<string>();
  for (const name of names) {
    const et = /^(.+)\.(0|[1-9][0-9]*)\.et$/.exec(name);
    const manifest = /^(.+)\.manifest\.json$/.exec(name);
    const base = et?.[1] ?? manifest?.[1];
    if (base !== undefined && !base.startsWith('.')) bases.add(base);
  }
  return [...bases].sort();
}

function listFolder(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (e) {
    throw new InputError(`${dir}: cannot list the folder (${fsErrorWords(e)})`);
  }
}

/**
 * The prefix `arg` names, in the forms `translate -o` takes: `PREFIX`, `PREFIX.et`, or a folder
 * (`traces/`) holding one trace set (several: an error naming them).
 */
export function resolveTracePrefix(arg: string): string {
  let folder = /[/\\]$/.test(arg);
  if (!folder) {
    try {
      folder = statSync(arg).isDirectory();
    } catch {
      folder = false;
    }
  }
  if (!folder) return arg.replace(/\.et$/, '');
  const sets = setsIn(listFolder(arg));
  if (sets.length === 1) return join(arg, sets[0] ?? '');
  if (sets.length === 0) throw new InputError(`${arg}: the folder holds no trace set (files PREFIX.<rank>.et)`);
  const shown = sets.slice(0, 5).map((s) => join(arg, s));
  throw new InputError(`${arg}: the folder holds ${sets.length} trace sets (${shown.join(', ')}${sets.length > 5 ? ', ...' : ''}); name one`);
}

/** The manifest at `path`, or a finding saying why it cannot be used. */
function readManifest(path: string): { manifest?: Manifest; finding?: Finding } {
  let text: string;
  try {
    text = readRegularFile(path, MAX_JSON_BYTES, 'manifest').toString('utf8');
  } catch (e) {
    return { finding: { kind: 'manifest', effect: 'mixed-set', file: path, message: `${(e as Error).message}; the set is checked without it` } };
  }
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch (e) {
    return { finding: { kind: 'manifest', effect: 'mixed-set', file: path, message: `not JSON (${(e as Error).message}); the set is checked without it` } };
  }
  const doc = m as Partial<Manifest> | null;
  const filesOk = Array.isArray(doc?.files) && doc.files.every((f) => typeof f?.name === 'string' && Number.isSafeInteger(f.bytes));
  const ranksOk = doc?.ranks === undefined || (Number.isSafeInteger(doc.ranks) && doc.ranks >= 0 && doc.ranks <= MAX_RANK + 1);
  if (typeof doc !== 'object' || doc === null || !filesOk || !ranksOk || (doc.state !== 'complete' && doc.state !== 'committing')) {
    return { finding: { kind: 'manifest', effect: 'mixed-set', file: path, message: 'not a modtrans manifest (state, ranks, files [{ name, bytes }]); the set is checked without it' } };
  }
  return { manifest: doc as Manifest };
}

/** The rank files of PREFIX and what is wrong with them as files; never reads a trace. */
export function openTraceSet(prefixArg: string): TraceSetOnDisk {
  const prefix = resolveTracePrefix(prefixArg);
  const dir = dirname(prefix);
  const base = basename(prefix);
  const findings: Finding[] = [];
  const found: { rank: number; path: string; name: string; size: number }[] = [];
  for (const name of listFolder(dir)) {
    if (!name.startsWith(`${base}.`) || !name.endsWith('.et')) continue;
    const number = name.slice(base.length + 1, -3);
    if (!RANK_NAME.test(number)) continue;
    const path = join(dir, name);
    // Compared as text first: a 20-digit name must not become a 1e20 loop bound.
    const rank = number.length <= 7 ? Number(number) : Infinity;
    if (rank > MAX_RANK) {
      findings.push({ kind: 'stray-file', effect: 'mixed-set', file: path, message: `rank ${number.length > 24 ? `${number.slice(0, 24)}...` : number} is beyond the ${MAX_RANK} check-trace takes; not read` });
      continue;
    }
    let st: Stats;
    try {
      st = statSync(path);
    } catch (e) {
      const link = lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() === true ? 'a symbolic link that cannot be followed: ' : '';
      findings.push({ kind: 'unreadable-file', effect: 'crash', rank, message: `${path}: ${link}${fsErrorWords(e)}; not read` });
      continue;
    }
    if (!st.isFile()) {
      findings.push({ kind: 'unreadable-file', effect: 'crash', rank, message: `${path} is ${kindOf(st)}, not a regular file; not read` });
      continue;
    }
    if (st.size > MAX_TRACE_BYTES) {
      findings.push({ kind: 'unreadable-file', effect: 'crash', rank, message: `${path} is ${st.size} bytes, more than the ${MAX_TRACE_BYTES} bytes a trace file is read to; not read` });
      continue;
    }
    found.push({ rank, path, name, size: st.size });
  }
  const manifestPath = `${prefix}.manifest.json`;
  const hasManifest = lstatSync(manifestPath, { throwIfNoEntry: false }) !== undefined;
  const { manifest, finding } = hasManifest ? readManifest(manifestPath) : {};
  if (finding !== undefined) findings.push(finding);
  let files: TraceFileOnDisk[] = found.map((f) => ({ rank: f.rank, path: f.path }));
  let ranks: number | undefined;
  if (manifest?.state === 'committing') {
    findings.push({ kind: 'manifest', effect: 'mixed-set', file: manifestPath, message: 'the write of this set was interrupted while its files were moved into place: they may mix two runs (the next translate to this prefix finishes the move, or write the set again)' });
  } else if (manifest !== undefined) {
    const listed = new Map(manifest.files.map((f) => [f.name, f.bytes]));
    ranks = manifest.ranks;
    files = [];
    for (const f of found) {
      const bytes = listed.get(f.name);
      if (bytes === undefined) {
        findings.push({ kind: 'unlisted-file', effect: 'mixed-set', rank: f.rank, message: `${f.path} is not in ${manifestPath} (left by another run?); not checked` });
        continue;
      }
      if (bytes !== f.size) findings.push({ kind: 'manifest', effect: 'mixed-set', rank: f.rank, message: `${f.path} is ${f.size} bytes; ${manifestPath} lists ${bytes} (changed since it was written)` });
      files.push({ rank: f.rank, path: f.path });
    }
  }
  if (files.length === 0 && findings.length === 0) throw new InputError(`${prefix}: no trace files ${base}.<rank>.et in ${dir}`);
  return { prefix, files: files.sort((a, b) => a.rank - b.rank), findings, ...(ranks === undefined ? {} : { ranks }), ...(manifest === undefined ? {} : { manifest: manifestPath }) };
}
