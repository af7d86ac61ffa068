/**
 * The comparison chart's labels stay readable and inside the canvas, however many layers and
 * however long their names: long names are shortened in the middle, labels are thinned to what
 * fits along the axis. Text extents are estimated at 0.65 em per character (wider than DejaVu
 * Sans' average), so "inside" holds for the real font too.
 */
import { describe, expect, it } from 'vitest';
import { type ChartInput, comparisonChartSvg, middleEllipsis } from '../../src/writers/chart-svg.js';
import { present } from '../helpers/present.js';

const EM = 0.65;

function chart(layerCount: number, name: (i: number) => string, profiles = ['google', 'eyeriss']): { svg: string; width: number; height: number } {
  const input: ChartInput = {
    title: 'test',
    profiles,
    passNs: { fwd: profiles.map(() => 1e6), ig: profiles.map(() => 1e6), wg: profiles.map(() => 1e6) },
    layers: Array.from({ length: layerCount }, (_, i) => ({ name: name(i), ns: profiles.map((_, p) => 1000 * (i + 1) * (p + 1)) })),
  };
  const svg = comparisonChartSvg(input);
  const [, w, h] = present(/<svg[^>]* width="([\d.]+)" height="([\d.]+)"/.exec(svg), 'the svg size');
  return { svg, width: Number(w), height: Number(h) };
}

/** Rotated layer labels: anchor point, font size, text. */
function layerLabels(svg: string): { x: number; y: number; size: number; text: string }[] {
  return [...svg.matchAll(/<text x="([\d.]+)" y="([\d.]+)" [^>]*font-size="(\d+)"[^>]*transform="rotate\(-60[^>]*>([^<]*)<\/text>/g)].map((m) => ({
    x: Number(m[1]), y: Number(m[2]), size: Number(m[3]), text: (m[4] ?? '').replace(/&amp;/g, '&'),
  }));
}

describe('chart labels', () => {
  it('shortens with an ellipsis in the middle', () => {
    expect(middleEllipsis('encoder.layers.10.self_attn.out_proj', 20)).toBe('encoder.la….out_proj');
    expect(middleEllipsis('encoder.layers.10.self_attn.out_proj', 20)).toHaveLength(20);
    expect(middleEllipsis('fc', 20)).toBe('fc');
  });

  it('keeps every layer label inside the canvas and thins them to what fits', () => {
    for (const [count, name] of [
      [74, (i: number) => `encoder.layers.${i}.self_attention_block.output_projection.MatMul_${i}`],
      [400, (i: number) => `model/transformer/h.${i}/attention/very_long_module_path/c_proj/MatMul`],
      [3, (i: number) => `x${i}`],
    ] as const) {
      const { svg, width, height } = chart(count, name);
      const labels = layerLabels(svg);
      expect(labels.length, `${count} layers`).toBeGreaterThan(0);
      expect(labels.length).toBeLessThanOrEqual(count);
      // Neighbouring labels at least 12 px apart across their baselines (10 px text): x-step x sin 60°.
      const xs = labels.map((l) => l.x);
      for (let i = 1; i < xs.length; i++) expect((present(xs[i], `label ${i}`) - present(xs[i - 1], `label ${i - 1}`)) * Math.sin(Math.PI / 3)).toBeGreaterThanOrEqual(12);
      for (const l of labels) {
        const w = l.text.length * EM * l.size;
        // Anchored at its end and rotated -60°: the text runs left by w cos 60° and down by w sin 60°.
        expect(l.x - w * 0.5, l.text).toBeGreaterThanOrEqual(0);
        expect(l.y + w * Math.sin(Math.PI / 3), l.text).toBeLessThanOrEqual(height);
        expect(l.x).toBeLessThanOrEqual(width);
        expect(l.text.length).toBeLessThanOrEqual(26);
      }
      if (count === 74) expect(labels.some((l) => l.text.includes('…'))).toBe(true);
    }
  });

  it('shortens long profile names so they stay left of the bars and in their legend slot', () => {
    const { svg } = chart(5, (i) => `l${i}`, ['examples/scalesim/some-very-long-profile-file-name', 'google']);
    expect(svg).not.toContain('>examples/scalesim/some-very-long-profile-file-name<');
    expect(svg).toContain('>examples/…ile-name<'); // panel (a), 18 characters
    expect(svg).toContain('>exampl…e-name<'); // legend, 13
  });
});
