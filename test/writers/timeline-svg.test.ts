/**
 * The step timeline (`translate --timeline`): well-formed SVG, one box per stage, micro-batch and
 * pass, boxes where the free-network prediction puts them, every label inside the canvas (text
 * extents estimated at 0.65 em per character, wider than DejaVu Sans' average).
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { predictFreeNetwork } from '../../src/predict/free-network.js';
import { timelineSvg } from '../../src/writers/timeline-svg.js';
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
  [...svg.matchAll(/<g data-stage="(\d+)" data-mb="(\d+)" data-pass="(\w+)"><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"/g)].map((m) => ({
    stage: Number(m[1]), mb: Number(m[2]), pass: present(m[3], 'data-pass'), x: Number(m[4]), y: Number(m[5]), w: Number(m[6]), h: Number(m[7]),
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
