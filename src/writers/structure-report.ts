/** `inspect --structure`: the model's structure (report/structure-report.ts) as JSON, CSV (one row per block) or a text table. */
import type { BlockReport, StructureReport } from '../report/structure-report.js';
import { fileOrStdout, type ReportFormat, type Writer } from './output.js';

const attentionText = (b: BlockReport): string => b.attentions.map((a) => {
  const groups = a.kvHeads === a.heads ? `${a.heads} heads` : a.kvHeads === 1 ? `${a.heads} heads, 1 KV head (MQA)` : `${a.heads} heads, ${a.kvHeads} KV heads (GQA)`;
  const traits = [...(a.rotary ? ['rotary'] : []), ...(a.mask === 'none' ? [] : [a.mask === 'static' ? 'static mask' : a.mask === 'padding' ? 'padding mask' : 'causal'])];
  return `${a.kind} ${groups} x ${a.headDim}, ${a.projection === 'separate' ? 'Q/K/V' : a.projection === 'kv' ? 'Q + fused KV' : 'fused QKV'}${traits.map((t) => `, ${t}`).join('')}`;
}).join('; ');

const mlpText = (b: BlockReport): string => {
  const m = b.mlp;
  if (m === undefined) return '';
  if (m.kind === 'moe') {
    const shared = m.shared === undefined ? '' : `, ${m.shared.length} shared`;
    return `MoE ${m.experts ?? 0} experts${m.dispatch === 'routed' ? ' (routed by index)' : ''}, top-${m.topK ?? '?'}${shared}, width ${m.width}`;
  }
  return `${m.kind} width ${m.width}`;
};

const COLUMNS: [string, (b: BlockReport) => string | number][] = [
  ['block', (b) => b.index],
  ['stack', (b) => b.stack],
  ['residual', (b) => b.residual],
  ['first_layer', (b) => b.first],
  ['last_layer', (b) => b.last],
  ['layers', (b) => b.layers],
  ['attention', attentionText],
  ['mlp', mlpText],
  ['norms', (b) => b.norms.length],
];

function table(report: StructureReport): string {
  const lines: string[] = [];
  const e = report.embeddings;
  lines.push(`${report.model}: ${report.layers} layers, ${report.blocks.length} blocks${report.transformer ? '' : ' (no transformer pattern)'}`);
  if (e.word !== undefined) lines.push(`word embedding ${e.word}: vocabulary ${e.vocab} x ${e.width}`);
  if (e.position.length > 0) lines.push(`position embeddings: ${e.position.join(', ')}`);
  if (e.tokenType.length > 0) lines.push(`token-type embeddings: ${e.tokenType.join(', ')}`);
  for (const h of report.heads) lines.push(`${h.role} head ${h.layer}${h.tiedTo !== undefined ? ` (tied to ${h.tiedTo})` : ''}`);
  if (report.encoderOutput !== undefined) lines.push(`encoder output: ${report.encoderOutput}`);
  if (report.blocks.length > 0) {
    const rows = [COLUMNS.map(([h]) => h), ...report.blocks.map((b) => COLUMNS.map(([, f]) => String(f(b))))];
    const widths = COLUMNS.map((_, c) => rows.reduce((w, r) => Math.max(w, (r[c] ?? '').length), 0));
    lines.push('');
    for (const r of rows) lines.push(r.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join('  ').trimEnd());
  }
  return `${lines.join('\n')}\n`;
}

export const structureReportWriter: Writer<StructureReport, { output?: string; format: ReportFormat }> = async (report, options) => {
  if (options.format === 'json') return fileOrStdout(options.output, `${JSON.stringify(report, null, 2)}\n`);
  if (options.format === 'csv') {
    const { stringify } = await import('csv-stringify/sync');
    return fileOrStdout(options.output, stringify(report.blocks.map((b) => COLUMNS.map(([, f]) => f(b))), { header: true, columns: COLUMNS.map(([h]) => h) }));
  }
  return fileOrStdout(options.output, table(report));
};
