/**
 * Every library example of the README (a ```js block importing from 'modtrans') runs against the
 * built package as written: each is a module file in a temporary folder that holds the shipped
 * examples/ and resolves 'modtrans' to this package (its package.json main, dist/src/index.js).
 * All run in one node process; each must finish and print exactly the lines of its `// ->`
 * comments, in order. Needs `npm run build` (npm ci does).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/models.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const examples = [...readme.matchAll(/^```js\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? '').filter((code) => code.includes("from 'modtrans'"));
const expectedLines = (code: string): string[] => [...code.matchAll(/^\/\/ -> (.*)$/gm)].map((m) => m[1] ?? '');

/** Imports each file in turn, its console.log lines captured (formatted as console.log does); prints [{ lines, error }]. */
const RUNNER = `
import { format } from 'node:util';
import { pathToFileURL } from 'node:url';
const results = [];
const log = console.log;
for (const file of process.argv.slice(2)) {
  const lines = [];
  console.log = (...args) => lines.push(format(...args));
  let error;
  try { await import(pathToFileURL(file).href); } catch (e) { error = String(e && e.stack || e); }
  results.push({ lines, error });
}
console.log = log;
process.stdout.write(JSON.stringify(results));
`;

describe('README library examples', () => {
  let results: { lines: string[]; error?: string }[];
  beforeAll(() => {
    if (!existsSync(join(ROOT, 'dist', 'src', 'index.js'))) throw new Error('dist/src/index.js is missing: run npm run build (npm ci does)');
    const cwd = mkdtempSync(join(tmpdir(), 'modtrans-readme-lib-'));
    symlinkSync(join(ROOT, 'examples'), join(cwd, 'examples'));
    mkdirSync(join(cwd, 'node_modules'));
    symlinkSync(ROOT, join(cwd, 'node_modules', 'modtrans'));
    const files = examples.map((code, i) => {
      const file = join(cwd, `example-${i}.mjs`);
      writeFileSync(file, code);
      return file;
    });
    writeFileSync(join(cwd, 'runner.mjs'), RUNNER);
    const r = spawnSync(process.execPath, [join(cwd, 'runner.mjs'), ...files], { cwd, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`the example runner failed (${r.status}): ${r.stderr}`);
    results = JSON.parse(r.stdout) as typeof results;
  }, 120_000);

  it('finds one example per stage a user composes: analyse, cost, plan, schedule, write, check, memory', () => {
    expect(examples).toHaveLength(7);
    for (const stage of ['analyseModel', 'createCostModel', 'planOf', 'scheduleOf', 'writeAstraText', 'scheduleTraceFiles', 'checkTraceSet', 'planMemory']) {
      expect(examples.some((code) => code.includes(`${stage}(`)), stage).toBe(true);
    }
  });

  it('every example runs and prints what its // -> lines say', () => {
    examples.forEach((code, i) => {
      const r = results[i];
      const first = code.split('\n').find((l) => l.startsWith('import') && l.includes("'modtrans'"));
      expect(r?.error, `example ${i} (${first})`).toBeUndefined();
      expect(expectedLines(code).length, `example ${i} states its output`).toBeGreaterThan(0);
      expect(r?.lines, `example ${i} (${first})`).toEqual(expectedLines(code));
    });
  });
});
