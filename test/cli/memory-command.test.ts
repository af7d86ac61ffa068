/** `modtrans memory`: formats, the JSON layout, the memory limit (exit 2, no output file). */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { runCliBatch } from '../helpers/cli-batch.js';
import { present } from '../helpers/present.js';

const cwd = mkdtempSync(join(tmpdir(), 'modtrans-memory-'));
const plan = ['gpt2_small_like', '--tp', '2', '--dp', '2', '--global-batch', '4', '--micro-batch', '1', '--dtype', 'bf16', '--optimizer', 'adam', '--zero', '1'];
const [json, csv, table, limited, badRecompute] = await runCliBatch([
  { args: ['memory', ...plan, '--format', 'json'], cwd },
  { args: ['memory', ...plan, '--format', 'csv', '--recompute', 'full'], cwd },
  { args: ['memory', ...plan, '--recompute', 'selective'], cwd },
  { args: ['memory', ...plan, '--memory-limit', '0.25', '-o', 'out.json', '--format', 'json'], cwd },
  { args: ['memory', ...plan, '--recompute', 'some'], cwd },
]);

describe('modtrans memory', () => {
  it('writes one JSON record per rank and the peak rank', () => {
    expect(json?.status).toBe(0);
    const report = JSON.parse(present(json, 'the JSON run').stdout) as { ranks: Record<string, number>[]; peakRank: number };
    expect(report.ranks.map((r) => r['rank'])).toEqual([0, 1, 2, 3]);
    for (const r of report.ranks) {
      expect(Object.keys(r)).toEqual(['rank', 'stage', 'weightsBytes', 'gradientsBytes', 'optimizerBytes', 'activationsBytes', 'totalBytes']);
      // bf16 Adam under ZeRO-1 over D = 2: 12 bytes per parameter on half the parameters, 2 on the weights.
      expect(r['optimizerBytes']).toBe(Math.ceil(present(r['weightsBytes'], 'weightsBytes') / 2 / 2) * 12);
      expect(r['totalBytes']).toBe(['weightsBytes', 'gradientsBytes', 'optimizerBytes', 'activationsBytes'].reduce((sum, k) => sum + present(r[k], k), 0));
    }
    expect(report.peakRank).toBe(0);
  });

  it('writes CSV and a table; recomputation lowers the activations', () => {
    const rows = present(csv, 'the CSV run').stdout.trim().split('\n');
    expect(rows[0]).toBe('rank,stage,weightsBytes,gradientsBytes,optimizerBytes,activationsBytes,totalBytes');
    expect(rows).toHaveLength(5);
    const none = present((JSON.parse(present(json, 'the JSON run').stdout) as { ranks: { activationsBytes: number }[] }).ranks[0], 'rank 0').activationsBytes;
    expect(Number(rows[1]?.split(',')[5])).toBeLessThan(none);
    expect(table?.status).toBe(0);
    expect(table?.stdout).toMatch(/^\s*ranks\s+count\s+stage\s+weights GiB/);
    expect(table?.stdout).toMatch(/peak rank 0/);
  });

  it('--memory-limit fails with exit 2 naming the rank, and writes nothing', () => {
    expect(limited?.status).toBe(2);
    expect(limited?.stderr).toMatch(/^modtrans: rank 0 \(stage 0\) needs [\d.]+ GiB \(\d+ bytes\), over --memory-limit 0.25 GiB\n$/);
    expect(existsSync(join(cwd, 'out.json'))).toBe(false);
  });

  it('refuses an unknown --recompute mode', () => {
    expect(badRecompute?.status).toBe(2);
    expect(badRecompute?.stderr).toMatch(/--recompute/);
  });
});

describe('translate --memory-limit', () => {
  it('refuses a plan whose peak rank does not fit, naming it, and writes nothing', async () => {
    const { runCli } = await import('../../src/cli/main.js');
    const out = join(mkdtempSync(join(tmpdir(), 'modtrans-limit-')), 'gpt2.txt');
    const writes: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
      writes.push(String(s));
      return true;
    });
    // GPT-2 small holds ~163 M parameters: with SGD in fp32, weights and gradients alone are over 1 GiB.
    const code = await runCli(['node', 'modtrans', 'translate', 'gpt2_small_like', '-o', out, '--memory-limit', '1']);
    spy.mockRestore();
    expect(code).toBe(2);
    expect(writes.join('')).toMatch(/rank 0 \(stage 0\) needs [\d.]+ GiB .* over --memory-limit 1 GiB/);
    expect(existsSync(out)).toBe(false);
  });
});
