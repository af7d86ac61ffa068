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

describe('the built CLI', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm ci does)`);
    dir = mkdtempSync(join(tmpdir(), 'modtrans-bundle-'));
  });

  it('writes what the sources write, and says so on stderr', async () => {
    const bin = spawnSync(process.execPath, [BIN, 'translate', 'resnet50', '--tp', '2', '--dp', '2', '-o', join(dir, 'bin.txt')], { encoding: 'utf8' });
    const [sources] = await runCliBatch([{ args: ['translate', 'resnet50', '--tp', '2', '--dp', '2', '-o', join(dir, 'src.txt')], cwd: dir }]);
    expect(bin.status, bin.stderr).toBe(0);
    expect(sources?.status).toBe(0);
    expect(readFileSync(join(dir, 'bin.txt'), 'utf8')).toBe(readFileSync(join(dir, 'src.txt'), 'utf8'));
    // The same lines but for the output path each names.
    expect(bin.stderr.replaceAll('bin.txt', 'X')).toBe(sources?.stderr.replaceAll('src.txt', 'X'));
  });

  it('writes standard output larger than a pipe holds whole and in order (the bin writes it with writeSync)', async () => {
    const bin = spawnSync(process.execPath, [BIN, 'shapes', 'bert_base_like'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const [sources] = await runCliBatch([{ args: ['shapes', 'bert_base_like'], cwd: dir }]);
    expect(bin.status, bin.stderr).toBe(0);
    expect(bin.stdout.length).toBeGreaterThan(65536); // more than Linux's default pipe buffer
    expect(bin.stdout).toBe(sources?.stdout);
  });

  it('loads none of node\'s stream, tty, readline or perf_hooks modules for a command run to a file or a pipe (each costs milliseconds of every start)', () => {
    // A preloaded script reports the built-in modules node loaded, at exit.
    const preload = join(dir, 'report-builtins.cjs');
    writeFileSync(preload, "process.on('exit', () => require('fs').writeSync(2, '\\nBUILTINS ' + JSON.stringify(process.moduleLoadList.filter((m) => m.startsWith('NativeModule '))) + '\\n'));\n");
    const scalesim = join(ROOT, 'examples', 'scalesim');
    const commands = [
      ['translate', 'resnet50', '-o', join(dir, 'quiet.txt')],
      ['shapes', 'resnet50'],
      ['inspect', 'alexnet', '-o', join(dir, 'quiet-inspect.txt')],
      ['scalesim', '-t', join(scalesim, 'topologies', 'alexnet.csv'), '-c', join(scalesim, 'scale.cfg'), '-o', join(dir, 'quiet-scalesim')],
    ];
    for (const args of commands) {
      const r = spawnSync(process.execPath, ['--require', preload, BIN, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
      expect(r.status, r.stderr).toBe(0);
      const loaded = JSON.parse(present(/BUILTINS (.*)/.exec(r.stderr), 'the builtins line')[1] ?? '[]') as string[];
      const heavy = loaded.filter((m) => /^NativeModule (net|stream|tty|readline|perf_hooks)$/.test(m));
      expect(heavy, args.join(' ')).toEqual([]);
    }
  });

  it('bad input: one line on stderr, exit 2', () => {
    const r = spawnSync(process.execPath, [BIN, 'translate', join(dir, 'absent.onnx')], { encoding: 'utf8' });
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
    // A preloaded script reports the caches the launcher read (fs.readFileSync seen from inside the process).
    const preload = join(dir, 'report-caches.cjs');
    writeFileSync(preload, "const fs = require('fs'); const read = fs.readFileSync; const seen = []; fs.readFileSync = function (p, ...rest) { const r = read.call(this, p, ...rest); if (String(p).endsWith('.cache')) seen.push(require('path').basename(String(p))); return r; }; process.on('exit', () => fs.writeSync(2, '\\nCACHES ' + JSON.stringify(seen) + '\\n'));\n");
    const cachesRead = (...args: string[]): string[] => {
      const r = spawnSync(process.execPath, ['--require', preload, BIN, ...args], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(present(/CACHES (.*)/.exec(r.stderr), 'the caches line')[1] ?? '[]') as string[];
    };
    expect(cachesRead('translate', 'alexnet', '-o', join(dir, 'cache.txt'))).toEqual(['modtrans.cjs.translate.cache']);
    expect(cachesRead('--help')).toEqual(['modtrans.cjs.cache']);
    expect(cachesRead('memory', 'alexnet', '-o', join(dir, 'cache-memory.txt'))).toEqual(['modtrans.cjs.cache']);
  });
});
