/**
 * The shipped bin (dist/cli/main.cjs, made by `npm run build`, which `npm ci` runs): it behaves as
 * the sources do, writes its messages to stderr without node's streams, ends quietly when the
 * reader of stdout goes away, and its V8 code cache is one V8 accepts (scripts/bundle.mjs).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliBatch } from '../helpers/cli-batch.js';
import { runWithReaderClosingEarly } from '../helpers/early-close.js';
import { ROOT } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const BIN = join(ROOT, 'dist', 'cli', 'main.cjs');
const BUNDLE = join(ROOT, 'dist', 'cli', 'modtrans.cjs');

/**
 * A preloaded script that reports, at exit, the built-in modules node loaded and the code caches
 * the launcher read (fs.readFileSync seen from inside the process), as one last stderr line.
 */
const REPORTER = "const fs = require('fs'); const read = fs.readFileSync; const caches = []; fs.readFileSync = function (p, ...rest) { const r = read.call(this, p, ...rest); if (String(p).endsWith('.cache')) caches.push(require('path').basename(String(p))); return r; }; process.on('exit', () => fs.writeSync(2, '\\nREPORT ' + JSON.stringify({ builtins: process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')), caches }) + '\\n'));\n";

interface Reported {
  status: number | null;
  stdout: string;
  /** stderr without the reporter's line. */
  stderr: string;
  builtins: string[];
  caches: string[];
}

describe('the built CLI', () => {
  let dir: string;
  /** Each command line below run once as the bin with the reporter preloaded (a process each: what the tests read). */
  const runs = new Map<string, Reported>();
  const scalesim = join(ROOT, 'examples', 'scalesim');
  const COMMANDS: Record<string, (dir: string) => string[]> = {
    translate: (d) => ['translate', 'resnet50', '--tp', '2', '--dp', '2', '-o', join(d, 'bin.txt')],
    shapes: () => ['shapes', 'bert_base_like'],
    inspect: (d) => ['inspect', 'alexnet', '-o', join(d, 'quiet-inspect.txt')],
    scalesim: (d) => ['scalesim', '-t', join(scalesim, 'topologies', 'alexnet.csv'), '-c', join(scalesim, 'scale.cfg'), '-o', join(d, 'quiet-scalesim')],
    help: () => ['--help'],
    memory: (d) => ['memory', 'alexnet', '-o', join(d, 'cache-memory.txt')],
    badInput: (d) => ['translate', join(d, 'absent.onnx')],
  };
  const run = (name: string): Reported => present(runs.get(name), `the ${name} run`);
  beforeAll(() => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm ci does)`);
    dir = mkdtempSync(join(tmpdir(), 'modtrans-bundle-'));
    const preload = join(dir, 'report.cjs');
    writeFileSync(preload, REPORTER);
    for (const [name, args] of Object.entries(COMMANDS)) {
      const r = spawnSync(process.execPath, ['--require', preload, BIN, ...args(dir)], { encoding: 'utf8', maxBuffer: 64 << 20 });
      const report = /\nREPORT (.*)\n$/.exec(r.stderr);
      const { builtins, caches } = JSON.parse(present(report, `the report line of ${name}: ${r.stderr}`)[1] ?? '{}') as { builtins: string[]; caches: string[] };
      runs.set(name, { status: r.status, stdout: r.stdout, stderr: r.stderr.slice(0, report?.index), builtins, caches });
    }
  });

  it('writes what the sources write, and says so on stderr', async () => {
    const bin = run('translate');
    const [sources] = await runCliBatch([{ args: ['translate', 'resnet50', '--tp', '2', '--dp', '2', '-o', join(dir, 'src.txt')], cwd: dir }]);
    expect(bin.status, bin.stderr).toBe(0);
    expect(sources?.status).toBe(0);
    expect(readFileSync(join(dir, 'bin.txt'), 'utf8')).toBe(readFileSync(join(dir, 'src.txt'), 'utf8'));
    // The same lines but for the output path each names.
    expect(bin.stderr.replaceAll('bin.txt', 'X')).toBe(sources?.stderr.replaceAll('src.txt', 'X'));
  });

  it('writes standard output larger than a pipe holds whole and in order (the bin writes it with writeSync)', async () => {
    const bin = run('shapes');
    const [sources] = await runCliBatch([{ args: ['shapes', 'bert_base_like'], cwd: dir }]);
    expect(bin.status, bin.stderr).toBe(0);
    expect(bin.stdout.length).toBeGreaterThan(65536); // more than Linux's default pipe buffer
    expect(bin.stdout).toBe(sources?.stdout);
  });

  it('loads none of node\'s stream, tty, readline or perf_hooks modules for a command run to a file or a pipe (each costs milliseconds of every start)', () => {
    for (const name of ['translate', 'shapes', 'inspect', 'scalesim']) {
      const r = run(name);
      expect(r.status, r.stderr).toBe(0);
      const heavy = r.builtins.filter((m) => /^NativeModule (net|stream|tty|readline|perf_hooks)$/.test(m));
      expect(heavy, name).toEqual([]);
    }
  });

  it('bad input: one line on stderr, exit 2', () => {
    const r = run('badInput');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^modtrans: .*absent\.onnx.*\n$/);
  });

  it('a reader that closes the pipe early ends the run quietly with exit 0', async () => {
    const { status, stderr } = await runWithReaderClosingEarly([BIN, 'shapes', 'bert_base_like'], dir);
    expect(stderr).toBe('');
    expect(status).toBe(0);
  });

  it('ships a code cache V8 accepts for the bundle, and one of their own for translate, inspect, shapes and scalesim', () => {
    const source = Module.wrap(readFileSync(BUNDLE, 'utf8'));
    for (const cache of ['', '.translate', '.inspect', '.shapes', '.scalesim'].map((command) => `${BUNDLE}${command}.cache`)) {
      const script = new Script(source, { filename: BUNDLE, cachedData: readFileSync(cache) });
      expect(script.cachedDataRejected, cache).toBe(false);
    }
  });

  it('a command with a cache of its own starts from it, others from the fallback (the launcher reads one cache, before the bundle runs)', () => {
    const cachesRead = (name: string): string[] => {
      const r = run(name);
      expect(r.status, r.stderr).toBe(0);
      return r.caches;
    };
    expect(cachesRead('translate')).toEqual(['modtrans.cjs.translate.cache']);
    expect(cachesRead('shapes')).toEqual(['modtrans.cjs.shapes.cache']);
    expect(cachesRead('help')).toEqual(['modtrans.cjs.cache']);
    expect(cachesRead('memory')).toEqual(['modtrans.cjs.cache']);
  });
});
