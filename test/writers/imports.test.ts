/**
 * Writers only serialize: they receive finished data (a step schedule, a layer table, report
 * rows) and import no stage that computes it. A writer that imported shape/, layers/ or cost/
 * would be re-deriving what a stage already decided; the scan below makes that a failing test.
 * And checkers read what writers wrote: check/ imports no stage, only the writers' .et schema.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importStatements, readSource, SRC, sourceFiles, srcPath, srcTarget } from '../helpers/imports.js';

/** Folders a writer must not import at all, not even a type: their data reaches writers already computed. */
const FORBIDDEN = ['shape/', 'layers/', 'cost/'];

/**
 * Run-time (value) imports a writer may make outside writers/: formatting helpers and the world's
 * rank arithmetic, which resolves each rank's groups and peers as its file is written. Everything
 * else from a stage is a type: the data the writer serializes.
 */
const VALUE_IMPORTS_ALLOWED = ['ir/dim.ts', 'ir/dtype.ts', 'plan/world.ts', 'units.ts', 'passes.ts'];

interface Violation {
  file: string;
  imports: string;
}

function writerViolations(files: { path: string; source: string }[]): Violation[] {
  return files.flatMap(({ path, source }) =>
    importStatements(source).flatMap(({ specifier, typeOnly }): Violation[] => {
      const target = srcTarget(path, specifier);
      if (target === undefined || target.startsWith('writers/')) return [];
      const file = srcPath(path);
      if (FORBIDDEN.some((f) => target.startsWith(f))) return [{ file, imports: target }];
      if (!typeOnly && !VALUE_IMPORTS_ALLOWED.includes(target) && target !== 'errors.ts') return [{ file, imports: `${target} (a value)` }];
      return [];
    }),
  );
}

const read = (dir: string) => sourceFiles(join(SRC, dir)).map((path) => ({ path, source: readSource(path) }));

describe('writer imports', () => {
  it('the scan catches a writer importing a stage (static, type, dynamic) or computing with one', () => {
    const file = (name: string, source: string) => ({ path: join(SRC, 'writers', name), source });
    const bad = [
      file('a.ts', "import { costLayerPasses } from '../cost/training.js';"),
      file('b.ts', "import type { Layer } from '../layers/types.js';"),
      file('c.ts', "const s = await import('../shape/infer.js');"),
      file('d.ts', "import { costLayer } from '../schedule/cost.js';"),
      file('e.ts', "import type { StepSchedule } from '../schedule/types.js';\nimport { fileOrStdout } from './output.js';\nimport { coordOf } from '../plan/world.js';"),
    ];
    expect(writerViolations(bad)).toEqual([
      { file: 'writers/a.ts', imports: 'cost/training.ts' },
      { file: 'writers/b.ts', imports: 'layers/types.ts' },
      { file: 'writers/c.ts', imports: 'shape/infer.ts' },
      { file: 'writers/d.ts', imports: 'schedule/cost.ts (a value)' },
    ]);
  });

  it('no writer imports shape/, layers/ or cost/, and from other stages only types', () => {
    const writers = read('writers');
    expect(writers.length).toBeGreaterThan(10);
    expect(writerViolations(writers)).toEqual([]);
  });

  it('check/ reads the written files: it imports no stage, only the writers’ .et schema and root utilities', () => {
    const targets = read('check').flatMap(({ path, source }) => importStatements(source).flatMap(({ specifier }) => srcTarget(path, specifier) ?? []));
    const outside = [...new Set(targets.filter((t) => !t.startsWith('check/')))].sort();
    // Root utilities, not stages; and the formats written: the .et schema, the manifest's type.
    expect(outside).toEqual(['astra-limits.ts', 'errors.ts', 'maps.ts', 'writers/chakra-encoding.ts', 'writers/manifest.ts']);
  });
});
