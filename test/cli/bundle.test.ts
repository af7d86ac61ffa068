/**
 * The shipped bin (dist/cli/main.cjs, made by `npm run build`, which `npm ci` runs): it behaves as
 * the sources do, writes its messages to stderr without node's streams, ends quietly when the
 * reader of stdout goes away, and its V8 code cache is one V8 accepts (scripts/bundle.mjs).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import Module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliBatch } from '../helpers/cli-batch.js';
import { runWithReaderClosingEarly } from '../helpers/early-close.js';
import { ROOT } from '../helpers/models.js';

const BIN = join(ROOT, 'dist', 'cli', 'main.cjs');
const BUNDLE = join(ROOT, 'dist', 'cli', 'modtrans.cjs');

describe('the built CLI', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm ci does)`);
    dir = mkdtempSync(join(tmpdir(), 'modtrans-bundle-'));
  });

  it('writes what the sources write, and says so on stderr', () => {
    const bin = spawnSync(process.execPath, [BIN, 'translate', 'resnet50', '--tp', '2', '--dp', '2', '-o', join(dir, 'bin.txt')], { encoding: 'utf8' });
    const [sources] = runCliBatch([{ args: ['translate', 'resnet50', '--tp', '2', '--dp', '2', '-o', join(dir, 'src.txt')], cwd: dir }]);
    expect(bin.status, bin.stderr).toBe(0);
    expect(sources?.status).toBe(0);
    expect(readFileSync(join(dir, 'bin.txt'), 'utf8')).toBe(readFileSync(join(dir, 'src.txt'), 'utf8'));
    // The same lines but for the output path each names.
    expect(bin.stderr.replaceAll('bin.txt', 'X')).toBe(sources?.stderr.replaceAll('src.txt', 'X'));
  });

  it('writes standard output larger than a pipe holds whole and in order (the bin writes it with writeSync)', () => {
    const bin = spawnSync(process.execPath, [BIN, 'shapes', 'bert_base_like'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const [sources] = runCliBatch([{ args: ['shapes', 'bert_base_like'], cwd: dir }]);
    expect(bin.status, bin.stderr).toBe(0);
    expect(bin.stdout.length).toBeGreaterThan(65536); // more than Linux's default pipe buffer
    expect(bin.stdout).toBe(sources?.stdout);
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

  it('ships a code cache V8 accepts for the bundle', () => {
    const script = new Script(Module.wrap(readFileSync(BUNDLE, 'utf8')), { filename: BUNDLE, cachedData: readFileSync(`${BUNDLE}.cache`) });
    expect(script.cachedDataRejected).toBe(false);
  });
});
