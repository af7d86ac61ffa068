/**
 * Multi-file outputs (a Chakra trace set with its comm-groups file, a SCALE-sim export or report
 * set) are whole or absent. Holding a lock on the set (`MANIFEST.lock`, a folder; a second run on
 * the same set waits for the first), every file is written into a fresh temp folder beside the set
 * (created by this run, mode 0700; files opened O_EXCL | O_NOFOLLOW). Nothing in place changes
 * until all of them are complete. Then the commit: the manifest is replaced by a journal
 * (`state: "committing"`, naming the temp folder and the earlier set's files to remove), the files
 * are renamed into place, the stale ones removed, and the final manifest written last. A run
 * killed while writing leaves only its temp folder (removed by the next run); one killed while
 * committing leaves the journal, which the next run on the set rolls forward, and which
 * check-trace reports.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, utimesSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError, fsErrorWords } from '../errors.js';
import { MODTRANS_VERSION } from '../version.js';
import { manifestJson, type Manifest, type ManifestFile, type ManifestKind } from '../writers/manifest.js';
import type { OutputFile } from '../writers/output.js';
import { checkOutputTarget, commitStaged, discardStaged, ensureOutputFolder, randomHex, removeQuietly, stageFile, writeError, writeFileAtomic, writeNewFile, type StagedFile } from './output.js';
import { writeStderr } from './stdio.js';

export interface OutputSet {
  /** The folder every file of the set is in. */
  dir: string;
  /** The manifest's name in `dir` (`PREFIX.manifest.json`). */
  manifestName: string;
  kind: ManifestKind;
  ranks?: number;
  plan: Record<string, unknown>;
  /** Names in `dir` that belong to the set: those the new set does not write are removed. */
  owns: (name: string) => boolean;
  /** The set's files (paths in `dir`), written first (groups files, reports). */
  files: readonly OutputFile[];
  /** Files produced one at a time while they are written (per-rank traces). */
  stream?: Iterable<OutputFile>;
}

/** A lock not refreshed for this long is a killed run's and is taken over. */
const LOCK_STALE_MS = 10_000;
const LOCK_POLL_MS = 100;
/** After this long waiting for another run, say so. */
const LOCK_NOTICE_AFTER_MS = 1_000;
/** How often the writer lets timers run (the lock's refresh) while it writes. */
const YIELD_EVERY_MS = 200;
/** A manifest is read only up to this size (it lists a million files in less). */
const MAX_MANIFEST_BYTES = 256 << 20;

/** Lowest-level name check: a plain file name, never a path (journals are read back from disk). */
function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name);
}

