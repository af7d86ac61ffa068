/**
 * Issue 22 rows 6, 11, 13, 14 at the command line: FIFOs, devices and oversized files as option or
 * data files, hostile `--tp-plan` keys, absurd SCALE-sim topologies and configs: each exits 2 with
 * one bounded line, quickly, never blocks and never reads a device.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { ROOT } from '../helpers/models.js';
import { FIXTURES } from '../scalesim/reference.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-hostile-cli-'));
const at = (name: string): string => join(dir, name);
const fifo = at('fifo');
const GOOGLE_CFG = `${FIXTURES}configs/google.cfg`;
const CONV_CSV = `${FIXTURES}topologies/conv_nets/`;

const LINES = {
  tpPlanFifo: ['translate', 'gpt2_small_like', '--tp', '2', '--tp-plan', fifo],
  tpPlanZero: ['translate', 'gpt2_small_like', '--tp', '2', '--tp-plan', '/dev/zero'],
  tpPlanHuge: ['translate', 'gpt2_small_like', '--tp', '2', '--tp-plan', at('huge.json')],
  tpPlanLongKey: ['translate', 'gpt2_small_like', '--tp', '2', '--tp-plan', at('long-key.json')],
  tpPlanRegex: ['translate', 'gpt2_small_like', '--tp', '2', '--tp-plan', at('regex.json')],
  tpPlanGlob: ['inspect', 'gpt2_small_like', '--tp', '2', '--tp-plan', at('glob.json'), '--format', 'csv'],
  ppStagesFifo: ['translate', 'gpt2_small_like', '--pp', '2', '--pp-stages', fifo, '--format', 'chakra-json'],
  profileFifo: ['inspect', 'alexnet', '--hardware', at('fifo.json')],
  profileTiny: ['translate', 'alexnet', '--hardware', at('tiny-clock.json')],
  topologyFifo: ['scalesim', '-t', fifo, '-c', GOOGLE_CFG, '-o', at('out')],
  topologyZero: ['scalesim', '-t', '/dev/zero', '-c', GOOGLE_CFG, '-o', at('out')],
  configFifo: ['scalesim', '-t', `${CONV_CSV}alexnet.csv`, '-c', at('fifo.cfg'), '-o', at('out')],
  gemmHuge: ['scalesim', '--gemm', '-t', at('gemm-huge.csv'), '-c', GOOGLE_CFG, '-o', at('out')],
  convHuge: ['scalesim', '-t', at('conv-huge.csv'), '-c', GOOGLE_CFG, '-o', at('out')],
  manyRows: ['scalesim', '--gemm', '-t', at('many-rows.csv'), '-c', GOOGLE_CFG, '-o', at('out')],
  userTiny: ['scalesim', '-t', at('conv-small.csv'), '-c', at('user-tiny.json'), '-o', at('out')],
} as const;

let results: Record<keyof typeof LINES, CliResult>;

beforeAll(async () => {
  execFileSync('mkfifo', [fifo, at('fifo.json'), at('fifo.cfg')]);
  writeFileSync(at('huge.json'), `{ "${'a'.repeat(50 * 1024 * 1024)}": "row" }`);
  writeFileSync(at('long-key.json'), JSON.stringify({ [`*${'b'.repeat(400)}`]: 'row' }));
  writeFileSync(at('regex.json'), JSON.stringify({ '^(.+)+!$': 'row' }));
  writeFileSync(at('glob.json'), JSON.stringify({ 'blocks.*.fc': 'replicated' }));
  const gemmini = JSON.parse(readFileSync(join(ROOT, 'hardware-profiles', 'gemmini.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(at('tiny-clock.json'), JSON.stringify({ ...gemmini, clock: '1e-300 Hz' }));
  writeFileSync(at('user-tiny.json'), JSON.stringify({ ...gemmini, name: 'tiny', arrayRows: 1, arrayCols: 1, ifmapSram: '2 B', filterSram: '2 B', ofmapSram: '2 B', bandwidthMode: 'user' }));
  writeFileSync(at('gemm-huge.csv'), 'Layer, M, N, K,\nbig, 1000000000, 1000000000, 1000000000,\n');
  writeFileSync(at('conv-huge.csv'), 'Layer, H, W, R, S, C, M, S,\nbig, 40000, 40000, 1, 1, 1, 1, 1,\n');
  writeFileSync(at('conv-small.csv'), 'Layer, H, W, R, S, C, M, S,\nc, 256, 256, 3, 3, 16, 16, 1,\n');
  writeFileSync(at('many-rows.csv'), `Layer, M, N, K,\n${'g, 8, 8, 8,\n'.repeat(100_000)}`);
  const names = Object.keys(LINES) as (keyof typeof LINES)[];
  const out = await runCliBatch(names.map((n) => ({ args: [...LINES[n]], cwd: ROOT })));
  results = Object.fromEntries(names.map((n, i) => [n, out[i]])) as Record<keyof typeof LINES, CliResult>;
});

/** Exit 2, one error line (after any warnings) matching `pattern`. */
function refused(name: keyof typeof LINES, pattern: RegExp): void {
  const r = results[name];
  expect(r.stderr, name).toMatch(pattern);
  expect(r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('modtrans: warning: ')), name).toHaveLength(1);
  expect(r.stderr.length, name).toBeLessThan(2100);
  expect(r.status, name).toBe(2);
}

