/** Outputs are written atomically: a temp file beside the target, renamed into place on success. */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError } from '../errors.js';

export function writeFileAtomic(path: string, content: string | Uint8Array): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(tmp, content);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new InputError(`${path}: cannot write the output (${code})`);
  }
}

/** Writes to FILE, or to standard output when no file is given. */
export function emit(content: string, file: string | undefined): void {
  if (file === undefined || file === '-') process.stdout.write(content);
  else writeFileAtomic(file, content);
}

/** Warnings go to stderr, so they never mix with an output written to stdout. */
export function warn(lines: readonly string[]): void {
  for (const line of lines) process.stderr.write(`modtrans: warning: ${line}\n`);
}
