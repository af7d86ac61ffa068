import { describe, expect, it } from 'vitest';
import { withThousands } from '../src/digits.js';

// Ground truth: ECMA-402's en-US grouping, as toLocaleString('en-US') gives it.
describe('withThousands', () => {
  it('groups integers as en-US does', () => {
    for (const n of [0, 7, 999, 1000, 12345, 999999, 1000000, -1, -1000, -1234567, 510634, 25530472, 2 ** 53 - 1, -(2 ** 53 - 1)]) {
      expect(withThousands(n)).toBe(n.toLocaleString('en-US'));
    }
    expect(withThousands(1234567)).toBe('1,234,567');
    expect(withThousands(-1000)).toBe('-1,000');
  });

  it('leaves fractions and numbers beyond 2^53 to toLocaleString', () => {
    for (const n of [1234.5678, 0.5, 2 ** 60, 1e21, Number.POSITIVE_INFINITY]) expect(withThousands(n)).toBe(n.toLocaleString('en-US'));
  });
});
