/**
 * A self-contained SVG figure for `compare --chart`: (a) the training-step time of each profile,
 * stacked by pass, on a linear axis with the value and slowdown printed at each bar; (b) the time
 * of every layer on each profile, on a log axis (profiles differ by orders of magnitude).
 * Colours are Okabe-Ito (colour-blind safe); profiles also differ by marker shape, so the figure
 * survives greyscale printing. Text is real SVG text (no fonts embedded): DejaVu Sans / Helvetica.
 */
import { at, last } from '../errors.js';
import { formatDurationNs } from './time.js';

export interface ChartInput {
  title: string;
  subtitle?: string;
  profiles: string[];
  /** A short second line under each profile's name (array size, clock). */
  profileDetails?: string[];
  /** Per profile, ns of each pass over the whole model. */
  passNs: { fwd: number[]; ig: number[]; wg: number[] };
  /** Per layer, ns on each profile (same order as `profiles`). */
  layers: { name: string; ns: number[] }[];
}

const PASS_STYLE = [
  { key: 'fwd', label: 'forward', colour: '#0072B2' },
  { key: 'ig', label: 'input gradient', colour: '#E69F00' },
  { key: 'wg', label: 'weight gradient', colour: '#009E73' },
] as const;
// Profiles avoid the pass colours, so blue never means both "forward" and a profile.
const PROFILE_COLOURS = ['#000000', '#CC79A7', '#D55E00', '#56B4E9', '#999933', '#882255'];
const profileColour = (p: number): string => at(PROFILE_COLOURS, p % PROFILE_COLOURS.length);
const FONT = "font-family=\"'DejaVu Sans', Helvetica, Arial, sans-serif\"";

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const f1 = (x: number): string => (Math.round(x * 10) / 10).toString();

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${f1(x)}" y="${f1(y)}" ${attrs}>${esc(s)}</text>`;
}

/** `s` cut to at most `max` characters by an ellipsis in the middle (both ends of a layer path say most). */
export function middleEllipsis(s: string, max: number): string {
  if (s.length <= max) return s;
  const keep = max - 1;
  return `${s.slice(0, Math.ceil(keep / 2))}…${s.slice(s.length - Math.floor(keep / 2))}`;
}

/** Width of `chars` characters of DejaVu Sans / Helvetica at `fontSize`, on the safe side. */
export const textWidth = (chars: number, fontSize: number): number => chars * 0.62 * fontSize;

// Layer labels of panel (b): rotated -60°, anchored at their end under the layer's marker.
const LABEL_FONT = 10;
const LABEL_MAX_CHARS = 26;
/** Labels closer than this along the axis overlap (a 10 px line, rotated 60°, needs ~12/sin 60°). */
const LABEL_SPACING = 14;
const COS60 = 0.5;
const SIN60 = Math.sqrt(3) / 2;
/** Profile names: bold 14 px, right-aligned in the 190 px left of panel (a); 13 px in legend slots of 150 px. */
const PROFILE_NAME_CHARS = 18;
const LEGEND_NAME_CHARS = 13;

/** A time in a chart label: the one formatter (time.ts) at 3 significant digits, for space. */
export function formatNs(ns: number): string {
  return formatDurationNs(ns, 3);
}

/** 1-2-5 ticks from 0 covering max. */
export function linearTicks(max: number, target = 6): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  // raw < 10 x mag by the choice of mag, so the last step always fits.
  const step = [1, 2, 5].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let t = 0; t <= max + step * 1e-9; t += step) ticks.push(Math.round(t / step) * step);
  const top = last(ticks, 'ticks');
  if (top < max) ticks.push(top + step);
  return ticks;
}

