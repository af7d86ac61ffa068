/** The text format's time unit: ns (ASTRA-sim 1.0's ticks), us (what Chakra's text converter reads), or raw cycles. */
import { cyclesToWholeNs, cyclesToWholeUs } from '../units.js';

export type TimeUnit = 'ns' | 'us' | 'cycles';

/** Cycles -> the time unit a writer emits, rounded as src/units.ts states. ASTRA-sim's text format counts 1 ns ticks. */
export function cyclesToUnit(cycles: number, clockMHz: number, unit: TimeUnit): number {
  if (unit === 'cycles') return cycles;
  return unit === 'us' ? cyclesToWholeUs(cycles, clockMHz) : cyclesToWholeNs(cycles, clockMHz);
}

const DURATION_UNITS = [
  { name: 's', ns: 1e9 },
  { name: 'ms', ns: 1e6 },
  { name: 'µs', ns: 1e3 },
] as const;

/** Digits grouped by thousands (12,345), by hand: the first toLocaleString call loads ICU (~0.1 s per process). */
const grouped = (digits: string): string => digits.replace(/\B(?=(\d{3})+$)/g, ',');

/**
 * The one formatter of every time modtrans prints for people (summary lines, predictions, charts):
 * `significantDigits` digits in the unit the size calls for (ns, µs, ms, s), never exponent
 * notation: 12,560,000,000 ns is `12.56 s`, not `1.256e+4 ms`; seconds beyond the digits keep them
 * all, grouped (`12,346 s`). Whole-ns values below 1 µs drop trailing zeros (`5 ns`).
 * Columns whose name carries a unit (`total_ns`) stay in that unit; this is for prose.
 */
export function formatDurationNs(ns: number, significantDigits = 4): string {
  if (!Number.isFinite(ns)) return `${ns} ns`;
  if (ns === 0) return '0 ns';
  const sign = ns < 0 ? '-' : '';
  // Rounded first, so that 999.96 µs reads 1.000 ms, not 1000 µs.
  const rounded = Number(Math.abs(ns).toPrecision(significantDigits));
  const unit = DURATION_UNITS.find((u) => rounded >= u.ns);
  const value = unit === undefined ? rounded : rounded / unit.ns;
  const integerDigits = value >= 1 ? String(Math.floor(value)).length : 1;
  const decimals = Math.max(0, significantDigits - integerDigits);
  let text: string;
  if (decimals > 0) {
    text = value.toFixed(decimals);
    if (unit === undefined) text = text.replace(/\.?0+$/, '');
  } else {
    text = grouped(value < 1e21 ? value.toFixed(0) : BigInt(Math.round(value)).toString());
  }
  return `${sign}${text} ${unit?.name ?? 'ns'}`;
}
