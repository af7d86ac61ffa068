/**
 * Outputs are written atomically: each file to a fresh temporary file beside its target (a random
 * name, created with O_EXCL and O_NOFOLLOW, so a planted file or symlink is never written through),
 * renamed into place once complete. Multi-file sets (trace sets, SCALE-sim report sets) are
 * output-set.ts's.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readSync, renameSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError, fsErrorWords } from '../errors.js';
import { writeStderr, writeStdout } from './stdio.js';
import type { OutputFile, ReportFormat, WriterOutput } from '../writers/output.js';

/** What a non-regular file is, in words. */
function fileKind(st: { isDirectory(): boolean; isSymbolicLink(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * An output target must be a regular file or a new path: a FIFO, a device, a folder or a symbolic
 * link (to anything, /dev/stdout included) is refused rather than replaced or written through.
 */
export function checkOutputTarget(path: string): void {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    throw new InputError(`${path}: cannot write the output (${fsErrorWords(e)})`);
  }
  if (st.isFile()) return;
  const stdout = st.isSymbolicLink() || st.isCharacterDevice() || st.isFIFO() ? '; for standard output pass -o - or leave -o out' : '';
  throw new InputError(`${path}: is ${fileKind(st)}; an output must be a regular file or a new path${stdout}`);
}

/** Creates `dir` (and its parents) when missing, saying so on stderr. */
export function ensureOutputFolder(dir: string): void {
  let created: string | undefined;
  try {
    created = mkdirSync(dir, { recursive: true });
  } catch (e) {
    throw new InputError(`${dir}: cannot create the output folder (${fsErrorWords(e)})`);
  }
  if (created !== undefined) writeStderr(`modtrans: created the folder ${dir}\n`);
}

/**
 * 16 random hex digits from /dev/urandom (node:crypto and Web Crypto load node's stream modules,
 * milliseconds of a start); Math.random where there is no /dev/urandom.
 */
export function randomHex(): string {
  const bytes = Buffer.alloc(8);
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      readSync(fd, bytes, 0, 8, null);
    } finally {
      closeSync(fd);
    }
  } catch {
    for (let i = 0; i < 8; i++) bytes[i] = Math.floor(Math.random() * 256);
  }
  return bytes.toString('hex');
}

/** Longest part of a target's name kept in its temp name (a 255-byte name must still get a temp). */
const TEMP_STEM_CHARS = 96;

/** `.NAME.<16 hex>.tmp` beside `path`: unpredictable, and short enough for any valid target name. */
export function tempPathBeside(path: string): string {
  return join(dirname(path), `.${basename(path).slice(0, TEMP_STEM_CHARS)}.${randomHex()}.tmp`);
}

/**
 * A file-size limit (ulimit -f) sends SIGXFSZ, whose default action kills the process after the
 * write has already failed with EFBIG; caught, the EFBIG is reported as the write error it is.
 */
let fileSizeSignalCaught = false;
function catchFileSizeSignal(): void {
  if (fileSizeSignalCaught) return;
  fileSizeSignalCaught = true;
  process.on('SIGXFSZ', () => undefined);
}

const EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/**
 * Writes `content` to a new file `path`, which must not exist (O_EXCL: a planted file or symlink
 * fails the open instead of being written through). Returns the bytes written. On failure the
 * file is removed again, if this call created it, and the file-system error is rethrown.
 */
export function writeNewFile(path: string, content: string | Uint8Array): number {
  catchFileSizeSignal();
  const fd = openSync(path, EXCLUSIVE, 0o666);
  let written: number;
  try {
    written = typeof content === 'string' ? writeTextChunks(fd, content) : writeAll(fd, content);
    if (!fstatSync(fd).isFile()) throw new Error(`internal error: ${path} is not the regular file just created`);
  } catch (e) {
    closeQuietly(fd);
    removeQuietly(path);
    throw e;
  }
  closeSync(fd);
  return written;
}

function writeAll(fd: number, bytes: Uint8Array): number {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
  return bytes.length;
}

/** UTF-16 units encoded per chunk: at most 3 UTF-8 bytes each, so a chunk fits TEXT_CHUNK's bytes. */
const TEXT_CHUNK_UNITS = 1 << 14;
let textChunk: Buffer | undefined;

/**
 * `text` as UTF-8 through one reused 48 KiB buffer, never a Buffer of the whole text: fresh pages
 * cost ~6 ms per MB on the build machine (the 100k-node chain's 4 MB text file was ~33 ms in
 * Buffer.from alone). A chunk never ends inside a surrogate pair, so the bytes are Buffer.from's.
 */
