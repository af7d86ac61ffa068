/**
 * One training step as a Gantt chart (`translate --timeline`), drawn as pipeline papers draw it:
 * a row per pipeline stage (its representative rank), time left to right, a box per micro-batch
 * and pass, the bubble left as empty lane. Under each stage a thin lane marks its communication
 * (collectives, sends, receives), all 0 ns in the free-network prediction. A micro-batch's
 * consecutive nodes of one pass make one box, so the picture stays legible with 16+ stages and
 * dozens of micro-batches; labels appear only where they fit. House style of chart-svg.ts:
 * Okabe-Ito colours, real SVG text, tooltips in <title>.
 */
import { at } from '../errors.js';
import type { ParallelPlan } from '../plan/types.js';
import { worldLayout } from '../plan/world.js';
import type { StepPrediction } from '../predict/free-network.js';
import type { CollectiveNode, ComputeNode, StepSchedule, TransferNode } from '../schedule/types.js';
import { formatNs, linearTicks, middleEllipsis, textWidth } from './chart-svg.js';
import type { Writer } from './output.js';

export interface TimelineInput {
  title: string;
  subtitle?: string;
  schedule: StepSchedule;
  prediction: StepPrediction;
}

/** Pass groups drawn as boxes: the backward's input and weight gradients are one box. */
const PASS_STYLE = {
  fwd: { label: 'forward', colour: '#0072B2', ink: '#ffffff' },
  bwd: { label: 'backward (ig + wg)', colour: '#E69F00', ink: '#000000' },
  recompute: { label: 'recomputed forward', colour: '#56B4E9', ink: '#000000' },
  update: { label: 'optimizer', colour: '#009E73', ink: '#ffffff' },
} as const;
export type PassGroup = keyof typeof PASS_STYLE;

const COMM_STYLE = {
  collective: { label: 'collective', colour: '#555555' },
  send: { label: 'send', colour: '#D55E00' },
  recv: { label: 'receive', colour: '#CC79A7' },
} as const;

export function passGroupOf(pass: ComputeNode['pass'] | string): PassGroup {
  if (pass === 'ig' || pass === 'wg') return 'bwd';
  if (pass === 'update') return 'update';
  if (pass === 'recompute') return 'recompute';
  return 'fwd';
}

/** One compute box: consecutive nodes of one micro-batch, model chunk and pass group on a stage. */
export interface TimelineBox {
  stage: number;
  microBatch: number;
  /** Model chunk of the stage (interleaved schedules; 0 otherwise). */
  chunk: number;
  pass: PassGroup;
  startNs: number;
  endNs: number;
  nodes: number;
  /** Of the box's busy time, the recomputed forwards drawn inside a backward box (drawn boxes only). */
  recomputeNs: number;
  /** Sum of the nodes' own times (the box may hold sub-pixel gaps). */
  busyNs: number;
}

const chunkOf = (n: ComputeNode): number => n.unit?.chunk ?? 0;

/**
 * The boxes of each stage's compute lane. A node joins the previous box when it continues it
 * (same micro-batch, chunk and pass group, next on the compute unit) and starts within
 * `mergeGapNs` of its end. With `recomputeInBackward`, a recomputed forward counts as part of the
 * backward it runs in: full recomputation alternates recompute and backward layer by layer, far
 * below a pixel, and a box per alternation made GPT-3's chart 69,102 boxes.
 */