/** `.MANIFEST.<16 hex>.tmp`, the temp folders of this set (any run's). */
function tempFolderPattern(manifestName: string): RegExp {
  const stem = manifestName.slice(0, 96).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^\\.${stem}\\.[0-9a-f]{16}\\.tmp$`);
}

/**
 * Runs `work` holding the set's lock, a folder created with mkdir (atomic; plain fs, as
 * proper-lockfile would load node's stream and net modules into every start of the bundle). The
 * writer refreshes its mtime as it goes; one not refreshed for LOCK_STALE_MS is a killed run's
 * and is taken over. Waits while another run holds it. Ctrl-C or a TERM releases it (and removes
 * the temp folder `cleanup` names) before the process ends by the signal.
 */
async function withSetLock<T>(lockPath: string, cleanup: () => void, work: (refresh: () => void) => Promise<T>): Promise<T> {
  const started = Date.now();
  let noticed = false;
  for (;;) {
    try {
      mkdirSync(lockPath);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new InputError(`${lockPath}: cannot lock the output (${fsErrorWords(e)})`);
    }
    const st = lstatSync(lockPath, { throwIfNoEntry: false });
    if (st === undefined) continue; // released meanwhile
    if (!st.isDirectory()) throw new InputError(`${lockPath}: is not a lock folder; remove it if no modtrans is writing this output`);
    if (Date.now() - st.mtimeMs > LOCK_STALE_MS) {
      // A killed run's: moved aside first, so that two waiters cannot both take it over.
      const aside = `${lockPath}.stale-${randomHex()}`;
      try {
        renameSync(lockPath, aside);
        removeQuietly(aside, true);
      } catch {
        // another waiter took it over first
      }
      continue;
    }
    if (!noticed && Date.now() - started > LOCK_NOTICE_AFTER_MS) {
      noticed = true;
      writeStderr(`modtrans: waiting for another modtrans writing the same output (lock ${lockPath}; a killed run's lock is taken over after ${LOCK_STALE_MS / 1000} s)\n`);
    }
    await new Promise((ok) => setTimeout(ok, LOCK_POLL_MS));
  }
  const release = (): void => {
    cleanup();
    removeQuietly(lockPath, true);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    release();
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    process.kill(process.pid, signal);
  };
  for (const s of SIGNALS) process.once(s, onSignal);
  const refresh = (): void => {
    try {
      const now = new Date();
      utimesSync(lockPath, now, now);
    } catch {
      // removed by hand: the commit still replaces whole files
    }
  };
  try {
    return await work(refresh);
  } finally {
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    removeQuietly(lockPath, true);
  }
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** The set's manifest on disk, if any and readable (a broken one counts as none). */
function readManifest(path: string): Manifest | undefined {
  try {
    const st = lstatSync(path);
    if (!st.isFile() || st.size > MAX_MANIFEST_BYTES) return undefined;
    const m = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
    return typeof m === 'object' && m !== null && Array.isArray(m.files) ? m : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Finishes a commit a killed run left (its journal): moves the files still in its temp folder
 * into place, removes the stale ones, writes the final manifest. Then removes every temp folder of
 * the set (only runs holding the lock write them, and we hold it).
 */
function recover(set: OutputSet): void {
  const manifestPath = join(set.dir, set.manifestName);
  const journal = readManifest(manifestPath);
  if (journal?.state === 'committing' && journal.temp !== undefined && isPlainName(journal.temp)) {
    const temp = join(set.dir, journal.temp);
    for (const f of journal.files) {
      if (typeof f?.name !== 'string' || !isPlainName(f.name)) continue;
      const from = join(temp, f.name);
      if (existsSync(from)) renameSync(from, join(set.dir, f.name));
    }
    for (const name of journal.remove ?? []) if (typeof name === 'string' && isPlainName(name) && set.owns(name)) removeQuietly(join(set.dir, name));
    const { temp: _t, remove: _r, ...rest } = journal;
    const whole = journal.files.every((f) => typeof f?.name === 'string' && isPlainName(f.name) && lstatSync(join(set.dir, f.name), { throwIfNoEntry: false })?.size === f.bytes);
    if (whole) {
      writeFileAtomic(manifestPath, manifestJson({ ...rest, state: 'complete' }));
      writeStderr(`modtrans: finished the interrupted write of ${manifestPath} (a killed run's) before this one\n`);
    } else {
      removeQuietly(manifestPath);
      writeStderr(`modtrans: warning: the interrupted write of ${manifestPath} could not be finished (its files are gone); this run replaces the set\n`);
    }
  }
  const pattern = tempFolderPattern(set.manifestName);
  for (const name of readdirSync(set.dir)) if (pattern.test(name)) removeQuietly(join(set.dir, name), true);
}

const yieldToTimers = (): Promise<void> => new Promise((ok) => setImmediate(ok));

/**
 * Writes the set (and `loose` files beside it, e.g. a report or a timeline: renamed after the set
 * is in place) so that a kill, a full disk or a write error leaves the previous set untouched.
 */
export async function writeOutputSet(set: OutputSet, loose: readonly OutputFile[] = []): Promise<void> {
  ensureOutputFolder(set.dir);
  const manifestPath = join(set.dir, set.manifestName);
  checkOutputTarget(manifestPath);
  const tempName = `.${set.manifestName.slice(0, 96)}.${randomHex()}.tmp`;
  const temp = join(set.dir, tempName);
  let committing = false;
  // On a signal before the commit, the temp folder goes with the lock; during it, the journal stays.
  const cleanup = (): void => {
    if (!committing) removeQuietly(temp, true);
  };
  await withSetLock(`${manifestPath}.lock`, cleanup, async (refresh) => {
    try {
      recover(set);
    } catch (e) {
      throw writeError(manifestPath, e);
    }
    try {
      mkdirSync(temp, { mode: 0o700 });
    } catch (e) {
      throw writeError(temp, e);
    }
    const written: ManifestFile[] = [];
    const staged: StagedFile[] = [];
    try {
      let lastYield = Date.now();
      for (const list of [set.files, set.stream ?? []]) {
        // The stream is iterated, never collected: its files are encoded one at a time.
        for (const f of list) {
          const name = basename(f.path);
          if (dirname(f.path) !== set.dir) throw new Error(`internal error: ${f.path} is not in the set's folder ${set.dir}`);
          checkOutputTarget(join(set.dir, name));
          try {
            written.push({ name, bytes: writeNewFile(join(temp, name), f.bytes) });
          } catch (e) {
            throw writeError(f.path, e);
          }
          if (Date.now() - lastYield > YIELD_EVERY_MS) {
            refresh();
            await yieldToTimers();
            lastYield = Date.now();
          }
        }
      }
      for (const f of loose) staged.push(stageFile(f.path, f.bytes));
    } catch (e) {
      removeQuietly(temp, true);
      discardStaged(staged);
      throw e;
    }
    // Everything is complete: commit. The journal first, so a kill from here on is finished by
    // the next run instead of leaving a mix.
    const names = new Set(written.map((f) => f.name));
    let stale: string[];
    try {
      stale = readdirSync(set.dir).filter((n) => n !== set.manifestName && !names.has(n) && set.owns(n));
    } catch (e) {
      removeQuietly(temp, true);
      discardStaged(staged);
      throw writeError(set.dir, e);
    }
    const manifest: Manifest = { modtrans: MODTRANS_VERSION, kind: set.kind, state: 'complete', ...(set.ranks === undefined ? {} : { ranks: set.ranks }), plan: set.plan, files: written };
    try {
      writeFileAtomic(manifestPath, manifestJson({ ...manifest, state: 'committing', temp: tempName, remove: stale }));
    } catch (e) {
      removeQuietly(temp, true);
      discardStaged(staged);
      throw e;
    }
    committing = true;
    try {
      for (const f of written) renameSync(join(temp, f.name), join(set.dir, f.name));
      for (const name of stale) removeQuietly(join(set.dir, name));
      writeFileAtomic(manifestPath, manifestJson(manifest));
    } catch (e) {
      discardStaged(staged);
      throw new InputError(`${manifestPath}: the set could not be moved into place (${e instanceof InputError ? e.message : fsErrorWords(e)}); run the command again to finish it`);
    }
    removeQuietly(temp, true);
    commitStaged(staged);
  });
}

/** `PREFIX.<rank>.et`, `PREFIX.comm-groups.json`: the names a trace set of prefix base `base` owns. */
export function traceSetOwns(base: string): (name: string) => boolean {
  return (name) => {
    if (!name.startsWith(`${base}.`)) return false;
    const rest = name.slice(base.length + 1);
    // The ASTRA-sim configs translate --cluster writes beside the traces (writers/astra-network.ts).
    return rest === 'comm-groups.json' || rest === 'network.yml' || rest === 'system.json' || rest === 'remote_memory.json' || /^(0|[1-9][0-9]{0,9})\.et$/.test(rest);
  };
}

/**
 * The trace prefix `-o` names: `DIR/` (or an existing folder) means `DIR/MODEL` (files
 * `DIR/MODEL.<rank>.et`, never hidden `DIR/.0.et`), and a trailing `.et` is dropped.
 */
export function tracePrefixOf(output: string, modelPath: string): string {
  const model = basename(modelPath).replace(/\.onnx$/i, '');
  let isFolder = /[/\\]$/.test(output) || output === '.' || output === '..';
  if (!isFolder) {
    try {
      isFolder = statSync(output).isDirectory();
    } catch {
      isFolder = false;
    }
  }
  return isFolder ? join(output, model) : output.replace(/\.et$/, '');
}
