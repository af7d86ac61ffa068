/**
 * The command line as a user runs it: exit codes, one-line errors, no partial output files. The
 * command lines run in one process (cli-batch); one bad input also runs as the built bin, whose
 * process exit code is what a shell sees.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseLikeAstra1 } from '../helpers/astra-parsers.js';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { ROOT, fixturePath, modelPath, truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-cli-'));
const BIN = join(ROOT, 'dist', 'cli', 'main.cjs');
const never = join(dir, 'never.txt');
const broken = join(dir, 'broken.onnx');

const COMMANDS = {
  translate: ['translate', 'resnet50', '-p', 'DATA', '--params', 'weights', '--vector-ops', 'off', '-o', join(dir, 'resnet50.txt')], // ASTRA-sim's reference is GEMM-only
  shapes: ['shapes', modelPath('bert_base_like_dynamic')],
  inspect: ['inspect', 'alexnet', '--format', 'json'],
  help: ['translate', '--help'],
} as const;
const BAD_INPUTS = [
  ['translate', broken, '-o', never],
  ['translate', 'no-such-model', '-o', never],
  ['translate', 'resnet50', '-p', 'HYBRID_DATA_MODEL', '-o', never],
  ['translate', 'resnet50', '--npus', 'zero', '-o', never],
  ['translate', 'bert_base_like_dynamic', '-o', never],
  ['translate', 'resnet50', '--dim', 'seq=3', '-o', never],
  ['translate', 'resnet50', '--hardware', 'no-such-profile', '-o', never],
];

let ran: Record<keyof typeof COMMANDS, CliResult>;
/** Each bad input's result and whether the output file existed right after it. */
let bad: { r: CliResult; wroteOutput: boolean }[] = [];

beforeAll(async () => {
  writeFileSync(broken, readFileSync(modelPath('resnet50')).subarray(0, 5000));
  const names = Object.keys(COMMANDS) as (keyof typeof COMMANDS)[];
  const results = await runCliBatch(names.map((n) => ({ args: [...COMMANDS[n]], cwd: dir })));
  ran = Object.fromEntries(names.map((n, i) => [n, present(results[i], n)])) as typeof ran;
  bad = [];
  for (const args of BAD_INPUTS) {
    const [r] = await runCliBatch([{ args, cwd: dir }]);
    bad.push({ r: present(r, args.join(' ')), wroteOutput: existsSync(never) });
  }
});

describe('modtrans CLI', () => {
  it('translate writes the workload file and says where', () => {
    const r = ran.translate;
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/54 layers; DATA: TP 1 x DP 8 = 8 ranks; global batch 8 = 8 replicas x 1 micro-batch x 1 sample/);
    const parsed = parseLikeAstra1(readFileSync(join(dir, 'resnet50.txt'), 'utf8'));
    const reference = parseLikeAstra1(readFileSync(fixturePath('astra-sim/Resnet50_DataParallel.txt'), 'utf8'));
    expect(parsed.layers.map((l) => l.wgSize).sort()).toEqual(reference.layers.map((l) => l.wgSize).sort());
  });

  it('shapes prints every value with symbolic dims as strings', () => {
    const r = ran.shapes;
    expect(r.status).toBe(0);
    const values = JSON.parse(r.stdout).values as Record<string, { dtype: string; dims: (number | string)[] }>;
    expect(values['last_hidden_state']).toEqual({ dtype: 'FLOAT', dims: ['batch', 'sequence', 768] });
    expect(Object.keys(values).length).toBeGreaterThanOrEqual(Object.keys(truth('bert_base_like_dynamic').values).length);
  });

  it('inspect --format json follows the documented schema', () => {
    const r = ran.inspect;
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.layers[0]).toMatchObject({ name: 'features.0', op: 'Conv', outputShape: [1, 64, 55, 55], gemm: { fwd: { m: 3025, n: 64, k: 363 } }, macs: 3025 * 64 * 363 });
    expect(report.totals.macs).toBe(714188480);
  });

  it('bad input: exit code 2, one line on stderr, no output file', () => {
    expect(bad).toHaveLength(BAD_INPUTS.length);
    bad.forEach(({ r, wroteOutput }, i) => {
      const what = BAD_INPUTS[i]?.join(' ');
      expect(r.status, what).toBe(2);
      expect(r.stderr.trim().split('\n'), what).toHaveLength(1);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(wroteOutput).toBe(false);
    });
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('bad input as a process: the built bin exits 2 with one line on stderr and no output file', () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm ci does)`);
    const r = spawnSync(process.execPath, [BIN, ...present(BAD_INPUTS[0], 'the broken model')], { encoding: 'utf8', cwd: dir });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(never)).toBe(false);
  });

  it('--help exits 0', () => {
    const r = ran.help;
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/--parallelism/);
  });
});
