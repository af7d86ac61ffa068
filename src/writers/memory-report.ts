/** Serializes a per-rank memory report (memory/report.ts) as JSON, CSV or an aligned text table. */
import { at } from '../errors.js';
import type { MemoryReport, RankMemory } from '../memory/report.js';
import { fileOrStdout, type ReportFormat, type Writer } from './output.js';

const COLUMNS: readonly (keyof RankMemory)[] = ['rank', 'stage', 'weightsBytes', 'gradientsBytes', 'optimizerBytes', 'activationsBytes', 'totalBytes'];

export function memoryToJson(report: MemoryReport): string {
  return `${JSON.stringify({ ranks: report.ranks.map((r) => Object.fromEntries(COLUMNS.map((c) => [c, r[c]]))), peakRank: report.peakRank }, null, 2)}\n`;
}

export async function memoryToCsv(report: MemoryReport): Promise<string> {
  const { stringify } = await import('csv-stringify/sync');
  return stringify(report.ranks.map((r) => COLUMNS.map((c) => r[c])), { header: true, columns: [...COLUMNS] });
}

const GIB = 2 ** 30;

/** One line per rank, sizes in GiB (3 decimals); the peak rank marked with '*'. */
export function memoryToTable(report: MemoryReport): string {
  const header = ['rank', 'stage', 'weights GiB', 'grads GiB', 'optimizer GiB', 'activations GiB', 'total GiB'];
  const gib = (b: number): string => (b / GIB).toFixed(3);
  const rows = report.ranks.map((r) => [`${r.rank}${r.rank === report.peakRank ? '*' : ''}`, String(r.stage), gib(r.weightsBytes), gib(r.gradientsBytes), gib(r.optimizerBytes), gib(r.activationsBytes), gib(r.totalBytes)]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => at(row, i).length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padStart(at(widths, i))).join('  ');
  return `${[line(header), ...rows.map(line)].join('\n')}\n* peak rank ${report.peakRank}\n`;
}

/** `modtrans memory`: the report in `format`, to `output` (or standard output). */
export const memoryReportWriter: Writer<MemoryReport, { output?: string; format: ReportFormat }> = async (report, o) => {
  const text = o.format === 'json' ? memoryToJson(report) : o.format === 'csv' ? await memoryToCsv(report) : memoryToTable(report);
  return fileOrStdout(o.output, text);
};