export function timelineBoxes(schedule: StepSchedule, prediction: StepPrediction, mergeGapNs: number, recomputeInBackward = false): TimelineBox[] {
  const out: TimelineBox[] = [];
  schedule.graphs.forEach((graph, s) => {
    const times = at(prediction.stages, s);
    const ids = graph.nodes.flatMap((n, id) => (n.kind === 'compute' ? [id] : [])).sort((a, b) => at(times.startNs, a) - at(times.startNs, b) || a - b);
    let box: TimelineBox | undefined;
    for (const id of ids) {
      const node = graph.nodes[id] as ComputeNode;
      const own = passGroupOf(node.pass);
      const pass = recomputeInBackward && own === 'recompute' ? 'bwd' : own;
      const chunk = chunkOf(node);
      const [start, end] = [at(times.startNs, id), at(times.endNs, id)];
      const recompute = own === 'recompute' && pass === 'bwd' ? end - start : 0;
      if (box !== undefined && box.pass === pass && box.microBatch === node.microBatch && box.chunk === chunk && start - box.endNs <= mergeGapNs) {
        box.endNs = end;
        box.nodes++;
        box.busyNs += end - start;
        box.recomputeNs += recompute;
      } else {
        box = { stage: s, microBatch: node.microBatch, chunk, pass, startNs: start, endNs: end, nodes: 1, busyNs: end - start, recomputeNs: recompute };
        out.push(box);
      }
    }
  });
  return out;
}

/** Model chunks per stage in the schedule (interleaved: V; else 1). */
function chunksOf(schedule: StepSchedule): number {
  let max = 0;
  for (const g of schedule.graphs) for (const n of g.nodes) if (n.kind === 'compute') max = Math.max(max, chunkOf(n));
  return max + 1;
}

/** `colour` lightened towards white for model chunk `chunk` of `chunks` (chunk 0 full colour), as Megatron-LM's interleaving figures shade chunks. */
function chunkShade(colour: string, chunk: number, chunks: number): string {
  if (chunks <= 1 || chunk === 0) return colour;
  const t = (0.55 * chunk) / (chunks - 1);
  const channel = (i: number): string => {
    const v = Number.parseInt(colour.slice(1 + 2 * i, 3 + 2 * i), 16);
    return Math.round(v + (255 - v) * t).toString(16).padStart(2, '0');
  };
  return `#${channel(0)}${channel(1)}${channel(2)}`;
}

/** Title: model, plan and step time; subtitle: batch, bubble and what the picture assumes. */
export function timelineTitles(model: string, strategy: string | undefined, plan: ParallelPlan, p: StepPrediction): { title: string; subtitle: string } {
  const { world, batch } = plan;
  const layout = `${strategy === undefined ? '' : `${strategy}: `}${worldLayout(world, { pipeline: 'always', ranks: false })}`;
  const bubble = world.pp > 1 ? `, bubble ${(100 * p.bubbleFraction).toFixed(1)}%` : '';
  return {
    title: `${model}: step ${formatNs(p.stepNs)} with a free network — ${layout}`,
    subtitle: `${batch.microBatches} micro-batch${batch.microBatches === 1 ? '' : 'es'} of ${batch.microBatch} per replica${bubble}; one representative rank per stage; collectives and transfers take 0 ns (ASTRA-sim adds the network)`,
  };
}

const FONT = "font-family=\"'DejaVu Sans', Helvetica, Arial, sans-serif\"";
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const f1 = (x: number): string => (Math.round(x * 10) / 10).toString();
const text = (x: number, y: number, s: string, attrs: string): string => `<text x="${f1(x)}" y="${f1(y)}" ${attrs}>${esc(s)}</text>`;
const rect = (x: number, y: number, w: number, h: number, attrs: string, title?: string): string =>
  `<rect x="${f1(x)}" y="${f1(y)}" width="${f1(w)}" height="${f1(h)}" ${attrs}${title === undefined ? '/>' : `><title>${esc(title)}</title></rect>`}`;

/** `s` in lines of at most `max` characters, broken after '; ' or spaces; a longer word is shortened. */
function wrap(s: string, max: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of s.split(/(?<=;) |(?<=,) | /)) {
    if (line !== '' && line.length + 1 + word.length > max) {
      lines.push(line);
      line = '';
    }
    line = line === '' ? middleEllipsis(word, max) : `${line} ${word}`;
  }
  return line === '' ? lines : [...lines, line];
}

const LEFT = 100;
const RIGHT = 28;
const PLOT_TOP = 118;

