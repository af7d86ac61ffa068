/** Outputs are written atomically: a temp file beside the target, renamed into place on success. */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError, fsErrorWords } from '../errors.js';
import { writeStderr, writeStdout } from './stdio.js';
import type { ReportFormat, WriterOutput } from '../writers/output.js';

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
  for (const f of output.files) writeFileAtomic(f.path, f.bytes);
  return output.files.length > 0;
}

/** --format of inspect and memory: json, csv, anything else the text table. */
export function reportFormatOf(format: string): ReportFormat {
  return format === 'json' || format === 'csv' ? format : 'table';
}
