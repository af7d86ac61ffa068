/**
 * `translate --timeline FILE.json|FILE.csv`: the step's timeline as data, for people who plot it
 * themselves. One row per compute box (consecutive nodes of one micro-batch, chunk and pass on a
 * stage's representative rank, merged only where they touch: no pixel rounding) and one per
 * communication node (collective, send, receive), with the free-network prediction's times.
 */
import { at } from '../errors.js';
import type { StepPrediction } from '../predict/free-network.js';
import type { StepSchedule } from '../schedule/types.js';
import { timelineBoxes } from './timeline-svg.js';

export interface TimelineRow {
  stage: number;
  /** The stage's representative rank (tensor- and data-parallel position 0): T x D x stage. */
  rank: number;
  kind: 'compute' | 'collective' | 'send' | 'recv';
  /** compute: fwd, bwd (input + weight gradient), recompute, update; communication: the unit's phase (fwd, bwd, recompute, step) or '' outside any. */
  pass: string;
  /** '' for the optimizer step's communication outside any micro-batch. */
  microBatch: number | '';
  chunk: number;
  startNs: number;
  endNs: number;
  /** compute: nodes in the box; communication: 1. */
  nodes: number;
  /** communication: the node's name and bytes; compute: ''. */
  name: string;
  bytes: number | '';
}

export function timelineRows(schedule: StepSchedule, prediction: StepPrediction): TimelineRow[] {
  const { tp, dp } = schedule.world;
  const rows: TimelineRow[] = timelineBoxes(schedule, prediction, 0).map((b) => ({
    stage: b.stage, rank: tp * dp * b.stage, kind: 'compute', pass: b.pass, microBatch: b.microBatch, chunk: b.chunk, startNs: b.startNs, endNs: b.endNs, nodes: b.nodes, name: '', bytes: '',
  }));
  schedule.graphs.forEach((graph, s) => {
    const times = at(prediction.stages, s);
    graph.nodes.forEach((n, id) => {
      if (n.kind === 'compute') return;
      rows.push({
        stage: s, rank: tp * dp * s, kind: n.kind, pass: n.unit?.phase ?? '', microBatch: n.unit?.microBatch ?? '', chunk: n.unit?.chunk ?? 0,
        startNs: at(times.startNs, id), endNs: at(times.endNs, id), nodes: 1, name: n.name, bytes: n.bytes,
      });
    });
  });
  return rows.sort((a, b) => a.stage - b.stage || a.startNs - b.startNs || a.endNs - b.endNs);
}

const CSV_COLUMNS: [string, keyof TimelineRow][] = [
  ['stage', 'stage'], ['rank', 'rank'], ['kind', 'kind'], ['pass', 'pass'], ['micro_batch', 'microBatch'], ['chunk', 'chunk'],
  ['start_ns', 'startNs'], ['end_ns', 'endNs'], ['nodes', 'nodes'], ['name', 'name'], ['bytes', 'bytes'],
];

export async function timelineCsv(schedule: StepSchedule, prediction: StepPrediction): Promise<string> {
  const { stringify } = await import('csv-stringify/sync');
  return stringify(timelineRows(schedule, prediction).map((r) => CSV_COLUMNS.map(([, k]) => r[k])), { header: true, columns: CSV_COLUMNS.map(([h]) => h) });
}

export function timelineJson(title: string, schedule: StepSchedule, prediction: StepPrediction): string {
  const rows = timelineRows(schedule, prediction).map((r) => ({ ...r, microBatch: r.microBatch === '' ? null : r.microBatch, bytes: r.bytes === '' ? undefined : r.bytes, name: r.name === '' ? undefined : r.name }));
  return `${JSON.stringify({ title, stepNs: prediction.stepNs, stages: schedule.graphs.length, network: 'free', boxes: rows })}\n`;
}
