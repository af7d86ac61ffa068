/**
 * Unpacks the zoo's .tar.gz archives with node-tar (`tar` on npm, the npm CLI's own extractor):
 * streamed, so a 500 MB archive is never held in memory. The safety limits are node-tar's, made
 * strict so that a hostile archive is an error rather than a warning:
 * - entries whose path contains `..` are refused (node-tar, strict); absolute paths are refused
 *   here (node-tar would only strip the leading `/`), so nothing lands outside the folder;
 * - only regular files and folders are written: symbolic and hard links, devices and FIFOs are
 *   skipped, so no link can point out of the folder (node-tar also never writes through a symlink);
 * - long-name and pax headers over 1 MiB (node-tar's `maxMetaEntrySize`) are skipped, never
 *   buffered; a size that is not a number leaves the header's own size in force, and an entry
 *   larger than the rest of the archive is refused ("Truncated input") rather than waited on;
 * - paths deeper than 1024 folders are refused (node-tar's `maxDepth`); bad header checksums too.
 */
import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';

export class TarError extends Error {}

/** Long-name and pax headers are a few hundred bytes; node-tar's default cap, stated here. */
const MAX_METADATA_ENTRY_BYTES = 1 << 20;

/** Entry types the zoo's archives need; everything else (links, devices, FIFOs) is skipped. */
const WRITTEN_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

const isGzip = (path: string): boolean => {
  const fd = openSync(path, 'r');
  try {
    const magic = Buffer.alloc(2);
    return readSync(fd, magic, 0, 2, 0) === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
};

/** A tar path that is absolute or climbs out of the folder it is unpacked into. */
const escapes = (name: string): boolean => {
  const cleaned = name.replace(/\\/g, '/');
  return isAbsolute(cleaned) || /^[A-Za-z]:/.test(cleaned) || cleaned.split('/').includes('..');
};

/** Unpacks a .tar.gz into `root`; returns the files written, in archive order. */
export async function extractTarGz(archivePath: string, root: string): Promise<string[]> {
  if (!isGzip(archivePath)) throw new TarError('not a gzip file or corrupted');
  mkdirSync(root, { recursive: true });
  const files: string[] = [];
  let refused: string | undefined;
  // Loaded here, not at the top: every translate imports the zoo's resolver, few unpack archives.
  const { extract } = await import('tar');
  try {
    await extract({
      file: archivePath,
      cwd: root,
      strict: true,
      preservePaths: false,
      maxMetaEntrySize: MAX_METADATA_ENTRY_BYTES,
      // No owners or modes from the archive: the cache belongs to the user running modtrans.
      preserveOwner: false,
      noChmod: true,
      filter: (path, entry) => {
        if (escapes(path)) {
          refused ??= path;
          return false;
        }
        const type = 'type' in entry ? entry.type : undefined;
        if (type === undefined || !WRITTEN_TYPES.has(type)) return false;
        if (type !== 'Directory') files.push(join(root, normalize(path)));
        return true;
      },
    });
  } catch (e) {
    const message = (e as Error).message;
    throw new TarError(/zlib|incorrect header|unexpected end of file/i.test(message) ? `not a gzip file or corrupted (${message})` : message);
  }
  if (refused !== undefined) throw new TarError(`entry '${refused}' points outside the archive folder`);
  return files;
}
