/** The command line as a user runs it: exit codes, one-line errors, no partial output files. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseLikeAstra1 } from '../helpers/astra-parsers.js';
import { ROOT, fixturePath, modelPath, truth } from '../helpers/models.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-cli-'));
// Runs the TypeScript sources through tsx, resolved from the repo (the cwd is a temp folder).
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

function run(...args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', tsx, join(ROOT, 'src/cli/main.ts'), ...args], { encoding: 'utf8', cwd: dir });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('modtrans CLI', () => {
  it('translate writes the workload file and says where', () => {
    const out = join(dir, 'resnet50.txt');
    const r = run('translate', 'resnet50', '-p', 'DATA', '--params', 'weights', '--vector-ops', 'off', '-o', out); // ASTRA-sim's reference is GEMM-only
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/54 layers; DATA: TP 1 x DP 8 = 8 ranks; global batch 8 = 8 replicas x 1 micro-batch x 1 sample/);
    const parsed = parseLikeAstra1(readFileSync(out, 'utf8'));
    const reference = parseLikeAstra1(readFileSync(fixturePath('astra-sim/Resnet50_DataParallel.txt'), 'utf8'));
    expect(parsed.layers.map((l) => l.wgSize).sort()).toEqual(reference.layers.map((l) => l.wgSize).sort());
  });

  it('shapes prints every value with symbolic dims as strings', () => {
    const r = run('shapes', modelPath('bert_base_like_dynamic'));
    expect(r.status).toBe(0);
    const values = JSON.parse(r.stdout).values as Record<string, { dtype: string; dims: (number | string)[] }>;
    expect(values['last_hidden_state']).toEqual({ dtype: 'FLOAT', dims: ['batch', 'sequence', 768] });
    expect(Object.keys(values).length).toBeGreaterThanOrEqual(Object.keys(truth('bert_base_like_dynamic').values).length);
  });

  it('inspect --format json follows the documented schema', () => {
    const r = run('inspect', 'alexnet', '--format', 'json');
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.layers[0]).toMatchObject({ name: 'features.0', op: 'Conv', outputShape: [1, 64, 55, 55], gemm: { fwd: { m: 3025, n: 64, k: 363 } }, macs: 3025 * 64 * 363 });
    expect(report.totals.macs).toBe(714188480);
  });

  it('bad input: exit code 2, one line on stderr, no output file', () => {
    const out = join(dir, 'never.txt');
    const broken = join(dir, 'broken.onnx');
    writeFileSync(broken, readFileSync(modelPath('resnet50')).subarray(0, 5000));
    for (const args of [
      ['translate', broken, '-o', out],
      ['translate', 'no-such-model', '-o', out],
      ['translate', 'resnet50', '-p', 'HYBRID_DATA_MODEL', '-o', out],
      ['translate', 'resnet50', '--npus', 'zero', '-o', out],
      ['translate', 'bert_base_like_dynamic', '-o', out],
      ['translate', 'resnet50', '--dim', 'seq=3', '-o', out],
      ['translate', 'resnet50', '--hardware', 'no-such-profile', '-o', out],
    ]) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(out)).toBe(false);
    }
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('--help exits 0', () => {
    const r = run('translate', '--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/--parallelism/);
  });
});

