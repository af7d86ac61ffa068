/** `inspect` and `translate --report`: a built per-layer report (report/layer-report.ts) as CSV, JSON or an aligned text table. */
import { at } from '../errors.js';
import type { LayerReport, ModelReport } from '../report/layer-report.js';
import { fileOrStdout, type ReportFormat, type Writer } from './output.js';
import { sumOverPasses } from '../passes.js';
import { formatDurationNs } from './time.js';

/** Flat columns shared by the CSV and the text table. */
const COLUMNS: [string, (r: LayerReport) => string | number][] = [
  ['name', (r) => r.name],
  ['op', (r) => r.op],
  ['role', (r) => r.role ?? ''],
  ['stage', (r) => r.stage ?? ''],
  ['kind', (r) => r.kind],
  ['op_class', (r) => r.vector?.opClass ?? ''],
  ['elements', (r) => r.vector?.elements ?? ''],
  ['output_shape', (r) => r.outputShape.join('x')],
  ['fwd_m', (r) => r.gemm.fwd.m],
  ['fwd_n', (r) => r.gemm.fwd.n],
  ['fwd_k', (r) => r.gemm.fwd.k],
  ['gemm_count', (r) => r.gemmCount],
  ['macs', (r) => r.macs],
  ['weight_params', (r) => r.weightParams],
  ['bias_params', (r) => r.biasParams],
  ['param_bytes', (r) => r.paramBytes],
  ['in_act_bytes', (r) => r.inputActivationBytes],
  ['out_act_bytes', (r) => r.outputActivationBytes],
  ['fwd_cycles', (r) => r.fwd.cycles],
  ['ig_cycles', (r) => r.ig.cycles],
  ['wg_cycles', (r) => r.wg.cycles],
  ['update_cycles', (r) => r.updateCycles],
  ['stall_cycles', (r) => sumOverPasses(r, (p) => p.stallCycles)],
  ['fwd_ns', (r) => r.fwd.ns],
  ['ig_ns', (r) => r.ig.ns],
  ['wg_ns', (r) => r.wg.ns],
  ['update_ns', (r) => r.updateNs],
  ['rank_fwd_cycles', (r) => r.rank?.fwdCycles ?? ''],
  ['rank_ig_cycles', (r) => r.rank?.igCycles ?? ''],
  ['rank_wg_cycles', (r) => r.rank?.wgCycles ?? ''],
  ['rank_params', (r) => (r.rank === undefined ? '' : r.rank.weightParams + r.rank.biasParams)],
  ['rank_collectives', (r) => (r.rank?.collectives ?? []).map((c) => `${c.type}:${c.bytes}@${c.group}`).join(' ')],
  ['fwd_util_pct', (r) => r.fwd.overallUtilPct.toFixed(2)],
  ['ig_util_pct', (r) => r.ig.overallUtilPct.toFixed(2)],
  ['wg_util_pct', (r) => r.wg.overallUtilPct.toFixed(2)],
  ['role_reason', (r) => r.roleReason ?? ''],
];

/** Where a collective runs, in the table's words. */
const WHERE: Record<string, string> = { beforeFwd: 'before fwd', afterFwd: 'after fwd', beforeBwd: 'before bwd', afterIg: 'after ig' };

/** The table's collectives column: `ALLREDUCE 393,216 B tp after fwd`, several joined by '; '. */
const tableCollectives = (r: LayerReport): string =>
  (r.rank?.collectives ?? []).map((c) => `${c.type} ${c.bytes.toLocaleString('en-US')} B ${c.group} ${WHERE[c.where] ?? c.where}`).join('; ');

/** The vector columns only appear when some layer is a vector layer (GEMM-only reports keep their columns). */
const VECTOR_COLUMNS = new Set(['op_class', 'elements']);
/** The stage column only with pipeline parallelism. */
function columnsOf(report: ModelReport): typeof COLUMNS {
  const hidden = new Set([...(report.layers.some((r) => r.vector) ? [] : VECTOR_COLUMNS), ...(report.stages === undefined ? ['stage'] : [])]);
  return COLUMNS.filter(([h]) => !hidden.has(h));
}

export async function reportToCsv(report: ModelReport): Promise<string> {
  const { stringify } = await import('csv-stringify/sync');
  const columns = columnsOf(report);
  const records = report.layers.map((r) => columns.map(([, f]) => f(r)));
  return stringify(records, { header: true, columns: columns.map(([h]) => h) });
}

export function reportToJson(report: ModelReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}

