/**
 * `fetchZooModel(name)`: the cached model file of a zoo entry, downloading and unpacking it once.
 * Cache layout under the cache folder (XDG: $XDG_CACHE_HOME/modtrans or ~/.cache/modtrans):
 *   downloads/<file>[.part]   the archive while it downloads (kept across interruptions)
 *   zoo/<name>/...            the unpacked archive; its presence means "fetched"
 *   downloads/<file>.lock     a folder held (mtime refreshed) while one process fetches the entry
 * Unpacking goes to a temporary folder renamed into place, so an interrupted unpack leaves nothing.
 * Concurrent fetches of one model (two shells, or `compare` on zoo:X twice) wait on the lock instead
 * of appending to the same .part.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { InputError, fsErrorWords } from '../errors.js';
import { downloadResumable, verifySha256, type Progress } from './download.js';
import { archiveUrl, findEntry, loadRegistry, mirrorBaseUrl, type ZooEntry, type ZooRegistry } from './registry.js';
import { extractTarGz, TarError } from './tar.js';

export interface FetchOptions {
  cacheDir?: string;
  /** Mirror holding the archives by file name (default: each entry's published URL). */
  baseUrl?: string;
  registry?: ZooRegistry;
  progress?: Progress;
  /** One-line notices for the user (e.g. the hash of an archive the registry has none for). */
  notice?: (line: string) => void;
  /** How long to wait on another fetch's lock before saying so (default 10 s). */
  lockNoticeAfterMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** $XDG_CACHE_HOME/modtrans, else ~/.cache/modtrans. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_CACHE_HOME'];
  return xdg !== undefined && xdg !== '' ? join(xdg, 'modtrans') : join(homedir(), '.cache', 'modtrans');
}

function modelFolder(cacheDir: string, entry: ZooEntry): string {
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
  const [only] = found;
  if (only !== undefined && found.length === 1) return only;
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

const LOCK_POLL_MS = 200;
/**
 * A lock whose mtime is older than this is a crashed owner's and is taken over; a live owner
 * refreshes it every half of this (proper-lockfile's `stale` and `update`).
 */
const LOCK_STALE_MS = 10_000;
/** After this long waiting for another fetch, say so. */
const LOCK_NOTICE_AFTER_MS = 10_000;

const errnoCode = (e: unknown): string => fsErrorWords(e);

function cacheWriteError(path: string, e: unknown): InputError {
  return new InputError(`${path}: cannot write to the model cache (${errnoCode(e)}); pass a writable --cache-dir or set XDG_CACHE_HOME`);
}

/**
 * Runs `work` holding `lockPath` (a folder, created atomically by proper-lockfile; released on
 * exit and on signals); waits while a live process holds it, takes it over once it is stale.
 */
async function withLock<T>(lockPath: string, work: () => Promise<T>, notice?: (line: string) => void, noticeAfterMs = LOCK_NOTICE_AFTER_MS): Promise<T> {
  const { default: lockfile } = await import('proper-lockfile');
  const waitStart = Date.now();
  let noticed = false;
  let release: () => Promise<void>;
  for (;;) {
    try {
      release = await lockfile.lock(lockPath, {
        lockfilePath: lockPath,
        realpath: false,
        stale: LOCK_STALE_MS,
        retries: 0,
        // Lost the lock (this process stalled past `stale`, or the folder was deleted): carry on,
        // at worst two processes download the same archive; the default would crash the process.
        onCompromised: () => notice?.(`lost the lock ${lockPath} while fetching; another modtrans may fetch the same archive`),
      });
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') {
        rmSync(lockPath, { force: true }); // a pid lock file of an older modtrans, left by a crash
        continue;
      }
      if (code !== 'ELOCKED') throw cacheWriteError(lockPath, e);
      if (!noticed && Date.now() - waitStart > noticeAfterMs) {
        noticed = true;
        notice?.(`waiting for another modtrans fetching the same archive (lock ${lockPath}); delete that folder if no such download is running`);
      }
      await new Promise((ok) => setTimeout(ok, LOCK_POLL_MS));
    }
  }
  try {
    return await work();
  } finally {
    await release().catch(() => undefined); // already gone (compromised): nothing to release
  }
}

async function unpack(archive: string, cacheDir: string, entry: ZooEntry, label: string): Promise<string> {
  const folder = modelFolder(cacheDir, entry);
  const tmp = `${folder}.unpacking-${process.pid}`;
  try {
    // We hold the entry's lock, so any other unpacking folder of it is left by a killed process.
    const zooDir = dirname(folder);
    mkdirSync(zooDir, { recursive: true });
    for (const stale of readdirSync(zooDir)) {
      if (stale.startsWith(`${entry.name}.unpacking-`)) rmSync(join(zooDir, stale), { recursive: true, force: true });
    }
    mkdirSync(tmp, { recursive: true });
  } catch (e) {
    throw cacheWriteError(tmp, e);
  }
  try {
    await extractTarGz(archive, tmp);
    const model = findModelFile(tmp, entry, label);
    rmSync(folder, { recursive: true, force: true });
    renameSync(tmp, folder);
    return join(folder, relative(tmp, model));
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (e instanceof InputError) throw e;
    if (e instanceof TarError) {
      rmSync(archive, { force: true }); // a broken archive is not worth resuming
      throw new InputError(`${label}: cannot unpack the archive: ${e.message}; it was deleted, run the command again`);
    }
    throw cacheWriteError(folder, e);
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
    throw cacheWriteError(cacheDir, e);
  }
  const archive = join(downloads, entry.file);
  const mirror = mirrorBaseUrl(options.baseUrl, env);
  return withLock(`${archive}.lock`, async () => {
    // Another process may have finished this model while we waited for the lock.
    const fetchedMeanwhile = cachedModel(cacheDir, entry);
    if (fetchedMeanwhile !== undefined) return fetchedMeanwhile;
    if (!existsSync(archive) || statSync(archive).size === 0) {
      await downloadResumable(archiveUrl(entry, mirror), archive, { label, progress: options.progress });
    }
    const sha256 = await verifySha256(archive, entry.sha256, label);
    if (entry.sha256 === null) {
      options.notice?.(`${label}: the registry records no SHA-256 for ${entry.file}; this download's is ${sha256} (record it to have later downloads checked)`);
    }
    const model = await unpack(archive, cacheDir, entry, label);
    rmSync(archive, { force: true }); // unpacked: the archive would only double the disk used
    return model;
  }, options.notice, options.lockNoticeAfterMs);
}
