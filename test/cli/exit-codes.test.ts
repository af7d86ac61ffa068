/**
 * Every command's failure modes as the process's exit code (README, "Exit codes"): 0 on success,
 * 2 on bad input and when check-trace finds defects. The check-trace and memory-limit cases run
 * the built bin (dist/, `npm run build`): the exit code a CI step reads is the process's, which
 * main.ts sets from what the command returned, and nothing else may write over it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliBatch } from '../helpers/cli-batch.js';
import { ROOT } from '../helpers/models.js';
import { coll, comp, recv, send, writeTraces } from '../check/traces.js';

const BIN = join(ROOT, 'dist', 'cli', 'main.cjs');

function bin(cwd: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd });
}

/** Two ranks whose send and recv disagree on the tag: each waits for the other forever (2 hang findings). */
const mismatchedSend = () => [
  [comp(0), send(1, 0, 1, 7, 64, [0])],
  [comp(0), recv(1, 0, 1, 8, 64, [0])],
];

describe('exit codes of the spawned bin', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm ci does)`);
    dir = mkdtempSync(join(tmpdir(), 'modtrans-exit-'));
  });

  it('check-trace: 0 when clean, 2 when it finds defects (text and JSON), 2 when there are no traces', async () => {
    // Processes for a clean set and for findings (exit 0 and 2 after a whole JSON document on
    // stdout); the text report and the bad prefix end on those same two returns, in this process
    // (cli-batch; a bad input's exit 2 as a process: test/cli/cli.test.ts).
    const clean = bin(dir, 'check-trace', writeTraces([[comp(0), coll(1, [0])], [comp(0), coll(1, [0])]]));
    expect(clean.stdout).toMatch(/^clean: 2 files/);
    expect(clean.status).toBe(0);
    const planted = writeTraces(mismatchedSend());
    const json = bin(dir, 'check-trace', planted, '--format', 'json');
    expect((JSON.parse(json.stdout) as { clean: boolean }).clean).toBe(false);
    expect(json.status).toBe(2);
    const [text, none] = await runCliBatch([[planted], [join(dir, 'no-such-prefix')]].map((args) => ({ args: ['check-trace', ...args], cwd: dir })));
    expect(text?.stdout).toMatch(/^2 finding\(s\) \(2 hang\)/m);
    expect(text?.status).toBe(2);
    expect(none?.status).toBe(2);
    expect(none?.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('translate and memory --memory-limit: 2 when a rank needs more, with nothing written; 0 under the limit', async () => {
    const out = join(dir, 'over.txt');
    // gpt2_small_like holds ~124 M parameters: over 4 bytes each, any rank needs far more than 0.01 GiB.
    const translate = bin(dir, 'translate', 'gpt2_small_like', '--memory-limit', '0.01', '-o', out);
    expect(translate.stderr).toMatch(/^modtrans: rank 0 \(stage 0\) needs [\d.]+ GiB \(\d+ bytes\), over --memory-limit 0\.01 GiB\n$/);
    expect(translate.status).toBe(2);
    expect(existsSync(out)).toBe(false);
    const memory = bin(dir, 'memory', 'gpt2_small_like', '--memory-limit', '0.01', '-o', join(dir, 'over.csv'), '--format', 'csv');
    expect(memory.stderr).toMatch(/over --memory-limit 0\.01 GiB/);
    expect(memory.status).toBe(2);
    expect(existsSync(join(dir, 'over.csv'))).toBe(false);
    // Under the limit: the success path's exit 0, which every spawned run above and in the other files also ends on.
    const [under] = await runCliBatch([{ args: ['memory', 'alexnet', '--memory-limit', '1000', '--format', 'csv'], cwd: dir }]);
    expect(under?.status).toBe(0);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('exit codes of every command (one process, cli-batch)', () => {
  it('bad input exits 2 with one line on stderr; defects found by check-trace exit 2; success 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-exit-batch-'));
    const broken = join(dir, 'broken.onnx');
    writeFileSync(broken, readFileSync(join(ROOT, 'examples', 'resnet50.onnx')).subarray(0, 5000));
    const planted = writeTraces(mismatchedSend());
    const cases: { args: string[]; status: number }[] = [
      { args: ['check-trace', planted], status: 2 },
      { args: ['check-trace', planted, '--format', 'json'], status: 2 },
      { args: ['check-trace', join(dir, 'none')], status: 2 },
      { args: ['translate', broken], status: 2 },
      { args: ['translate', 'alexnet', '--tp', '0'], status: 2 },
      { args: ['translate', 'alexnet', '--no-such-flag'], status: 2 },
      { args: ['translate', 'alexnet', '--memory-limit', '0.001'], status: 2 },
      { args: ['memory', 'alexnet', '--memory-limit', '0.001'], status: 2 },
      { args: ['memory', 'no-such-model'], status: 2 },
      { args: ['inspect', broken], status: 2 },
      { args: ['shapes', join(dir, 'missing.onnx')], status: 2 },
      { args: ['compare', 'alexnet', '--hardware', 'no-such-profile'], status: 2 },
      // G = 3 does not divide 8 NPUs: compare once costed "2.67 data x 3 model ways" (the keyword table now refuses it).
      { args: ['compare', 'alexnet', '--hardware', 'tpu-v4,google', '-p', 'HYBRID_DATA_MODEL', '--npus', '8', '--mp-group', '3'], status: 2 },
      { args: ['scalesim', '-t', join(dir, 'missing.csv'), '-c', 'google'], status: 2 },
      { args: ['zoo', 'fetch', 'no-such-zoo-model', '--cache-dir', dir], status: 2 },
      { args: ['shapes', 'alexnet'], status: 0 },
    ];
    const results = await runCliBatch(cases.map((c) => ({ args: c.args, cwd: dir })));
    cases.forEach((c, i) => {
      const r = results[i];
      const what = c.args.join(' ');
      expect(r?.status, `${what}\n${r?.stderr}`).toBe(c.status);
      if (c.status === 2 && !c.args.includes(planted)) {
        expect(r?.stderr.trim().split('\n'), what).toHaveLength(1);
        expect(r?.stderr, what).not.toMatch(/\n\s+at /);
      }
    });
  });
});

describe('one path to the exit code', () => {
  it('no module but main.ts sets process.exitCode (commands return their code)', () => {
    const setters: string[] = [];
    const walk = (folder: string): void => {
      for (const entry of readdirSync(folder)) {
        const path = join(folder, entry);
        if (statSync(path).isDirectory()) walk(path);
        else if (entry.endsWith('.ts') && /process\.exitCode\s*=[^=]/.test(readFileSync(path, 'utf8'))) setters.push(relative(ROOT, path));
      }
    };
    walk(join(ROOT, 'src'));
    expect(setters).toEqual(['src/cli/main.ts']);
  });
});
