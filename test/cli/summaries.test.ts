/**
 * Summaries fit a terminal: translate's pipeline line stays one short line however many stages
 * (16 stages named in full made a 2,000-character line), with a line per stage on request
 * (`--stage-table`); `memory`'s table gives ranks of a stage holding the same bytes one row and
 * names the peak, with a row per rank on request (`--per-rank`; CSV and JSON list every rank).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { present } from '../helpers/present.js';

const pp8 = ['translate', 'gpt2_small_like', '--pp', '6', '--global-batch', '12', '--micro-batch', '2', '--hardware', 'tpu-256', '--format', 'chakra', '-o', 'g'];
/** TP 2 x DP 2 x PP 2: 8 ranks, 4 per stage, all four of a stage alike. */
const memoryPlan = ['memory', 'gpt2_small_like', '--tp', '2', '--dp', '2', '--pp', '2', '--global-batch', '16', '--micro-batch', '2', '--hardware', 'tpu-256'];

describe('summaries', () => {
  let r: CliResult[];
  beforeAll(async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'modtrans-summaries-'));
    r = await runCliBatch([
      { args: pp8, cwd },
      { args: [...pp8, '--stage-table'], cwd },
      { args: memoryPlan, cwd },
      { args: [...memoryPlan, '--per-rank'], cwd },
      { args: [...memoryPlan, '--format', 'csv'], cwd },
      { args: [...memoryPlan, '--format', 'csv', '--per-rank'], cwd },
      { args: ['translate', 'alexnet', '--stage-table'], cwd },
      { args: ['translate', 'lstm_lm', '--tp', '2', '--format', 'chakra', '-o', 'one-group'], cwd },
    ]);
  }, 90_000);
  const out = (i: number) => present(r[i], `run ${i}`);

  it('translate --pp 6: one pipeline line under 160 characters naming the slowest stage; --stage-table adds a line per stage', () => {
    expect(out(0).status).toBe(0);
    const pipeline = out(0).stderr.split('\n').filter((l) => l.startsWith('modtrans: pipeline '));
    expect(pipeline).toHaveLength(1);
    expect(present(pipeline[0], 'pipeline line').length).toBeLessThan(160);
    expect(pipeline[0]).toMatch(/^modtrans: pipeline 1f1b, 6 stages; fwd \+ bwd per micro-batch on one rank [\d,.]+ (?:ns|µs|ms|s) - [\d,.]+ (?:ns|µs|ms|s) \(slowest: stage [0-5]\); --stage-table lists each stage$/);
    expect(out(0).stderr).not.toContain('lm_head');
    const rows = out(1).stderr.split('\n').filter((l) => /^modtrans: +\d+ +\d+ +[\d,.]+ +\S+ \.\. \S+$/.test(l));
    expect(rows).toHaveLength(6);
    expect(rows[0]).toMatch(/ wte \.\. /);
    expect(rows[5]).toMatch(/ \.\. lm_head$/);
  });

  it('one communicator group is "(1 group)"', () => {
    expect(out(7).status).toBe(0);
    expect(out(7).stderr).toContain('one-group.comm-groups.json (1 group)');
  });

  it('--stage-table without pipeline stages is an error (exit 2)', () => {
    expect(out(6).status).toBe(2);
    expect(out(6).stderr).toContain('--stage-table needs pipeline stages (--pp P)');
  });

  it('memory: a row per stage of identical ranks, the peak named; --per-rank and CSV list every rank', () => {
    expect(out(2).status).toBe(0);
    const lines = out(2).stdout.trim().split('\n');
    expect(present(lines[0], 'header').trim().split(/\s{2,}/)).toEqual(['ranks', 'count', 'stage', 'weights GiB', 'grads GiB', 'optimizer GiB', 'activations GiB', 'total GiB']);
    // rank = t + T (d + D p): stage 0 is ranks 0-3, stage 1 ranks 4-7; 1F1B keeps more micro-batches on stage 0.
    expect(lines.slice(1, 3).map((l) => l.trim().split(/\s+/).slice(0, 3))).toEqual([['0-3*', '4', '0'], ['4-7', '4', '1']]);
    expect(lines[3]).toMatch(/^\* peak rank 0 \(stage 0\): [\d.]+ GiB; 8 ranks in 2 rows of identical ranks \(--per-rank lists each\)$/);
    expect(out(3).stdout.trim().split('\n')).toHaveLength(1 + 8 + 1);
    expect(out(4).stdout.trim().split('\n')).toHaveLength(1 + 8);
    expect(out(5).status).toBe(2);
    expect(out(5).stderr).toContain('--per-rank applies to --format table');
  });
});
