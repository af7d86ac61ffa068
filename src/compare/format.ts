/**
 * The comparison as a text table, CSV (one row per layer and profile, plus TOTAL rows) or JSON.
 * Times are cycles and ns (through each profile's clock), with the column names of `inspect`'s
 * report (`fwd_cycles`, `total_ns`, `util_pct`).
 */
import { at } from '../errors.js';
import { describeSplit, type Comparison, type ProfileFigures } from './compare.js';

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const pct = (x: number): string => x.toFixed(1);

function align(rows: string[][], numeric: boolean[]): string[] {
  const widths = at(rows, 0).map((_, i) => Math.max(...rows.map((r) => at(r, i).length)));
  return rows.map((r) => r.map((c, i) => (numeric[i] ? c.padStart(at(widths, i)) : c.padEnd(at(widths, i)))).join('  ').trimEnd());
}

function totalsTable(c: Comparison): string[] {
  const header = ['profile', 'clock_mhz', 'pes', 'fwd_cycles', 'ig_cycles', 'wg_cycles', 'total_cycles', 'total_ns', 'util_pct', 'stall_share_pct', 'x_fastest'];
  const body = c.profiles.map((p, i) => {
    const t = at(c.totals, i);
    return [p.name, String(p.clockMHz), int(p.processingElements), int(t.fwd.cycles), int(t.ig.cycles), int(t.wg.cycles), int(t.totalCycles), int(t.totalNs), pct(t.utilPct), pct(t.stallSharePct), at(c.slowdown, i).toFixed(2)];
  });
  return align([header, ...body], header.map((_, i) => i > 0));
}

function layersTable(c: Comparison): string[] {
  const header = ['layer', 'op', ...c.profiles.flatMap((p) => [`${p.name}:total_cycles`, 'total_ns', 'util_pct']), 'fastest'];
  const body = c.layers.map((l) => [l.name, l.op, ...l.perProfile.flatMap((f) => [int(f.totalCycles), int(f.totalNs), pct(f.utilPct)]), l.winner]);
  const numeric = header.map((_, i) => i >= 2 && i < header.length - 1);
  return align([header, ...body], numeric);
}

export function comparisonToTable(c: Comparison): string {
  const wins = c.profiles.map((p) => `${p.name} ${c.layers.filter((l) => l.winner === p.name).length}`).join(', ');
  return [
    `${c.model}: ${c.layers.length} layers, training step (fwd + input grad + weight grad) on ${describeSplit(c.split)} of each profile`,
    '',
    ...totalsTable(c),
    '',
    ...layersTable(c),
    '',
    `fastest overall: ${c.winner || '-'}; layers won: ${wins}`,
  ].join('\n') + '\n';
}

const CSV_COLUMNS = [
  'layer', 'op', 'profile', 'clock_mhz', 'fwd_cycles', 'ig_cycles', 'wg_cycles', 'total_cycles', 'fwd_ns', 'ig_ns', 'wg_ns', 'total_ns',
  'util_pct', 'stall_share_pct', 'update_cycles', 'fastest',
];

function csvRow(layer: string, op: string, profile: string, clockMHz: number, f: ProfileFigures, fastest: boolean): (string | number)[] {
  const ns = (x: number): string => x.toFixed(3);
  return [layer, op, profile, clockMHz, f.fwd.cycles, f.ig.cycles, f.wg.cycles, f.totalCycles, ns(f.fwd.ns), ns(f.ig.ns), ns(f.wg.ns), ns(f.totalNs),
    f.utilPct.toFixed(4), f.stallSharePct.toFixed(4), f.updateCycles, fastest ? 1 : 0];
}

export async function comparisonToCsv(c: Comparison): Promise<string> {
  const { stringify } = await import('csv-stringify/sync');
  const records = [
    ...c.layers.flatMap((l) => c.profiles.map((p, i) => csvRow(l.name, l.op, p.name, p.clockMHz, at(l.perProfile, i), l.winner === p.name))),
    ...c.profiles.map((p, i) => csvRow('TOTAL', '', p.name, p.clockMHz, at(c.totals, i), c.winner === p.name)),
  ];
  return stringify(records, { header: true, columns: CSV_COLUMNS });
}

export function comparisonToJson(c: Comparison): string {
  return JSON.stringify(c, null, 2) + '\n';
}
