/**
 * The test folders mirror src/: test/<stage>/ holds the tests of src/<stage>/, a subfolder is
 * named after the module it tests (test/writers/astra-text/ for src/writers/astra-text.ts), and a
 * test at test/'s top level tests the src/ file of its name, or the repository as a whole.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/models.js';

const TEST = join(ROOT, 'test');
/** Folders that hold no tests of a module: shared helpers and data. */
const SUPPORT = new Set(['helpers', 'fixtures']);
/** Top-level tests of the repository as a whole, not of one src/ file. */
const WHOLE_REPO = new Set(['import-cycles.test.ts', 'fixtures-manifest.test.ts', 'layout.test.ts']);

/** Test folders (relative to test/) with no src/ (or bench/, for test/bench/) folder or module of their name. */
function unmirroredFolders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (!entry.isDirectory()) return [];
    const path = join(dir, entry.name);
    const rel = relative(TEST, path);
    if (SUPPORT.has(rel.split('/')[0] ?? '')) return [];
    const mirror = rel === 'bench' ? join(ROOT, 'bench') : join(ROOT, 'src', rel);
    const mirrored = existsSync(mirror) || existsSync(`${mirror}.ts`);
    return mirrored ? unmirroredFolders(path) : [rel];
  });
}

describe('test layout', () => {
  it('every test folder is named after a src/ folder or module', () => {
    expect(unmirroredFolders(TEST)).toEqual([]);
  });

  it("every top-level test names a src/ file, or tests the repository as a whole", () => {
    const top = readdirSync(TEST).filter((n) => n.endsWith('.test.ts') && !WHOLE_REPO.has(n));
    expect(top.filter((n) => !existsSync(join(ROOT, 'src', n.replace(/\.test\.ts$/, '.ts'))))).toEqual([]);
  });
});
