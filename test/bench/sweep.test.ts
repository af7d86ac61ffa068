/** Smoke test of the sweep suite on a tiny subset (no timing assertions). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseArgs, summaryMarkdown } from '../../bench/run.js';
import { runSweep, sweepMarkdown } from '../../bench/sweep.js';

describe('bench sweep', () => {
  it('translates every model x profile x parallelism of the subset and summarises it', async () => {
    const progress: number[] = [];
    const r = await runSweep({ models: ['alexnet', 'resnet50_dynamic'], profiles: ['google', 'scale'], parallelisms: ['DATA', 'HYBRID_DATA_MODEL'], onProgress: (done) => progress.push(done) });
    expect(r.rows).toHaveLength(8);
    expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(r.models.map((m) => m.model)).toEqual(['alexnet', 'resnet50_dynamic']);
    for (const row of r.rows) {
      expect(row.translateMs).toBeGreaterThanOrEqual(0);
      expect(row.computeNs).toBeGreaterThan(0);
    }
    const md = sweepMarkdown(r);
    expect(md).toContain('| alexnet | 8 |');
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-bench-'));
    writeFileSync(join(dir, 'sweep.json'), JSON.stringify({ recordedAt: 'now', result: r }));
    expect(summaryMarkdown(dir)).toContain('## sweep');
  });

  it('notes a split the plan refuses (12 attention heads over 8 tensor-parallel ranks) once, and sweeps on', async () => {
    const progress: number[] = [];
    const r = await runSweep({ models: ['bert_base_like'], profiles: ['google', 'scale'], parallelisms: ['DATA', 'MODEL'], onProgress: (done) => progress.push(done) });
    expect(r.rows.map((x) => x.parallelism)).toEqual(['DATA', 'DATA']);
    expect(r.refused?.map((x) => [x.model, x.parallelism])).toEqual([['bert_base_like', 'MODEL']]);
    expect(r.refused?.[0]?.reason).toMatch(/heads 12 do not split over --tp 8/);
    expect(progress).toEqual([1, 2, 3, 4]);
    expect(sweepMarkdown(r)).toContain('- bert_base_like MODEL: ');
  });

  it('parses suites and options', () => {
    expect(parseArgs([]).suites).toEqual(['translate', 'cost', 'sweep', 'goals', 'traces', 'fuzz', 'tests', 'gpu', 'megatron']);
    expect(parseArgs(['sweep', '--models', 'a,b'])).toMatchObject({ suites: ['sweep'], models: ['a', 'b'] });
    expect(() => parseArgs(['nosuch'])).toThrow(/unknown suite/);
    expect(() => parseArgs(['sweep', '--models'])).toThrow(/--models needs a comma-separated list/);
    expect(() => parseArgs(['--profiles', '--quiet'])).toThrow(/--profiles needs/);
  });
});