/** Lane heights: as tall as reads well, shorter for many stages (a 64-stage chart stays ~1,000 px). */
function laneSizes(stages: number): { computeH: number; commH: number; gapH: number } {
  const computeH = Math.max(10, Math.min(34, Math.round(600 / stages) - 14));
  return computeH >= 20 ? { computeH, commH: stages === 1 ? 14 : 8, gapH: 10 } : { computeH, commH: 5, gapH: 4 };
}

export function timelineSvg(input: TimelineInput): string {
  const { schedule, prediction } = input;
  const stages = schedule.graphs.length;
  const stepNs = prediction.stepNs;
  const unitPass = (pass: ComputeNode['pass']): PassGroup => (pass === 'recompute' ? 'bwd' : passGroupOf(pass));
  const perStage = Math.max(1, ...schedule.graphs.map((g) => new Set(g.nodes.flatMap((n) => (n.kind === 'compute' ? [`${n.microBatch}:${chunkOf(n)}:${unitPass(n.pass)}`] : []))).size));
  const chunks = chunksOf(schedule);
  const width = Math.min(1600, Math.max(1000, LEFT + RIGHT + 16 * perStage));
  const plotW = width - LEFT - RIGHT;
  // The axis ends with the step, so the step fills the plot; ticks past it are dropped.
  const axisNs = Math.max(1, stepNs);
  const ticksMs = linearTicks(axisNs / 1e6).filter((t) => t * 1e6 <= axisNs * (1 + 1e-9));
  const sx = (ns: number): number => LEFT + (ns / axisNs) * plotW;
  const { computeH, commH, gapH } = laneSizes(stages);
  const pitch = computeH + 2 + commH + gapH;
  const rowY = (s: number): number => PLOT_TOP + s * pitch;
  const plotH = stages * pitch - gapH;
  const height = PLOT_TOP + plotH + 62;

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${f1(height)}" viewBox="0 0 ${width} ${f1(height)}">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    // Bold glyphs run ~15% wider than textWidth's estimate.
    text(20, 30, middleEllipsis(input.title, Math.floor((width - 40) / (1.15 * textWidth(1, 18)))), `${FONT} font-size="18" font-weight="bold" fill="#111"`),
  ];
  const subtitleLines = wrap(input.subtitle ?? '', Math.floor((width - 40) / textWidth(1, 12))).slice(0, 2);
  for (const [i, line] of subtitleLines.entries()) out.push(text(20, 50 + 15 * i, line, `${FONT} font-size="12" fill="#555"`));
  const present = new Set(schedule.graphs.flatMap((g) => g.nodes.map((n) => (n.kind === 'compute' ? passGroupOf(n.pass) : n.kind))));
  out.push(...legend(width, present, chunks, subtitleLines.length > 1 ? 15 : 0));

  // Grid and axis.
  for (const t of ticksMs) {
    const x = sx(t * 1e6);
    out.push(`<line x1="${f1(x)}" y1="${PLOT_TOP - 4}" x2="${f1(x)}" y2="${f1(PLOT_TOP + plotH + 4)}" stroke="#e3e3e3" stroke-width="1"/>`);
    out.push(text(x, PLOT_TOP + plotH + 20, t.toLocaleString('en-US', { maximumFractionDigits: 6 }), `${FONT} font-size="12" fill="#333" text-anchor="middle"`));
  }
  out.push(text(LEFT + plotW / 2, PLOT_TOP + plotH + 44, 'time in the step (ms), communication free', `${FONT} font-size="13" fill="#222" text-anchor="middle"`));

  const labelFont = Math.min(12, computeH - 4);
  const stageFont = Math.min(12, Math.max(8, computeH - 2));
  for (let s = 0; s < stages; s++) {
    const y = rowY(s);
    out.push(rect(sx(0), y, sx(stepNs) - sx(0), computeH, 'fill="#f4f4f4" stroke="#d8d8d8" stroke-width="0.6"'));
    out.push(rect(sx(0), y + computeH + 2, sx(stepNs) - sx(0), commH, 'fill="#fafafa"'));
    out.push(text(LEFT - 8, y + computeH / 2 + stageFont * 0.36, stages === 1 ? 'compute' : `stage ${s}`, `${FONT} font-size="${stageFont}" fill="#222" text-anchor="end"`));
    if (commH >= 8) out.push(text(LEFT - 8, y + computeH + 2 + commH / 2 + 3, 'comm', `${FONT} font-size="${stages === 1 ? 11 : 8}" fill="#777" text-anchor="end"`));
  }

  // Nodes closer than half a pixel cannot be told apart: they merge.
  const nsPerPx = axisNs / plotW;
  for (const b of timelineBoxes(schedule, prediction, nsPerPx / 2, true)) {
    const style = PASS_STYLE[b.pass];
    const x = sx(b.startNs);
    const w = Math.max(0.8, sx(b.endNs) - x);
    const y = rowY(b.stage);
    const chunk = chunks > 1 ? ` of chunk ${b.chunk}` : '';
    const recompute = b.recomputeNs > 0 ? `, of which ${formatNs(b.recomputeNs)} recomputed forward (interleaved layer by layer, drawn at the start)` : '';
    const what = b.pass === 'update' ? 'optimizer step' : `micro-batch ${b.microBatch}${chunk} ${style.label}`;
    const tip = `stage ${b.stage}: ${what}, ${formatNs(b.startNs)} – ${formatNs(b.endNs)} (${formatNs(b.endNs - b.startNs)}${recompute}, ${b.nodes} node${b.nodes === 1 ? '' : 's'})`;
    out.push(`<g data-stage="${b.stage}" data-mb="${b.microBatch}" data-pass="${b.pass}" data-chunk="${b.chunk}">${rect(x, y, w, computeH, `fill="${chunkShade(style.colour, b.chunk, chunks)}" stroke="#ffffff" stroke-width="${w > 3 ? 0.8 : 0}"`, tip)}`);
    // The recomputed share of a backward, as one band at its start: its nodes alternate with the backward's far below a pixel.
    if (b.recomputeNs > 0 && b.busyNs > 0) out.push(rect(x, y, Math.max(0.4, (w * b.recomputeNs) / b.busyNs), computeH, `fill="${chunkShade(PASS_STYLE.recompute.colour, b.chunk, chunks)}" data-pass="recompute"`, `stage ${b.stage}: micro-batch ${b.microBatch}${chunk} recomputed forward, ${formatNs(b.recomputeNs)} of the backward's ${formatNs(b.busyNs)}`));
    const label = b.pass === 'update' ? 'opt' : String(b.microBatch);
    // The lane's font if the label fits, else down to 8 px; no label below that.
    let size = labelFont;
    while (size > 8 && w < textWidth(label.length, size) + 4) size--;
    if (computeH >= 11 && w >= textWidth(label.length, size) + 4) out.push(text(x + w / 2, y + computeH / 2 + size * 0.36, label, `${FONT} font-size="${size}" fill="${style.ink}" text-anchor="middle"`));
    out.push('</g>');
  }

  // Communication marks; marks of one kind that touch merge into one run (a TP layer issues
  // thousands of collectives, and a 64-stage pipeline of 256 micro-batches 65,000 transfers).
  schedule.graphs.forEach((graph, s) => {
    const times = at(prediction.stages, s);
    const y = rowY(s) + computeH + 2;
    for (const kind of ['collective', 'send', 'recv'] as const) {
      // A receive is drawn where its data arrives; a collective over the time it waited for its group.
      const marks = graph.nodes
        .flatMap((n, id) => (n.kind === kind ? [{ id, x0: sx(at(kind === 'recv' ? times.endNs : times.startNs, id)), x1: sx(at(times.endNs, id)) }] : []))
        .map((m) => ({ ...m, x1: Math.max(m.x0 + 1.2, m.x1) }))
        .sort((a, b) => a.x0 - b.x0);
      const style = COMM_STYLE[kind];
      for (let i = 0; i < marks.length; ) {
        const first = at(marks, i);
        let x1 = first.x1;
        let j = i + 1;
        for (let next = marks[j]; next !== undefined && next.x0 <= x1 + 0.5; next = marks[++j]) x1 = Math.max(x1, next.x1);
        const n = graph.nodes[first.id] as CollectiveNode | TransferNode;
        const what = n.kind === 'collective' ? `${n.type} on the ${n.group} group` : `${n.kind === 'send' ? 'to' : 'from'} ${n.peer.axis === 'pp' ? `stage ${n.peer.stage}` : `CP rank ${n.peer.offset > 0 ? '+' : ''}${n.peer.offset}`}`;
        const tip = j - i > 1
          ? `stage ${s}: ${j - i} ${style.label}s, ${formatNs(at(times.startNs, first.id))} – ${formatNs(at(times.endNs, at(marks, j - 1).id))}`
          : `stage ${s}: ${n.name} (${style.label} ${what}, ${n.bytes} B) at ${formatNs(at(times.endNs, first.id))}`;
        out.push(rect(first.x0, y, x1 - first.x0, commH, `fill="${style.colour}"`, tip));
        i = j;
      }
    }
  });

  // The step's end, labelled inside the canvas.
  const xEnd = sx(stepNs);
  out.push(`<line x1="${f1(xEnd)}" y1="${PLOT_TOP - 8}" x2="${f1(xEnd)}" y2="${f1(PLOT_TOP + plotH + 4)}" stroke="#111" stroke-width="1.2" stroke-dasharray="4 3"/>`);
  const endLabel = `step ${formatNs(stepNs)}`;
  const anchor = xEnd + textWidth(endLabel.length, 11) / 2 > width - 4 ? 'end' : 'middle';
  out.push(text(anchor === 'end' ? Math.min(xEnd, width - 4) : xEnd, PLOT_TOP - 12, endLabel, `${FONT} font-size="11" fill="#111" text-anchor="${anchor}"`));
  out.push(`<line x1="${LEFT}" y1="${f1(PLOT_TOP + plotH + 4)}" x2="${LEFT + plotW}" y2="${f1(PLOT_TOP + plotH + 4)}" stroke="#333" stroke-width="1.2"/>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** The pass colours, the model chunks' shades (interleaved), then the communication marks the step has, in one row under the subtitle (two rows if narrow). */
function legend(width: number, present: ReadonlySet<string>, chunks: number, down: number): string[] {
  const items = [
    ...Object.entries(PASS_STYLE).flatMap(([k, p]) => (present.has(k) ? [{ label: p.label, colour: p.colour, h: 12 }] : [])),
    ...(chunks > 1 ? Array.from({ length: chunks }, (_, c) => ({ label: `model chunk ${c}`, colour: chunkShade(PASS_STYLE.fwd.colour, c, chunks), h: 12 })) : []),
    ...Object.entries(COMM_STYLE).flatMap(([k, c]) => (present.has(k) ? [{ label: c.label, colour: c.colour, h: 6 }] : [])),
  ];
  const out: string[] = [];
  let x = 20;
  let y = 66 + down;
  for (const item of items) {
    const w = 18 + textWidth(item.label.length, 12) + 18;
    if (x + w > width - 10) {
      x = 20;
      y += 18;
    }
    out.push(rect(x, y + (12 - item.h) / 2, 12, item.h, `fill="${item.colour}"`));
    out.push(text(x + 18, y + 10, item.label, `${FONT} font-size="12" fill="#222"`));
    x += w;
  }
  return out;
}

/** `translate --timeline FILE.svg|FILE.json|FILE.csv`: the chart, or its boxes as data (timeline-data.ts). */
export const timelineWriter: Writer<TimelineInput, { output: string }> = async (input, o) => {
  const ext = o.output.toLowerCase().replace(/^.*\./, '');
  if (ext === 'svg') return { files: [{ path: o.output, bytes: timelineSvg(input) }], notes: [] };
  const data = await import('./timeline-data.js');
  const bytes = ext === 'csv' ? await data.timelineCsv(input.schedule, input.prediction) : data.timelineJson(input.title, input.schedule, input.prediction);
  return { files: [{ path: o.output, bytes }], notes: [] };
};