function marker(shape: number, x: number, y: number, colour: string): string {
  const r = 4;
  const style = `fill="${colour}" stroke="#ffffff" stroke-width="0.8"`;
  switch (shape % 4) {
    case 0:
      return `<circle cx="${f1(x)}" cy="${f1(y)}" r="${r}" ${style}/>`;
    case 1:
      return `<rect x="${f1(x - r)}" y="${f1(y - r)}" width="${2 * r}" height="${2 * r}" ${style}/>`;
    case 2:
      return `<path d="M${f1(x)},${f1(y - r - 1)} L${f1(x + r + 1)},${f1(y + r)} L${f1(x - r - 1)},${f1(y + r)} Z" ${style}/>`;
    default:
      return `<path d="M${f1(x)},${f1(y - r - 1)} L${f1(x + r + 1)},${f1(y)} L${f1(x)},${f1(y + r + 1)} L${f1(x - r - 1)},${f1(y)} Z" ${style}/>`;
  }
}

const LEGEND_PER_ROW = 5;
const legendRows = (n: number): number => Math.max(1, Math.ceil(n / LEGEND_PER_ROW));

/** Consecutive defined points, as separate polylines. */
function runsOf<T>(pts: readonly (T | undefined)[]): T[][] {
  let run: T[] = [];
  const runs: T[][] = [run];
  for (const p of pts) {
    if (p === undefined) {
      run = [];
      runs.push(run);
    } else run.push(p);
  }
  return runs.filter((r) => r.length > 0);
}

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Panel (a): horizontal stacked bars, one per profile. */
function totalsPanel(c: ChartInput, box: Box): string[] {
  const totals = c.profiles.map((_, i) => PASS_STYLE.reduce((a, p) => a + at(c.passNs[p.key], i), 0));
  const positive = totals.filter((t) => t > 0);
  const bestNs = positive.length > 0 ? Math.min(...positive) : 0;
  const unit = Math.max(...totals) >= 1e6 ? { div: 1e6, name: 'ms' } : { div: 1e3, name: 'µs' };
  const ticks = linearTicks(Math.max(...totals) / unit.div);
  const xMax = last(ticks, 'ticks');
  const sx = (v: number): number => box.x + (v / unit.div / xMax) * box.w;
  const band = box.h / c.profiles.length;
  const barH = Math.min(34, band * 0.62);
  const out: string[] = [text(30, box.y - 22, '(a) Training step per profile, stacked by pass', `${FONT} font-size="16" font-weight="bold" fill="#222"`)];
  for (const t of ticks) {
    const x = sx(t * unit.div);
    out.push(`<line x1="${f1(x)}" y1="${box.y}" x2="${f1(x)}" y2="${box.y + box.h}" stroke="#e3e3e3" stroke-width="1"/>`);
    out.push(text(x, box.y + box.h + 20, t.toLocaleString('en-US'), `${FONT} font-size="13" fill="#333" text-anchor="middle"`));
  }
  out.push(text(box.x + box.w / 2, box.y + box.h + 44, `time per training step (${unit.name})`, `${FONT} font-size="14" fill="#222" text-anchor="middle"`));
  c.profiles.forEach((name, i) => {
    const y = box.y + band * i + (band - barH) / 2;
    const detail = c.profileDetails?.[i];
    out.push(text(box.x - 10, y + barH / 2 + (detail ? -1 : 5), middleEllipsis(name, PROFILE_NAME_CHARS), `${FONT} font-size="14" font-weight="bold" fill="#222" text-anchor="end"`));
    if (detail) out.push(text(box.x - 10, y + barH / 2 + 14, detail, `${FONT} font-size="11" fill="#555" text-anchor="end"`));
    let acc = 0;
    for (const p of PASS_STYLE) {
      const v = at(c.passNs[p.key], i);
      out.push(`<rect x="${f1(sx(acc))}" y="${f1(y)}" width="${f1(Math.max(0, sx(acc + v) - sx(acc)))}" height="${f1(barH)}" fill="${p.colour}"><title>${esc(`${name} ${p.label}: ${formatNs(v)}`)}</title></rect>`);
      acc += v;
    }
    // A zero total (nothing costed) is not "0.00× slower": it ties for fastest.
    const total = at(totals, i);
    const ratio = bestNs > 0 ? total / bestNs : 1;
    const label = `${formatNs(total)}  (${ratio <= 1 ? 'fastest' : `${ratio.toFixed(ratio >= 10 ? 0 : 2)}× slower`})`;
    out.push(text(sx(acc) + 8, y + barH / 2 + 5, label, `${FONT} font-size="13" fill="#222"`));
  });
  out.push(`<line x1="${box.x}" y1="${box.y}" x2="${box.x}" y2="${box.y + box.h}" stroke="#333" stroke-width="1.2"/>`);
  out.push(`<line x1="${box.x}" y1="${box.y + box.h}" x2="${box.x + box.w}" y2="${box.y + box.h}" stroke="#333" stroke-width="1.2"/>`);
  // Legend of the passes, right-aligned above the panel.
  let lx = box.x + box.w - 420;
  for (const p of PASS_STYLE) {
    out.push(`<rect x="${lx}" y="${box.y - 36}" width="14" height="14" fill="${p.colour}"/>`);
    out.push(text(lx + 20, box.y - 24, p.label, `${FONT} font-size="13" fill="#222"`));
    lx += 140;
  }
  return out;
}

