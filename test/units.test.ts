/** src/units.ts: cycles through the clock, 1 cycle = 1000 / clockMHz ns, with the rounding it states. */
import { describe, expect, it } from 'vitest';
import { computeDurationNs, cyclesToNs, cyclesToWholeNs, cyclesToWholeUs, nsToWholeUs } from '../src/units.js';

describe('time units', () => {
  it('converts exactly, then rounds to the nearest ns or µs (halves up), compute events at least 1 ns', () => {
    // 1,500 cycles at 940 MHz = 1,595.745 ns = 1.596 µs.
    expect(cyclesToNs(1500, 940)).toBeCloseTo(1595.7446808, 6);
    expect(cyclesToWholeNs(1500, 940)).toBe(1596);
    expect(cyclesToWholeUs(1500, 940)).toBe(2);
    // 1 cycle at 2 GHz = 0.5 ns: rounds up to 1; 1 cycle at 4 GHz = 0.25 ns: 0, but an event lasts 1 ns.
    expect(cyclesToWholeNs(1, 2000)).toBe(1);
    expect(cyclesToWholeNs(1, 4000)).toBe(0);
    expect(computeDurationNs(1, 4000)).toBe(1);
    expect(nsToWholeUs(1499)).toBe(1);
    expect(nsToWholeUs(1500)).toBe(2);
  });
});