describe('option and data files must be regular files of bounded size (row 11)', () => {
  it('--tp-plan: a FIFO, /dev/zero, a 50 MB file', () => {
    refused('tpPlanFifo', /^modtrans: --tp-plan .*fifo: cannot read the file \(is a FIFO, not a regular file\)$/m);
    refused('tpPlanZero', /^modtrans: --tp-plan \/dev\/zero: cannot read the file \(is a character device, not a regular file\)$/m);
    refused('tpPlanHuge', /^modtrans: --tp-plan .*huge\.json: cannot read the file \(52428813 bytes, more than the limit of 1 MiB\)$/m);
  });
  it('--pp-stages, a profile, scalesim -t and -c', () => {
    refused('ppStagesFifo', /^modtrans: --pp-stages .*fifo: cannot read the file \(is a FIFO, not a regular file\)$/m);
    refused('profileFifo', /fifo\.json: cannot read hardware profile \(is a FIFO, not a regular file\)$/m);
    refused('topologyFifo', /fifo: cannot read topology \(is a FIFO, not a regular file\)$/m);
    refused('topologyZero', /^modtrans: \/dev\/zero: cannot read topology \(is a character device, not a regular file\)$/m);
    refused('configFifo', /fifo\.cfg: cannot read SCALE-sim config \(is a FIFO, not a regular file\)$/m);
  });
});

describe('--tp-plan keys (row 6)', () => {
  it('a regular expression is refused, a long key is cut in the message', () => {
    refused('tpPlanRegex', /regex\.json: key '\^\(\.\+\)\+!\$' has '\^': keys are globs/);
    refused('tpPlanLongKey', /long-key\.json: key '\*b+\.\.\.\(321 characters left out\)\.\.\.b+' is 401 characters, more than the limit of 256$/m);
  });
  it('a glob overrides the roles of every layer it matches', () => {
    const r = results.tpPlanGlob;
    expect(r.status, r.stderr).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => /^blocks\.\d+\.fc,/.test(l));
    expect(rows.length).toBe(12); // one MLP up projection per block of GPT-2 small
    for (const row of rows) expect(row).toMatch(/^blocks\.\d+\.fc,MatMul,replicated,/);
    // The glob matches the whole name: the bias add after it keeps its role.
    expect(r.stdout).toMatch(/^blocks\.0\.fc\.Add,Add,sharded,/m);
  });
});

describe('profiles at the command line (row 5)', () => {
  it('a clock of 1e-300 Hz is exit 2 naming the key, not an internal error', () => {
    refused('profileTiny', /tiny-clock\.json: key 'clock' is 1e-300 Hz, outside 1 Hz \.\. 1 PHz$/m);
  });
});

describe('SCALE-sim runs are bounded (row 13)', () => {
  it('--gemm rows get the conv bounds; a 40,000^2 conv is exit 2', () => {
    refused('gemmHuge', /gemm-huge\.csv:2: IFMAP of 1000000000000000000 words is beyond the 2147483647-word address range simulated$/m);
    refused('convHuge', /conv-huge\.csv:2: the layer's GEMM 1600000000x1x1 has M \(ofmap pixels\) 1600000000, more than the 67108864 the memory walk simulates$/m);
  });
  it('100,000 topology rows and a USER-mode 1x1 array with 2-byte SRAMs are refused before simulating', () => {
    refused('manyRows', /many-rows\.csv: more than 20000 layers \(the limit of a topology\)$/m);
    refused('userTiny', /tiny: layer c: \d+ compute cycles with 1-word SRAM sets need ~\d+ steps of the USER-mode memory walk, more than the limit of 134217728/);
  });
});
