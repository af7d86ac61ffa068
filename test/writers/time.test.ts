/** The one time formatter (writers/time.ts): the unit by size, the digits asked for, never an exponent. */
import { describe, expect, it } from 'vitest';
import { formatDurationNs } from '../../src/writers/time.js';
import { formatNs } from '../../src/writers/chart-svg.js';

describe('formatDurationNs', () => {
  it('picks ns, µs, ms or s by size, with 4 significant digits by default', () => {
    expect(formatDurationNs(5)).toBe('5 ns');
    expect(formatDurationNs(0.5)).toBe('0.5 ns');
    expect(formatDurationNs(999)).toBe('999 ns');
    expect(formatDurationNs(1234)).toBe('1.234 µs');
    expect(formatDurationNs(66_620_000)).toBe('66.62 ms');
    expect(formatDurationNs(95_791_234)).toBe('95.79 ms');
    expect(formatDurationNs(2_650_000_000)).toBe('2.650 s');
  });

  it('steps of 10 s or more read in seconds, not 1.256e+4 ms (issue 20, item 3)', () => {
    expect(formatDurationNs(12_560_000_000)).toBe('12.56 s');
    expect(formatDurationNs(125_600_000_000)).toBe('125.6 s');
    expect(formatDurationNs(12_345_678_000_000)).toBe('12,350 s');
    expect(formatDurationNs(1e30)).toBe('1,000,000,000,000,000,000,000 s');
    for (const ns of [1e-7, 1e4, 1e10, 1e13, 1e18, 1e25]) expect(formatDurationNs(ns)).not.toMatch(/e[+-]?\d/);
  });

  it('rounds before it picks the unit: 999.96 µs is 1.000 ms', () => {
    expect(formatDurationNs(999_960)).toBe('1.000 ms');
    expect(formatDurationNs(999.96)).toBe('1.000 µs');
    expect(formatDurationNs(999_999_999)).toBe('1.000 s');
  });

  it('takes other digit counts (the charts use 3), zero and negative differences', () => {
    expect(formatDurationNs(12_345_678, 3)).toBe('12.3 ms');
    expect(formatDurationNs(0)).toBe('0 ns');
    expect(formatDurationNs(-46_613)).toBe('-46.61 µs');
    // The charts' formatNs is this formatter at 3 digits: no exponent there either (1,500 s was 1.50e+3 s).
    expect(formatNs(1.5e12)).toBe('1,500 s');
    expect(formatNs(999.6)).toBe('1.00 µs');
  });
});
