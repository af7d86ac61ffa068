/**
 * `compare`: one model on several profiles. Per-layer cycles must be what `inspect`'s report
 * gives for each profile alone, times go through each profile's own clock, totals are sums, and
 * the winner is the fastest by time.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCompare } from '../../src/cli/compare-command.js';
import { chartInput } from '../../src/compare/chart.js';
import { compareProfiles, uniqueNames, type Comparison } from '../../src/compare/compare.js';
import { comparisonToCsv, comparisonToJson, comparisonToTable } from '../../src/compare/format.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import type { CostModel } from '../../src/cost/types.js';
import { costModelLayers } from '../../src/costed/costed-plan.js';
import { analyseModel, costedPlanOf, createCostModel, leadingDim, planOf, type AnalysedModel } from '../../src/pipeline.js';
import type { WorldShape } from '../../src/plan/types.js';
import { buildReport } from '../../src/report/layer-report.js';
import { comparisonChartSvg, linearTicks } from '../../src/writers/chart-svg.js';
import { modelPath } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const PROFILES = ['google', 'eyeriss', 'scale', 'tpu-256'];

describe('compare', () => {
  let analysed: AnalysedModel;
  let models: CostModel[];
  let c: Comparison;
  /** The plan of `world` (the model's own batch per replica, one micro-batch) costed on every profile. */
  const costedOn = (world: WorldShape) => {
    const batch = leadingDim(analysed);
    const plan = planOf(analysed, { world, batch: { globalBatch: batch * world.dp, microBatch: batch, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25 });
    return models.map((m) => costedPlanOf(plan, m));
  };

  beforeAll(async () => {
    analysed = analyseModel(modelPath('resnet50'));
    models = await Promise.all(PROFILES.map(async (p) => createCostModel(await loadHardwareProfile(p), 'ideal')));
    c = compareProfiles('resnet50', costedOn({ tp: 1, dp: 1, pp: 1 }));
  });

  it('gives each profile the cycles its own per-layer report has, and ns through its clock', () => {
    models.forEach((m, i) => {
      const report = buildReport('resnet50', costModelLayers(analysed.layers, m));
      c.layers.forEach((l, j) => {
        const r = present(report.layers[j], `report layer ${j}`);
        const f = present(l.perProfile[i], `profile ${i} of ${l.name}`);
        expect([f.fwd.cycles, f.ig.cycles, f.wg.cycles]).toEqual([r.fwd.cycles, r.ig.cycles, r.wg.cycles]);
        expect(f.totalNs).toBeCloseTo(((r.fwd.cycles + r.ig.cycles + r.wg.cycles) * 1000) / m.profile.clockMHz, 6);
      });
      expect(c.totals[i]?.fwd.cycles).toBe(report.totals.fwdCycles);
      expect(c.totals[i]?.totalCycles).toBe(report.totals.fwdCycles + report.totals.igCycles + report.totals.wgCycles);
    });
  });

  it('with a plan of 4 ranks, costs one NPU\'s share: conv1 split 4 ways by output channels gives 16 of its 64 filters', () => {
    // What a legacy -p MODEL --npus 4 plan gives a CNN layer (no transformer pattern): N / 4.
    const split = compareProfiles('resnet50', costedOn({ tp: 4, dp: 1, pp: 1 }), { dataWays: 1, modelWays: 4 });
    models.forEach((m, i) => {
      const pes = m.profile.arrayRows * m.profile.arrayCols * m.profile.arrays;
      const conv1 = present(split.layers.find((l) => l.name === 'conv1')?.perProfile[i], `conv1 on profile ${i}`);
      expect(conv1.fwd.cycles).toBe(Math.ceil((12544 * 16 * 147) / pes)); // ideal model: ceil(MACs / PEs)
      expect(conv1.wg.cycles).toBe(Math.ceil((147 * 16 * 12544) / pes));
    });
    expect(comparisonToTable(split)).toMatch(/one NPU's share \(1 data x 4 model ways\)/);
  });

  it('picks the fastest profile by time, per layer and overall', () => {
    const times = c.totals.map((t) => t.totalNs);
    expect(c.winner).toBe(PROFILES[times.indexOf(Math.min(...times))]);
    expect(Math.min(...c.slowdown)).toBe(1);
    for (const l of c.layers) {
      const best = Math.min(...l.perProfile.map((f) => f.totalNs));
      expect(l.perProfile[PROFILES.indexOf(l.winner)]?.totalNs).toBe(best);
    }
    // tpu-256 has google's array at 700 MHz instead of 1000: same cycles, more time.
    const g = PROFILES.indexOf('google');
    const t = PROFILES.indexOf('tpu-256');
    const [tpu, google] = [present(c.totals[t], 'tpu-256 totals'), present(c.totals[g], 'google totals')];
    expect(tpu.totalCycles).toBe(google.totalCycles);
    expect(tpu.totalNs / google.totalNs).toBeCloseTo(1000 / 700, 9);
  });

  it('utilisation is MACs / (cycles x PEs), stall share is stalls / cycles', () => {
    c.totals.forEach((tot, i) => {
      const macs = 3 * analysed.layers.reduce((a, l) => a + l.macs, 0);
      expect(tot.utilPct).toBeCloseTo((100 * macs) / (tot.totalCycles * present(c.profiles[i], `profile ${i}`).processingElements), 9);
      const stalls = tot.fwd.stallCycles + tot.ig.stallCycles + tot.wg.stallCycles;
      expect(tot.stallSharePct).toBeCloseTo((100 * stalls) / tot.totalCycles, 9);
    });
  });

  it('prints a table, a long CSV and JSON', async () => {
    const table = comparisonToTable(c);
    for (const p of PROFILES) expect(table).toContain(p);
    expect(table).toContain(`fastest overall: ${c.winner}`);
    const csv = (await comparisonToCsv(c)).trim().split('\n');
    expect(csv).toHaveLength(1 + (analysed.layers.length + 1) * PROFILES.length);
    expect(csv[0]).toContain('total_ns');
    expect(JSON.parse(comparisonToJson(c)).totals).toHaveLength(PROFILES.length);
  });

  it('draws an SVG with both panels, every profile and no NaN', () => {
    const svg = comparisonChartSvg(chartInput(c));
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
    for (const p of PROFILES) expect(svg).toContain(`>${p}</text>`);
    for (const label of ['forward', 'input gradient', 'weight gradient', '(a) ', '(b) ']) expect(svg).toContain(label);
    // One stacked segment per profile and pass.
    expect(svg.match(/<rect x="[^"]+" y="[^"]+" width="[^"]+" height="[^"]+" fill="#(0072B2|E69F00|009E73)"><title>/g)).toHaveLength(3 * PROFILES.length);
    expect(linearTicks(93)).toEqual([0, 20, 40, 60, 80, 100]);
  });

  it('draws a chart of zero-time layers (only embeddings, or none) without hanging or NaN', () => {
    for (const layers of [[{ name: 'embed', ns: [0, 0] }], []]) {
      const svg = comparisonChartSvg({ title: 't', profiles: ['a', 'b'], passNs: { fwd: [0, 0], ig: [0, 0], wg: [0, 0] }, layers });
      expect(svg).not.toMatch(/NaN|undefined|Infinity|slower/);
      expect(svg.match(/\(fastest\)/g)).toHaveLength(2);
    }
  });

  it('names duplicate profiles apart', () => {
    expect(uniqueNames(['a', 'b', 'a'])).toEqual(['a', 'b', 'a#2']);
    expect(uniqueNames(['a', 'a#2', 'a', 'a'])).toEqual(['a', 'a#2', 'a#3', 'a#4']);
  });

  it('runs as a command: table to a file and the chart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-compare-'));
    await runCompare('alexnet', { hardware: 'google,eyeriss', format: 'json', dtype: 'fp32', params: 'all', output: join(dir, 'c.json'), chart: join(dir, 'c.svg') });
    const doc = JSON.parse(readFileSync(join(dir, 'c.json'), 'utf8')) as Comparison;
    expect(doc.profiles.map((p) => p.name)).toEqual(['google', 'eyeriss']);
    expect(readFileSync(join(dir, 'c.svg'), 'utf8')).toContain('alexnet');
    await expect(runCompare('alexnet', { hardware: 'google,nosuch', format: 'table', dtype: 'fp32', params: 'all' })).rejects.toThrow(/nosuch/);
    await expect(runCompare('alexnet', { hardware: 'google', format: 'table', dtype: 'fp32', params: 'all', chart: join(dir, 'c.png') })).rejects.toThrow(/\.svg/);
  });
});