export function reportToTable(report: ModelReport): string {
  const hidden = ['kind', 'bias_params', 'in_act_bytes', 'out_act_bytes'];
  // Per-rank columns only when a rank differs from the whole layer (tensor parallelism).
  const perRank = report.layers.some((r) => r.rank !== undefined && (r.rank.fwdCycles !== r.fwd.cycles || r.rank.collectives.length > 0));
  if (!perRank) hidden.push('rank_fwd_cycles', 'rank_ig_cycles', 'rank_wg_cycles', 'rank_params', 'rank_collectives', 'role_reason');
  // The two free-text columns last, so the numbers stay aligned on the left; collectives spelt out.
  const columns = columnsOf(report).filter(([h]) => !hidden.includes(h) && h !== 'rank_collectives' && h !== 'role_reason');
  const trailing: typeof COLUMNS = perRank ? [['rank_collectives', tableCollectives], ['role_reason', (r) => r.roleReason ?? '']] : [];
  const shown = [...columns, ...trailing];
  const header = shown.map(([h]) => h);
  const body = report.layers.map((r) => shown.map(([, f]) => String(f(r))));
  // A loop, not Math.max(...column): a 100k-layer column would be 100k arguments.
  const widths = header.map((h) => h.length);
  for (const row of body) row.forEach((cell, i) => {
    if (cell.length > at(widths, i)) widths[i] = cell.length;
  });
  const numeric = shown.map(([h]) => !['name', 'op', 'role', 'op_class', 'output_shape', 'rank_collectives', 'role_reason'].includes(h));
  const line = (cells: string[]): string => cells.map((c, i) => (numeric[i] ? c.padStart(at(widths, i)) : c.padEnd(at(widths, i)))).join('  ').trimEnd();
  const t = report.totals;
  const footer = [
    `${t.layers} layers, ${t.macs.toLocaleString('en-US')} MACs, ${t.params.toLocaleString('en-US')} params (${t.paramBytes.toLocaleString('en-US')} B)`,
    `cycles on ${report.hardware} (${report.costModel}, ${report.bandwidthMode} bandwidth, ${report.clockMHz} MHz): fwd ${t.fwdCycles.toLocaleString('en-US')}, ig ${t.igCycles.toLocaleString('en-US')}, wg ${t.wgCycles.toLocaleString('en-US')}, update ${t.updateCycles.toLocaleString('en-US')}, stalls ${t.stallCycles.toLocaleString('en-US')}`,
    `time at ${report.clockMHz} MHz: fwd ${formatDurationNs(t.fwdNs)}, ig ${formatDurationNs(t.igNs)}, wg ${formatDurationNs(t.wgNs)}, update ${formatDurationNs(t.updateNs)}`,
  ];
  const held = report.rankParams;
  if (held !== undefined && (perRank || held.stages.length > 1)) {
    const lines = held.stages.map((s) => `${held.stages.length > 1 ? `stage ${s.stage} ` : ''}${s.params.toLocaleString('en-US')}`);
    const outside = held.outsideLayers > 0 ? `, the last stage's with the ${held.outsideLayers.toLocaleString('en-US')} outside every layer` : '';
    footer.push(`params one rank holds (TP ${held.tp}${held.stages.length > 1 ? ` x PP ${held.stages.length}` : ''}): ${lines.join(', ')} (its layer shares, a shared tensor once${outside})`);
  }
  for (const s of report.stages ?? []) {
    footer.push(`stage ${s.stage}: ${s.layers} layers ${s.chunks.map((c) => `${c.first} .. ${c.last}`).join(', ')}; fwd + bwd ${s.cycles.toLocaleString('en-US')} cycles (${formatDurationNs(s.ns)}) per micro-batch on one rank`);
  }
  const vectorLayers = report.layers.filter((r) => r.vector).length;
  if (vectorLayers > 0) {
    const all = sumOverPasses({ fwd: t.fwdCycles, ig: t.igCycles, wg: t.wgCycles }, (cycles) => cycles);
    const vectorCycles = t.vectorCycles ?? 0;
    footer.push(`vector ops: ${vectorLayers} layers, ${vectorCycles.toLocaleString('en-US')} cycles (${all > 0 ? ((100 * vectorCycles) / all).toFixed(1) : '0.0'}% of compute; stalls of vector layers are their memory-bound excess)`);
  }
  return [line(header), ...body.map(line), '', ...footer].join('\n') + '\n';
}

/** `inspect` and `translate --report`: the report in `format`, to `output` (or standard output). */
export const layerReportWriter: Writer<ModelReport, { output?: string; format: ReportFormat }> = async (report, o) => {
  const text = o.format === 'json' ? reportToJson(report) : o.format === 'csv' ? await reportToCsv(report) : reportToTable(report);
  return fileOrStdout(o.output, text);
};
