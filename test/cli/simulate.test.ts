/**
 * translate --cluster and simulate, end to end through the CLI. ASTRA-sim itself is stood in for
 * by scripts that print logs recorded from the real binary (test/fixtures/astra-sim/logs/), so
 * CI needs no binary; the exit-status cases are the ones seen from ASTRA-sim master.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gptModel } from '../../bench/models/gpt-graph.js';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';

const ROOT = resolve(__dirname, '../..');
const LOGS = join(ROOT, 'test/fixtures/astra-sim/logs');
const dir = mkdtempSync(join(tmpdir(), 'modtrans-simulate-'));
const model = join(dir, 'gpt.onnx');
const PLAN8 = ['--tp', '2', '--dp', '4', '--global-batch', '8', '--micro-batch', '2', '--dtype', 'bf16'];

/** A stand-in for ASTRA-sim: prints a recorded log and exits with `status`. */
function fakeAstraSim(name: string, log: string, status: number, sleepS = 0): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${sleepS > 0 ? `sleep ${sleepS}\n` : ''}cat '${log}'\nexit ${status}\n`);
  chmodSync(path, 0o755);
  return path;
}

let results: CliResult[] = [];
const missingRank5 = join(dir, 'rank5-missing.log');

beforeAll(async () => {
  writeFileSync(model, gptModel({ layers: 2, hidden: 64, heads: 16, seq: 16, batch: 2, vocab: 96 }));
  writeFileSync(join(dir, 'bad-cluster.json'), JSON.stringify({ name: 'bad', devicesPerNode: 8 }));
  writeFileSync(missingRank5, readFileSync(join(LOGS, 'finished-8-ranks.log'), 'utf8').split('\n').filter((l) => !l.includes('sys[5] finished')).join('\n'));
  const sim = (bin: string, ...more: string[]) => ({ args: ['simulate', model, ...PLAN8, '--cluster', 'dgx-a100-superpod', '--astra-sim', bin, '--run-dir', join(dir, `run-${results.length}-${more.join('')}${bin.length}`), ...more], cwd: dir });
  delete process.env['ASTRA_SIM_BIN'];
  results = await runCliBatch([
    { args: ['translate', model, ...PLAN8, '--format', 'chakra', '--cluster', 'dgx-a100-superpod', '-o', join(dir, 't8/g')], cwd: dir },
    { args: ['translate', model, '--tp', '16', '--global-batch', '2', '--micro-batch', '2', '--format', 'chakra', '--cluster', 'dgx-a100-superpod', '-o', join(dir, 't16/g')], cwd: dir },
    { args: ['translate', model, ...PLAN8, '--cluster', 'dgx-a100-superpod'], cwd: dir },
    { args: ['translate', model, ...PLAN8, '--format', 'chakra', '--cluster', join(dir, 'bad-cluster.json'), '-o', join(dir, 'bad/g')], cwd: dir },
    { args: ['simulate', model, ...PLAN8, '--cluster', 'dgx-a100-superpod', '--run-dir', join(dir, 'run-nobin')], cwd: dir },
    { ...sim(fakeAstraSim('finished.sh', join(LOGS, 'finished-8-ranks.log'), 0), '--format', 'json') },
    { ...sim(fakeAstraSim('abort.sh', join(LOGS, 'teardown-abort-134-8-ranks.log'), 134), '--format', 'json') },
    { ...sim(fakeAstraSim('missing.sh', missingRank5, 0)) },
    { ...sim(fakeAstraSim('hang.sh', join(LOGS, 'finished-8-ranks.log'), 0, 30), '--timeout', '1') },
    { args: ['simulate', model, ...PLAN8, '--cluster', 'dgx-a100-superpod', '--astra-sim', join(dir, 'no-such-astra-sim'), '--run-dir', join(dir, 'run-nofile')], cwd: dir },
    { args: ['translate', model, '--tp', '4', '--dp', '3', '--global-batch', '6', '--micro-batch', '2', '--format', 'chakra', '--cluster', 'dgx-a100-superpod', '-o', join(dir, 't12/g')], cwd: dir },
  ]);
}, 120_000);

describe('translate --cluster', () => {
  it('writes network.yml, system.json and remote_memory.json beside the traces, listed in the manifest', () => {
    expect(results[0]?.status, results[0]?.stderr).toBe(0);
    const yaml = readFileSync(join(dir, 't8/g.network.yml'), 'utf8');
    expect(yaml).toMatch(/^topology: \[ Switch \]$/m);
    expect(yaml).toMatch(/^npus_count: \[ 8 \]$/m);
    expect(JSON.parse(readFileSync(join(dir, 't8/g.system.json'), 'utf8'))['all-reduce-implementation']).toEqual(['ring']);
    expect(JSON.parse(readFileSync(join(dir, 't8/g.remote_memory.json'), 'utf8'))).toEqual({ 'memory-type': 'NO_MEMORY_EXPANSION' });
    const manifest = JSON.parse(readFileSync(join(dir, 't8/g.manifest.json'), 'utf8'));
    expect(manifest.files.map((f: { name: string }) => f.name)).toEqual(expect.arrayContaining(['g.network.yml', 'g.system.json', 'g.remote_memory.json']));
  });

  it('16 ranks: [Switch 8, Switch 2], and a TP group of 16 straddling nodes is a named warning', () => {
    expect(results[1]?.status, results[1]?.stderr).toBe(0);
    expect(readFileSync(join(dir, 't16/g.network.yml'), 'utf8')).toMatch(/^npus_count: \[ 8, 2 \]$/m);
    expect(results[1]?.stderr).toMatch(/warning: tp-straddles-nodes: a TP group of 16 ranks spans 2 nodes of 8 devices/);
  });

  it('applies to --format chakra only; a bad cluster file is one line naming the file and field (exit 2, nothing written)', () => {
    expect(results[2]?.status).toBe(2);
    expect(results[2]?.stderr).toBe('modtrans: --cluster applies to --format chakra (its configs go beside the .et traces)\n');
    expect(results[3]?.status).toBe(2);
    expect(results[3]?.stderr.trim().split('\n').at(-1)).toMatch(/^modtrans: .*bad-cluster\.json: source must be an object \(where each figure comes from, by field\)$/);
    expect(existsSync(join(dir, 'bad/g.0.et'))).toBe(false);
  });

  it('a world that does not fill whole nodes is an input error (exit 2, nothing written)', () => {
    expect(results[10]?.status).toBe(2);
    expect(results[10]?.stderr).toBe('modtrans: --cluster dgx-a100-superpod: a world of 12 ranks does not fill whole nodes of 8 devices (give a multiple of 8)\n');
    expect(existsSync(join(dir, 't12/g.0.et'))).toBe(false);
  });
});

describe('simulate', () => {
  it('without a binary: the free-network prediction, then one line saying how to get one (exit 2)', () => {
    const r = results[4];
    expect(r?.status).toBe(2);
    expect(r?.stderr).toMatch(/predicted step if the network were free: /);
    expect(r?.stderr.trim().split('\n').at(-1)).toMatch(/^modtrans: no ASTRA-sim binary: build ASTRA-sim 2\.x's analytical backend \(docs\/simulate\.md says how\) and give --astra-sim BIN or set ASTRA_SIM_BIN/);
  });

  it("reports every rank's finish from ASTRA-sim's log as JSON", () => {
    const r = results[5];
    expect(r?.status, r?.stderr).toBe(0);
    const step = JSON.parse(r?.stdout ?? '');
    expect(step.step_ns).toBe(6955017);
    expect(step.exposed_comm_ns).toBe(3986435);
    expect(step.bubble).toBe(0);
    expect(step.ranks).toHaveLength(8);
    expect(step.ranks[7]).toEqual({ rank: 7, finished_ns: 6955017, exposed_comm_ns: 3986435 });
    expect(Object.keys(step)).toEqual(['step_ns', 'tflops_per_device', 'mfu', 'exposed_comm_ns', 'bubble', 'ranks']);
  });

  it('exit 134 after every rank finished is the teardown abort: the result stands, and the note says the status disagrees', () => {
    const r = results[6];
    expect(r?.status, r?.stderr).toBe(0);
    expect(JSON.parse(r?.stdout ?? '').step_ns).toBe(5438398);
    expect(r?.stderr).toMatch(/note: ASTRA-sim exited with status 134 \(ASTRA-sim's teardown abort: malloc_consolidate\(\): unaligned fastbin chunk detected\) after every rank finished/);
  });

  it('a rank that never finishes is an error naming it; a hang is killed after --timeout', () => {
    expect(results[7]?.status).toBe(2);
    expect(results[7]?.stderr).toMatch(/modtrans: ASTRA-sim exited \(status 0\) with rank 5 of 8 not finished \(log: /);
    expect(results[8]?.status).toBe(2);
    expect(results[8]?.stderr).toMatch(/modtrans: ASTRA-sim did not finish within 1 s and was killed: ranks 0, 1, 2, 3, 4, 5, 6, 7 of 8 never finished/);
  });

  it('--astra-sim naming no file is one line, before any work (exit 2, no run folder)', () => {
    expect(results[9]?.status).toBe(2);
    expect(results[9]?.stderr).toBe(`modtrans: --astra-sim ${join(dir, 'no-such-astra-sim')}: no such file; build ASTRA-sim 2.x's analytical backend (docs/simulate.md says how) and give --astra-sim BIN or set ASTRA_SIM_BIN\n`);
    expect(existsSync(join(dir, 'run-nofile'))).toBe(false);
  });

  it('the process exits 2 without a binary (spawned bin)', () => {
    const bin = join(ROOT, 'dist', 'cli', 'main.cjs');
    const env = { ...process.env };
    delete env['ASTRA_SIM_BIN'];
    const r = spawnSync(process.execPath, [bin, 'simulate', model, ...PLAN8, '--cluster', 'dgx-a100-superpod', '--run-dir', join(dir, 'run-spawned')], { encoding: 'utf8', env });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/no ASTRA-sim binary/);
  });
});