describe('compare takes the plan-option set translate, inspect and memory take', () => {
  it('--tp 2: a column layer is costed as one rank\'s GEMM (Megatron: output features split T ways); the process exits 0; a bad plan exits 2', async () => {
    const { runCliBatch } = await import('../helpers/cli-batch.js');
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-compare-plan-'));
    const [whole, split, bad, piped] = await runCliBatch([
      { args: ['compare', 'gpt2_small_like', '--hardware', 'google', '--format', 'json', '-o', join(dir, 'whole.json')], cwd: dir },
      { args: ['compare', 'gpt2_small_like', '--hardware', 'google', '--format', 'json', '--tp', '2', '--sp', '-o', join(dir, 'tp2.json')], cwd: dir },
      { args: ['compare', 'gpt2_small_like', '--hardware', 'google', '--tp', '5'], cwd: dir },
      { args: ['compare', 'gpt2_small_like', '--hardware', 'google', '--pp', '2'], cwd: dir },
    ]);
    expect([whole?.status, split?.status, bad?.status, piped?.status]).toEqual([0, 0, 2, 2]);
    expect(piped?.stderr).toMatch(/^modtrans: --pp 2: compare costs every layer's share on one rank/);
    const doc = (file: string): Comparison => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Comparison;
    const fwdCycles = (file: string): number => doc(file).layers.find((l) => l.name === 'blocks.0.fc')?.perProfile[0]?.fwd.cycles ?? Number.NaN;
    // GPT-2's fc: [128 tokens x 768] x [768 x 3072]; a column-parallel rank of 2 computes 1536 of the outputs.
    const { createCostModel } = await import('../../src/pipeline.js');
    const { loadHardwareProfile } = await import('../../src/cost/hardware.js');
    const model = await createCostModel(await loadHardwareProfile('google'));
    expect(fwdCycles('whole.json')).toBe(model.costGemm({ m: 128, n: 3072, k: 768 }).cycles);
    expect(fwdCycles('tp2.json')).toBe(model.costGemm({ m: 128, n: 1536, k: 768 }).cycles);
    expect(doc('tp2.json').split).toEqual({ dataWays: 1, modelWays: 2 });
    expect(bad?.stderr.trim().split('\n')).toHaveLength(1);
  });
});
