/**
 * `fetchZooModel(name)`: the cached model file of a zoo entry, downloading and unpacking it once.
 * Cache layout under the cache folder (XDG: $XDG_CACHE_HOME/modtrans or ~/.cache/modtrans):
 *   downloads/<file>[.part]   the archive while it downloads (kept across interruptions)
 *   zoo/<name>/...            the unpacked archive; its presence means "fetched"
 * Unpacking goes to a temporary folder renamed into place, so an interrupted unpack leaves nothing.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { InputError } from '../errors.js';
import { downloadResumable, verifySha256, type Progress } from './download.js';
import { archiveUrl, BASE_URL_ENV, findEntry, loadRegistry, type ZooEntry, type ZooRegistry } from './registry.js';
import { extractTarGz, TarError } from './tar.js';

export interface FetchOptions {
  cacheDir?: string;
  /** Mirror holding the archives by file name (default: each entry's published URL). */
  baseUrl?: string;
  registry?: ZooRegistry;
  progress?: Progress;
  env?: NodeJS.ProcessEnv;
}

/** $XDG_CACHE_HOME/modtrans, else ~/.cache/modtrans. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_CACHE_HOME'];
  return xdg !== undefined && xdg !== '' ? join(xdg, 'modtrans') : join(homedir(), '.cache', 'modtrans');
}

export function modelFolder(cacheDir: string, entry: ZooEntry): string {
  return join(cacheDir, 'zoo', entry.name);
}

/** The model inside an unpacked folder: the registry's path, else the only .onnx file found. */
function findModelFile(folder: string, entry: ZooEntry, label: string): string {
  const expected = join(folder, entry.modelPath);
  if (existsSync(expected)) return expected;
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (d.isDirectory() && depth < 3) walk(join(dir, d.name), depth + 1);
      else if (d.isFile() && d.name.endsWith('.onnx')) found.push(join(dir, d.name));
    }
  };
  walk(folder, 0);
  if (found.length === 1) return found[0]!;
  throw new InputError(`${label}: the archive holds ${found.length === 0 ? 'no' : found.length} .onnx files, not '${entry.modelPath}'`);
}

/** The cached model path when the entry is already fetched. */
export function cachedModel(cacheDir: string, entry: ZooEntry): string | undefined {
  const folder = modelFolder(cacheDir, entry);
  if (!existsSync(folder)) return undefined;
  try {
    return findModelFile(folder, entry, `zoo:${entry.name}`);
  } catch {
    return undefined;
  }
}

async function unpack(archive: string, cacheDir: string, entry: ZooEntry, label: string): Promise<string> {
  const folder = modelFolder(cacheDir, entry);
  const tmp = `${folder}.unpacking-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    await extractTarGz(archive, tmp);
    const model = findModelFile(tmp, entry, label);
    rmSync(folder, { recursive: true, force: true });
    renameSync(tmp, folder);
    return join(folder, relative(tmp, model));
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (e instanceof TarError) {
      rmSync(archive, { force: true }); // a broken archive is not worth resuming
      throw new InputError(`${label}: cannot unpack the archive: ${e.message}; it was deleted, run the command again`);
    }
    throw e;
  }
}

export async function fetchZooModel(name: string, options: FetchOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const registry = options.registry ?? loadRegistry(env);
  const entry = findEntry(registry, name);
  const label = `zoo:${entry.name}`;
  const cacheDir = options.cacheDir ?? defaultCacheDir(env);
  const cached = cachedModel(cacheDir, entry);
  if (cached !== undefined) return cached;

  const downloads = join(cacheDir, 'downloads');
  try {
    mkdirSync(downloads, { recursive: true });
  } catch (e) {
    throw new InputError(`${cacheDir}: cannot create the cache folder (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const archive = join(downloads, entry.file);
  const mirror = options.baseUrl ?? (env[BASE_URL_ENV] || undefined);
  if (!existsSync(archive) || statSync(archive).size === 0) {
    await downloadResumable(archiveUrl(entry, mirror), archive, { label, progress: options.progress });
  }
  await verifySha256(archive, entry.sha256, label);
  const model = await unpack(archive, cacheDir, entry, label);
  rmSync(archive, { force: true }); // unpacked: the archive would only double the disk used
  return model;
}
