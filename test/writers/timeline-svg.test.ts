/**
 * The step timeline (`translate --timeline`): well-formed SVG, one box per stage, micro-batch and
 * pass, boxes where the free-network prediction puts them, every label inside the canvas (text
 * extents estimated at 0.65 em per character, wider than DejaVu Sans' average).
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadProfile } from '../../src/cli/options.js';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import type { PlanOptions } from '../../src/plan/build.js';
import { analyseModel, createCostModel, planOf, scheduleOf } from '../../src/pipeline.js';
import { predictFreeNetwork } from '../../src/predict/free-network.js';
import type { StepSchedule } from '../../src/schedule/types.js';
import { timelineRows } from '../../src/writers/timeline-data.js';
import { timelineSvg } from '../../src/writers/timeline-svg.js';
import { BARE_GPT, writeGptModel, type GptOptions } from '../../bench/models/gpt-graph.js';
import { present } from '../helpers/present.js';
import { pipelineSchedule, type PipelineShape } from '../predict/pipelines.js';

const EM = 0.65;

/** Throws unless `xml` is one well-formed element tree: tags nest and close, attributes are quoted, text has no raw '<' or bare '&'. */
function assertWellFormed(xml: string): void {
  const stack: string[] = [];
  const body = xml.replace(/^<\?xml[^>]*\?>\s*/, '');
  const token = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/g;
  let roots = 0;
  for (const m of body.matchAll(token)) {
    const [, close, name, , selfClose, textPart, stray] = m;
    if (stray !== undefined) throw new Error(`malformed tag at ${m.index}: ${body.slice(m.index, m.index + 60)}`);
    if (textPart !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(textPart)) throw new Error(`bare & in text at ${m.index}`);
      if (stack.length === 0 && textPart.trim() !== '') throw new Error('text outside the root element');
      continue;
    }
    if (close) {
      if (stack.pop() !== name) throw new Error(`</${name}> closes the wrong element at ${m.index}`);
    } else if (!selfClose) {
      if (stack.length === 0) roots++;
      stack.push(present(name, 'tag name'));
    } else if (stack.length === 0) roots++;
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.join('> <')}>`);
  if (roots !== 1) throw new Error(`${roots} root elements`);
}

function render(shape: PipelineShape, title = 'test') {
  const schedule = pipelineSchedule(shape);
  const prediction = predictFreeNetwork(schedule);
  const svg = timelineSvg({ title, subtitle: 'subtitle', schedule, prediction });
  const [, w, h] = present(/<svg[^>]* width="([\d.]+)" height="([\d.]+)"/.exec(svg), 'svg width and height');
  return { svg, width: Number(w), height: Number(h), prediction };
}

const boxesOf = (svg: string) =>
  [...svg.matchAll(/<g data-stage="(\d+)" data-mb="(\d+)" data-pass="(\w+)" data-chunk="(\d+)"><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="(#[0-9a-fA-F]{6})"/g)].map((m) => ({
    stage: Number(m[1]), mb: Number(m[2]), pass: present(m[3], 'data-pass'), chunk: Number(m[4]), x: Number(m[5]), y: Number(m[6]), w: Number(m[7]), h: Number(m[8]), fill: present(m[9], 'fill'),
  }));

function texts(svg: string) {
  return [...svg.matchAll(/<text x="([\d.-]+)" y="([\d.-]+)" ([^>]*)>([^<]*)<\/text>/g)].map((m) => {
    const attrs = present(m[3], 'text attributes');
    return {
      x: Number(m[1]), y: Number(m[2]), size: Number(present(/font-size="(\d+)"/.exec(attrs), `font-size of ${m[0]}`)[1]), anchor: /text-anchor="(\w+)"/.exec(attrs)?.[1] ?? 'start', text: present(m[4], 'text').replace(/&(amp|lt|gt|quot);/g, '&'),
    };
  });
}

describe('timeline SVG', () => {
  const shapes: PipelineShape[] = [
    { stages: 4, microBatches: 8, fwdCycles: 100_000, bwdCycles: 200_000, order: '1f1b', splitBackward: true },
    { stages: 16, microBatches: 48, fwdCycles: 100_000, bwdCycles: 200_000, order: '1f1b', splitBackward: true },
    { stages: 3, microBatches: 5, fwdCycles: 7_000, bwdCycles: 9_000, order: 'gpipe' },
  ];

  for (const shape of shapes) {
    const name = `${shape.order}, ${shape.stages} stages x ${shape.microBatches} micro-batches`;
    it(`${name}: well-formed, one box per (stage, micro-batch, pass)`, () => {
      const { svg } = render(shape);
      expect(() => assertWellFormed(svg)).not.toThrow();
      const boxes = boxesOf(svg);
      expect(boxes).toHaveLength(shape.stages * shape.microBatches * 2);
      const keys = new Set(boxes.map((b) => `${b.stage}:${b.mb}:${b.pass}`));
      expect(keys.size).toBe(boxes.length);
      for (let s = 0; s < shape.stages; s++) for (let mb = 0; mb < shape.microBatches; mb++) for (const pass of ['fwd', 'bwd']) expect(keys.has(`${s}:${mb}:${pass}`)).toBe(true);
    });

    it(`${name}: every label inside the canvas, width at most 1600 px`, () => {
      const { svg, width, height } = render(shape, `a model with a very long name ${'x'.repeat(200)}`);
      expect(width).toBeLessThanOrEqual(1600);
      const labels = texts(svg);
      expect(labels.length).toBeGreaterThan(5);
      for (const t of labels) {
        const w = t.text.length * EM * t.size;
        const left = t.anchor === 'end' ? t.x - w : t.anchor === 'middle' ? t.x - w / 2 : t.x;
        expect(left, t.text).toBeGreaterThanOrEqual(0);
        expect(left + w, t.text).toBeLessThanOrEqual(width);
        expect(t.y - t.size, t.text).toBeGreaterThanOrEqual(0);
        expect(t.y, t.text).toBeLessThanOrEqual(height);
      }
    });
  }

  it('boxes sit where the pipeline puts them: stage s starts its first forward at s x f, the bubble is empty lane', () => {
    const f = 100_000;
    const { svg, prediction } = render(present(shapes[0], 'shape 0'));
    const boxes = boxesOf(svg);
    const first = (s: number) => present(boxes.find((b) => b.stage === s && b.mb === 0 && b.pass === 'fwd'), `first forward of stage ${s}`);
    const pxPerNs = (first(1).x - first(0).x) / f;
    expect(pxPerNs).toBeGreaterThan(0);
    for (let s = 2; s < 4; s++) expect(first(s).x - first(0).x).toBeCloseTo(s * f * pxPerNs, 0);
    // Covered length per stage = its busy time; the rest of the step is gap.
    for (let s = 0; s < 4; s++) {
      const covered = boxes.filter((b) => b.stage === s).reduce((a, b) => a + b.w, 0);
      expect(covered / pxPerNs).toBeCloseTo(present(prediction.stages[s], `stage ${s}`).busyNs, -4);
    }
  });

  it('labels a box with its micro-batch number only where the number fits', () => {
    const { svg } = render(present(shapes[1], 'shape 1'));
    const numbers = texts(svg).filter((t) => /^\d+$/.test(t.text) && t.anchor === 'middle' && t.size <= 12);
    const boxes = boxesOf(svg);
    let inBoxes = 0;
    for (const t of numbers) {
      const box = boxes.find((b) => t.x >= b.x && t.x <= b.x + b.w && t.y >= b.y && t.y <= b.y + b.h && String(b.mb) === t.text);
      if (box === undefined) continue; // an axis tick
      inBoxes++;
      expect(t.text.length * EM * t.size).toBeLessThanOrEqual(box.w);
    }
    // Some fit (the one-digit backward boxes), not all (the two-digit forward boxes of 3 px).
    expect(inBoxes).toBeGreaterThan(0);
    expect(inBoxes).toBeLessThan(boxes.length);
  });
});

describe('timelines of real schedules: recomputation and interleaving', () => {
  const gpt: GptOptions = { ...BARE_GPT, layers: 4, hidden: 64, heads: 4, seq: 32, batch: 2, vocab: 256, ffn: 256 };
  const analysed = analyseModel(writeGptModel(gpt), {}, {}, { vectorOps: true });
  const costPromise = loadProfile('tpu-256').then((p) => createCostModel(p, 'ideal'));
  async function gptSchedule(pp: number, m: number, extra: Partial<PlanOptions>): Promise<StepSchedule> {
    const cost = await costPromise;
    const plan = planOf(analysed, { world: { tp: 1, dp: 1, pp }, batch: { globalBatch: 2 * m, microBatch: 2, microBatches: m }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25, ...extra }, cost);
    return scheduleOf(plan, cost);
  }
  const draw = (schedule: StepSchedule) => timelineSvg({ title: 't', subtitle: 's', schedule, prediction: predictFreeNetwork(schedule) });

  it('full recomputation: one backward box per micro-batch and stage with its recomputed share as one band, a legend entry, every backward labelled', async () => {
    const schedule = await gptSchedule(2, 4, { recompute: 'full' });
    const svg = draw(schedule);
    expect(() => assertWellFormed(svg)).not.toThrow();
    const boxes = boxesOf(svg);
    // 2 stages x 4 micro-batches x (forward, backward) + the optimizer step per stage, however many layers recompute.
    expect(boxes.filter((b) => b.pass !== 'update')).toHaveLength(2 * 4 * 2);
    expect(boxes.filter((b) => b.pass === 'fwd').map((b) => `${b.stage}:${b.mb}`).sort()).toEqual(boxes.filter((b) => b.pass === 'bwd').map((b) => `${b.stage}:${b.mb}`).sort());
    expect([...svg.matchAll(/data-pass="recompute"/g)]).toHaveLength(2 * 4);
    expect(svg).toContain('>recomputed forward</text>');
    const labels = texts(svg);
    for (const b of boxes.filter((x) => x.pass === 'bwd')) {
      expect(labels.some((t) => t.text === String(b.mb) && t.x > b.x && t.x < b.x + b.w && t.y > b.y && t.y < b.y + b.h), `label of stage ${b.stage} micro-batch ${b.mb}`).toBe(true);
    }
    // The band is the recomputed share of the backward: the forward's time (the same layers run again).
    const prediction = predictFreeNetwork(schedule);
    const rows = timelineRows(schedule, prediction).filter((r) => r.kind === 'compute' && r.stage === 0 && r.microBatch === 0);
    const ns = (pass: string) => rows.filter((r) => r.pass === pass).reduce((a, r) => a + r.endNs - r.startNs, 0);
    expect(ns('recompute')).toBeCloseTo(ns('fwd'), 6);
  });

  it('without recomputation no band and no legend entry', async () => {
    const svg = draw(await gptSchedule(2, 4, {}));
    expect(svg).not.toContain('data-pass="recompute"');
    expect(svg).not.toContain('recomputed forward');
  });

  it('interleaved: every box names its model chunk, chunk 1 in a lighter shade, a legend entry per chunk', async () => {
    const svg = draw(await gptSchedule(2, 4, { pipelineSchedule: 'interleaved', virtualStages: 2 }));
    const boxes = boxesOf(svg).filter((b) => b.pass !== 'update');
    expect(boxes).toHaveLength(2 * 4 * 2 * 2);
    for (const chunk of [0, 1]) expect(boxes.filter((b) => b.chunk === chunk)).toHaveLength(2 * 4 * 2);
    const fill = (pass: string, chunk: number) => new Set(boxes.filter((b) => b.pass === pass && b.chunk === chunk).map((b) => b.fill));
    const brightness = (hex: string) => [1, 3, 5].reduce((a, i) => a + Number.parseInt(hex.slice(i, i + 2), 16), 0);
    for (const pass of ['fwd', 'bwd']) {
      expect(fill(pass, 0).size).toBe(1);
      expect(fill(pass, 1).size).toBe(1);
      expect(brightness([...fill(pass, 1)][0] ?? '')).toBeGreaterThan(brightness([...fill(pass, 0)][0] ?? ''));
    }
    expect(svg).toContain('>model chunk 0</text>');
    expect(svg).toContain('>model chunk 1</text>');
  });

  it('the data rows: compute boxes cover each stage\'s busy time, recompute is its own pass, communication has one row per node', async () => {
    const schedule = await gptSchedule(2, 4, { recompute: 'selective' });
    const prediction = predictFreeNetwork(schedule);
    const rows = timelineRows(schedule, prediction);
    for (const [s, st] of prediction.stages.entries()) {
      const busy = rows.filter((r) => r.stage === s && r.kind === 'compute').reduce((a, r) => a + r.endNs - r.startNs, 0);
      expect(busy).toBeCloseTo(st.busyNs, 3);
      expect(rows.filter((r) => r.stage === s && r.kind !== 'compute')).toHaveLength(present(schedule.graphs[s], 'graph').nodes.filter((n) => n.kind !== 'compute').length);
    }
    expect(rows.filter((r) => r.pass === 'recompute' && r.kind === 'compute').length).toBeGreaterThan(0);
    expect(new Set(rows.map((r) => r.rank))).toEqual(new Set([0, 1]));
  });
});

describe('translate --timeline and the prediction', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-timeline-'));
  const base: TranslateOptions = { parallelism: 'DATA', npus: 4, dtype: 'fp32', params: 'all', hardware: 'tpu-256' };
  afterEach(() => vi.restoreAllMocks());

  it('writes the chart, names it and the predicted step on stderr, and records the prediction in the JSON report', async () => {
    let err = '';
    vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
      err += String(s);
      return true;
    });
    const svgPath = join(dir, 'alexnet.svg');
    await runTranslate('alexnet', { ...base, output: join(dir, 'alexnet.txt'), timeline: svgPath, report: join(dir, 'alexnet.json') });
    expect(err).toMatch(/predicted step if the network were free: [\d.]+ ms \(ASTRA-sim adds the network time\)/);
    expect(err).not.toMatch(/bubble/);
    expect(err).toContain(`timeline -> ${svgPath}`);
    const svg = readFileSync(svgPath, 'utf8');
    expect(() => assertWellFormed(svg)).not.toThrow();
    // One micro-batch: its forward, its backward, the optimizer step.
    expect(boxesOf(svg).map((b) => b.pass)).toEqual(['fwd', 'bwd', 'update']);
    const report = JSON.parse(readFileSync(join(dir, 'alexnet.json'), 'utf8'));
    const stepMs = Number(present(/free: ([\d.]+) ms/.exec(err), 'free-network step')[1]);
    expect(report.prediction.network).toBe('free');
    expect(report.prediction.stepNs / 1e6).toBeCloseTo(stepMs, 2);
    expect(report.prediction.stages).toEqual([{ stage: 0, busyNs: report.prediction.stepNs, idleNs: 0 }]);
    expect(report.prediction.bubbleFraction).toBe(0);
  });

  it('refuses a timeline file that is not .svg, before writing anything', async () => {
    const out = join(dir, 'refused.txt');
    await expect(runTranslate('alexnet', { ...base, output: out, timeline: join(dir, 'chart.png') })).rejects.toThrow(/--timeline .*chart\.png: the file must end in \.svg/);
    expect(existsSync(out)).toBe(false);
  });
});