export function writeTextChunks(fd: number, text: string): number {
  textChunk ??= Buffer.allocUnsafe(3 * TEXT_CHUNK_UNITS);
  let total = 0;
  for (let from = 0; from < text.length; ) {
    let to = Math.min(text.length, from + TEXT_CHUNK_UNITS);
    // A high surrogate at the chunk's end goes with its low half into the next chunk.
    const last = text.charCodeAt(to - 1);
    if (to < text.length && last >= 0xd800 && last <= 0xdbff) to--;
    const n = textChunk.write(text.slice(from, to), 0, 'utf8');
    total += writeAll(fd, textChunk.subarray(0, n));
    from = to;
  }
  return total;
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already failing: the first error is the one to report
  }
}

/** Removes a file this process created; a failure here never hides the error being reported. */
export function removeQuietly(path: string, recursive = false): void {
  try {
    if (recursive) rmSync(path, { recursive: true, force: true });
    else unlinkSync(path);
  } catch {
    // nothing to remove, or it cannot be removed: the original error matters more
  }
}

/** The one-line error of a failed output write: the target and the file system's reason. */
export function writeError(path: string, e: unknown): InputError {
  return e instanceof InputError ? e : new InputError(`${path}: cannot write the output (${fsErrorWords(e)})`);
}

/** A file written to its temp name, waiting to be renamed into place. */
export interface StagedFile {
  path: string;
  temp: string;
  bytes: number;
}

/** Checks the target, creates its folder, writes the content to a fresh temp file beside it. */
export function stageFile(path: string, content: string | Uint8Array): StagedFile {
  checkOutputTarget(path);
  ensureOutputFolder(dirname(path));
  const temp = tempPathBeside(path);
  try {
    return { path, temp, bytes: writeNewFile(temp, content) };
  } catch (e) {
    throw writeError(path, e);
  }
}

/** Renames staged files into place; the ones not renamed yet are removed on failure. */
export function commitStaged(staged: readonly StagedFile[]): void {
  for (const [i, f] of staged.entries()) {
    try {
      renameSync(f.temp, f.path);
    } catch (e) {
      for (const rest of staged.slice(i)) removeQuietly(rest.temp);
      throw writeError(f.path, e);
    }
  }
}

/** Removes staged temp files (a later output failed). */
export function discardStaged(staged: readonly StagedFile[]): void {
  for (const f of staged) removeQuietly(f.temp);
}

export function writeFileAtomic(path: string, content: string | Uint8Array): void {
  commitStaged([stageFile(path, content)]);
}

/** Writes every file to its temp name first and renames them only when all are complete. */
export function writeFilesAtomic(files: readonly OutputFile[]): void {
  const staged: StagedFile[] = [];
  try {
    for (const f of files) staged.push(stageFile(f.path, f.bytes));
  } catch (e) {
    discardStaged(staged);
    throw e;
  }
  commitStaged(staged);
}

/** Writes to FILE, or to standard output when no file is given. Returns whether a file was written. */
export function emit(content: string, file: string | undefined): boolean {
  if (file === undefined || file === '-') {
    writeStdout(content);
    return false;
  }
  writeFileAtomic(file, content);
  return true;
}

/** emit(), then names the file on stderr as `what` when one was written. */
export function emitNoted(content: string, file: string | undefined, what: string): void {
  if (emit(content, file) && file !== undefined) noteWritten(what, file);
}

/** Names a written file (or files) on stderr, so the user always learns where output went. */
export function noteWritten(what: string, path: string): void {
  writeStderr(`modtrans: ${what} -> ${path}\n`);
}

/** Warnings go to stderr, so they never mix with an output written to stdout. */
export function warn(lines: readonly string[]): void {
  for (const line of lines) writeStderr(`modtrans: warning: ${line}\n`);
}

/** A writer's output: its text on standard output, its files written atomically. Returns whether a file was written. */
export function emitOutput(output: WriterOutput): boolean {
  if (output.stdout !== undefined) writeStdout(output.stdout);
  writeFilesAtomic(output.files);
  return output.files.length > 0;
}

/** --format of inspect and memory: json, csv, anything else the text table. */
export function reportFormatOf(format: string): ReportFormat {
  return format === 'json' || format === 'csv' ? format : 'table';
}
