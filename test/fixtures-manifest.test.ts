/**
 * test/fixtures/manifest.json accounts for every fixture: each file is covered by an entry, each
 * entry covers at least one file, and each entry's source names a real path (under the shared
 * reference folder) or a generator in this repository.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixturePath, ROOT } from './helpers/models.js';

interface Entry {
  path: string;
  source: string;
  note?: string;
  guards: string;
}

const manifest = JSON.parse(readFileSync(fixturePath('manifest.json'), 'utf8')) as { entries: Entry[] };

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)));
}

/** An entry path covers a file when it names it, a folder holding it, or a `*` pattern of it. */
function covers(pattern: string, path: string): boolean {
  const regex = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`);
  return regex.test(path);
}

/**
 * The shared reference folder, for checking that sources exist (never read: tests use only the
 * copies in test/fixtures): MODTRANS_SHARED_DIR, else a `shared/` folder beside the checkout or
 * one level further up (worktrees); undefined on a machine without it.
 */
function sharedDir(): string | undefined {
  const env = process.env['MODTRANS_SHARED_DIR'];
  if (env !== undefined && env !== '') return env;
  return [resolve(ROOT, '../shared'), resolve(ROOT, '../../shared')].find((d) => existsSync(join(d, 'README.md')));
}

const SHARED_SOURCE = /^shared\/([^*\s]+\/)*[^/\s]+$/;
const GENERATOR_SOURCE = /^generator: (\S+)$/;

describe('fixture manifest', () => {
  const fixtures = filesUnder(fixturePath('')).filter((f) => f !== 'manifest.json');

  it('lists every fixture file', () => {
    expect(fixtures.length).toBeGreaterThan(1000);
    const unlisted = fixtures.filter((f) => !manifest.entries.some((e) => covers(e.path, f)));
    expect(unlisted).toEqual([]);
  });

  it('lists only paths that cover an existing fixture file', () => {
    const dangling = manifest.entries.filter((e) => !fixtures.some((f) => covers(e.path, f))).map((e) => e.path);
    expect(dangling).toEqual([]);
  });

  it("names each entry's source: a path under shared/ or a generator in this repository", () => {
    const malformed = manifest.entries.filter((e) => !SHARED_SOURCE.test(e.source) && !GENERATOR_SOURCE.test(e.source));
    expect(malformed.map((e) => `${e.path}: ${e.source}`)).toEqual([]);
    const missingGenerators = manifest.entries
      .map((e) => GENERATOR_SOURCE.exec(e.source)?.[1])
      .filter((g): g is string => g !== undefined && !existsSync(join(ROOT, g)));
    expect(missingGenerators).toEqual([]);
    for (const e of manifest.entries) expect(e.guards.length, e.path).toBeGreaterThan(0);
  });

  it('names shared sources that exist (checked where the shared folder is present)', () => {
    const shared = sharedDir();
    if (shared === undefined) {
      console.log('fixture manifest: no shared reference folder here (set MODTRANS_SHARED_DIR); source paths checked for form only');
      return;
    }
    const exists = (source: string): boolean => {
      const rel = source.slice('shared/'.length);
      if (!rel.includes('*')) return existsSync(join(shared, rel));
      const folder = join(shared, dirname(rel));
      return existsSync(folder) && readdirSync(folder).some((f) => covers(rel, `${dirname(rel)}/${f}`));
    };
    const missing = manifest.entries.filter((e) => SHARED_SOURCE.test(e.source) && !exists(e.source)).map((e) => e.source);
    expect(missing).toEqual([]);
  });
});
