/** Outputs are written atomically: a temp file beside the target, renamed into place on success. */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError, fsErrorWords } from '../errors.js';

export function writeFileAtomic(path: string, content: string | Uint8Array): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(tmp, content);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new InputError(`${path}: cannot write the output (${fsErrorWords(e)})`);
  }
}

/** Writes to FILE, or to standard output when no file is given. Returns whether a file was written. */
export function emit(content: string, file: string | undefined): boolean {
  if (file === undefined || file === '-') {
    process.stdout.write(content);
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
  process.stderr.write(`modtrans: ${what} -> ${path}\n`);
}

/** Warnings go to stderr, so they never mix with an output written to stdout. */
export function warn(lines: readonly string[]): void {
  for (const line of lines) process.stderr.write(`modtrans: warning: ${line}\n`);
}
