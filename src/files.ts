/**
 * Reading the small files a user names (option files, profiles, topologies): only regular files,
 * only up to a size. A FIFO or a device (`--tp-plan /dev/zero`) would block or read forever, so
 * the file is opened without blocking and checked before a byte is read.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readdirSync, readSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, fsErrorWords } from './errors.js';

/** A folder shipped with the package (examples/, hardware-profiles/, clusters/), found by walking up from this module (src/, dist/src/ or the bundle's dist/cli/). */
export function shippedDir(name: string): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

/** The names (without `ext`) of the files in `dir` ending in `ext`, sorted. */
export function shippedNames(dir: string, ext: string): string[] {
  return readdirSync(dir).filter((f) => f.endsWith(ext)).map((f) => basename(f, ext)).sort();
}

const MiB = 1024 * 1024;
/** Default size limit of an option or data file. */
export const MAX_OPTION_FILE_BYTES = 16 * MiB;

/** What a non-regular file is, in words. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'is a folder';
  if (st.isFIFO()) return 'is a FIFO';
  if (st.isCharacterDevice()) return 'is a character device';
  if (st.isBlockDevice()) return 'is a block device';
  if (st.isSocket()) return 'is a socket';
  return 'is not a regular file';
}

/** "1 MiB" / "16 KiB" / "300 bytes" for a limit. */
export function bytesText(bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * The text of `path`, which must be a regular file of at most `maxBytes`; anything else is an
 * InputError "`where`: cannot read `noun` (why)", e.g. "--tp-plan /dev/zero: cannot read the
 * option file (is a character device, not a regular file)". Nothing of a refused file is read.
 */
export function readRegularFile(path: string, where: string, noun: string, maxBytes: number = MAX_OPTION_FILE_BYTES): string {
  return readRegularFileBytes(path, where, noun, maxBytes).toString('utf8');
}

export function readRegularFileBytes(path: string, where: string, noun: string, maxBytes: number = MAX_OPTION_FILE_BYTES): Buffer {
  const refuse = (why: string): InputError => new InputError(`${where}: cannot read ${noun} (${why})`);
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw refuse(fsErrorWords(e));
  }
  try {
    const st = fstatSync(fd);
    // A folder keeps its usual words ("is a folder"); other kinds say they are not regular files.
    if (!st.isFile()) throw refuse(st.isDirectory() ? 'is a folder' : `${kindOf(st)}, not a regular file`);
    if (st.size > maxBytes) throw refuse(`${st.size} bytes, more than the limit of ${bytesText(maxBytes)}`);
    // One byte more than the size: a file that grows while read is cut at the limit, not read on.
    const buf = Buffer.allocUnsafe(Math.min(st.size, maxBytes) + 1);
    let got = 0;
    for (;;) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
      if (got === buf.length) break;
    }
    if (got > maxBytes) throw refuse(`more than the limit of ${bytesText(maxBytes)}`);
    return buf.subarray(0, got);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw refuse(fsErrorWords(e));
  } finally {
    closeSync(fd);
  }
}
