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

/** Ranks as ranges: 0-63, 128-191; a list too long for a column as first..last with the count. */
function rankRanges(ranks: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < ranks.length; ) {
    let j = i;
    while (j + 1 < ranks.length && at(ranks, j + 1) === at(ranks, j) + 1) j++;
    parts.push(i === j ? String(at(ranks, i)) : `${at(ranks, i)}-${at(ranks, j)}`);
    i = j + 1;
  }
  const joined = parts.join(',');
  return joined.length <= 32 ? joined : `${at(ranks, 0)}..${at(ranks, ranks.length - 1)} (${ranks.length} of them)`;
}

/**
 * The table: sizes in GiB (3 decimals), the peak rank marked with '*'. By default ranks of one
 * stage holding the same bytes share a row (a 1,024-rank plan has a row or a few per stage);
 * `perRank` gives a row per rank.
 */
export function memoryToTable(report: MemoryReport, perRank = false): string {
  const gib = (b: number): string => (b / GIB).toFixed(3);
  const sizes = (r: RankMemory): string[] => [gib(r.weightsBytes), gib(r.gradientsBytes), gib(r.optimizerBytes), gib(r.activationsBytes), gib(r.totalBytes)];
  const sizeHeader = ['weights GiB', 'grads GiB', 'optimizer GiB', 'activations GiB', 'total GiB'];
  const peak = at(report.ranks, report.peakRank);
  let header: string[];
  let rows: string[][];
  if (perRank) {
    header = ['rank', 'stage', ...sizeHeader];
    rows = report.ranks.map((r) => [`${r.rank}${r.rank === report.peakRank ? '*' : ''}`, String(r.stage), ...sizes(r)]);
  } else {
    const groups = new Map<string, { first: RankMemory; ranks: number[] }>();
    for (const r of report.ranks) {
      const key = [r.stage, r.weightsBytes, r.gradientsBytes, r.optimizerBytes, r.activationsBytes].join(':');
      const g = groups.get(key);
      if (g === undefined) groups.set(key, { first: r, ranks: [r.rank] });
      else g.ranks.push(r.rank);
    }
    header = ['ranks', 'count', 'stage', ...sizeHeader];
    rows = [...groups.values()].map((g) => [`${rankRanges(g.ranks)}${g.ranks.includes(report.peakRank) ? '*' : ''}`, String(g.ranks.length), String(g.first.stage), ...sizes(g.first)]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => at(row, i).length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padStart(at(widths, i))).join('  ');
  const grouped = !perRank && rows.length < report.ranks.length ? `; ${report.ranks.length} ranks in ${rows.length} row${rows.length === 1 ? '' : 's'} of identical ranks (--per-rank lists each)` : '';
  return `${[line(header), ...rows.map(line)].join('\n')}\n* peak rank ${report.peakRank} (stage ${peak.stage}): ${gib(peak.totalBytes)} GiB${grouped}\n`;
}

/** `modtrans memory`: the report in `format`, to `output` (or standard output). */
export const memoryReportWriter: Writer<MemoryReport, { output?: string; format: ReportFormat; perRank?: boolean }> = async (report, o) => {
  const text = o.format === 'json' ? memoryToJson(report) : o.format === 'csv' ? await memoryToCsv(report) : memoryToTable(report, o.perRank ?? false);
  return fileOrStdout(o.output, text);
};