/** Panel (b): per-layer time on a log axis, one marker series per profile. */
function layersPanel(c: ChartInput, box: Box): string[] {
  const values = c.layers.flatMap((l) => l.ns).filter((v) => v > 0);
  // Decades of µs spanned; with no positive value (no layers, or only embeddings) an empty 1-10 µs
  // axis, since Math.min() of nothing is Infinity and the grid loop below would never end.
  const lo = values.length === 0 ? 0 : Math.floor(Math.log10(Math.min(...values) / 1000));
  const hi = values.length === 0 ? 1 : Math.ceil(Math.log10(Math.max(...values) / 1000));
  const top = hi > lo ? hi : lo + 1;
  const sy = (ns: number): number => box.y + box.h - ((Math.log10(Math.max(ns, 1e-9) / 1000) - lo) / (top - lo)) * box.h;
  const n = c.layers.length;
  const step = box.w / Math.max(1, n);
  const sx = (i: number): number => box.x + step * (i + 0.5);
  const out: string[] = [text(30, box.y - 22 - 20 * (legendRows(c.profiles.length) - 1), '(b) Time per layer (training step, log scale)', `${FONT} font-size="16" font-weight="bold" fill="#222"`)];
  for (let e = lo; e <= top; e++) {
    for (let m = 1; m < 10; m++) {
      const v = 10 ** e * m * 1000;
      if (e === top && m > 1) break;
      const y = sy(v);
      out.push(`<line x1="${box.x}" y1="${f1(y)}" x2="${box.x + box.w}" y2="${f1(y)}" stroke="${m === 1 ? '#d0d0d0' : '#f0f0f0'}" stroke-width="1"/>`);
      if (m === 1) out.push(text(box.x - 8, y + 4, (10 ** e).toLocaleString('en-US', { maximumFractionDigits: 3 }), `${FONT} font-size="13" fill="#333" text-anchor="end"`));
    }
  }
  out.push(text(box.x - 62, box.y + box.h / 2, 'time per layer (µs)', `${FONT} font-size="14" fill="#222" text-anchor="middle" transform="rotate(-90 ${f1(box.x - 62)} ${f1(box.y + box.h / 2)})"`));
  // As many labels as fit without overlapping, each short enough to stay inside the canvas on the left.
  const every = Math.max(1, Math.ceil(LABEL_SPACING / step));
  c.layers.forEach((l, i) => {
    if (i % every !== 0) return;
    const x = sx(i);
    const fitChars = Math.floor((x - 4) / COS60 / textWidth(1, LABEL_FONT));
    const label = middleEllipsis(l.name, Math.max(3, Math.min(LABEL_MAX_CHARS, fitChars)));
    out.push(`<g><title>${esc(l.name)}</title>${text(x, box.y + box.h + 10, label, `${FONT} font-size="${LABEL_FONT}" fill="#333" text-anchor="end" transform="rotate(-60 ${f1(x)} ${f1(box.y + box.h + 10)})"`)}</g>`);
  });
  c.profiles.forEach((name, p) => {
    const colour = profileColour(p);
    // Layers without compute (embeddings) have no point on a log axis: the line breaks there.
    const pts = c.layers.map((l, i) => {
      const ns = at(l.ns, p);
      return ns > 0 ? ([sx(i), sy(ns)] as const) : undefined;
    });
    for (const run of runsOf(pts)) {
      out.push(`<polyline points="${run.map(([x, y]) => `${f1(x)},${f1(y)}`).join(' ')}" fill="none" stroke="${colour}" stroke-width="1.4" stroke-opacity="0.75"/>`);
    }
    pts.forEach((pt, i) => {
      const layer = at(c.layers, i);
      if (pt) out.push(`<g><title>${esc(`${layer.name} on ${name}: ${formatNs(at(layer.ns, p))}`)}</title>${marker(p, pt[0], pt[1], colour)}</g>`);
    });
  });
  out.push(`<line x1="${box.x}" y1="${box.y}" x2="${box.x}" y2="${box.y + box.h}" stroke="#333" stroke-width="1.2"/>`);
  out.push(`<line x1="${box.x}" y1="${box.y + box.h}" x2="${box.x + box.w}" y2="${box.y + box.h}" stroke="#333" stroke-width="1.2"/>`);
  // Legend of the profiles above the panel, right-aligned, in rows of up to LEGEND_PER_ROW.
  const rows = legendRows(c.profiles.length);
  c.profiles.forEach((name, p) => {
    const colour = profileColour(p);
    const row = Math.floor(p / LEGEND_PER_ROW);
    const inRow = Math.min(LEGEND_PER_ROW, c.profiles.length - row * LEGEND_PER_ROW);
    const lx = box.x + box.w - 150 * inRow + 150 * (p % LEGEND_PER_ROW);
    const ly = box.y - 29 - 20 * (rows - 1 - row);
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 26}" y2="${ly}" stroke="${colour}" stroke-width="1.6"/>`);
    out.push(marker(p, lx + 13, ly, colour));
    out.push(text(lx + 34, ly + 5, middleEllipsis(name, LEGEND_NAME_CHARS), `${FONT} font-size="13" fill="#222"`));
  });
  return out;
}

export function comparisonChartSvg(c: ChartInput): string {
  // Wider for more layers, up to a screen's width; beyond that labels are thinned out.
  const width = Math.min(1600, Math.max(1100, 230 + 18 * c.layers.length));
  const totalsH = Math.max(110, 52 * c.profiles.length);
  const longest = Math.min(LABEL_MAX_CHARS, Math.max(0, ...c.layers.map((l) => l.name.length)));
  const labelsH = 20 + textWidth(longest, LABEL_FONT) * SIN60;
  const layersTop = 90 + totalsH + 110 + 20 * (legendRows(c.profiles.length) - 1);
  const layersH = 330;
  const height = layersTop + layersH + labelsH + 20;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${f1(height)}" viewBox="0 0 ${width} ${f1(height)}">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    text(30, 32, c.title, `${FONT} font-size="20" font-weight="bold" fill="#111"`),
    ...(c.subtitle ? [text(30, 54, c.subtitle, `${FONT} font-size="13" fill="#555"`)] : []),
    ...totalsPanel(c, { x: 200, y: 100, w: width - 500, h: totalsH }),
    ...layersPanel(c, { x: 100, y: layersTop, w: width - 130, h: layersH }),
    '</svg>',
  ];
  return parts.join('\n') + '\n';
}
