/** The fast unit path must mean exactly what mathjs means (mathjs is the reference parser). */
import fc from 'fast-check';
import { unit } from 'mathjs';
import { describe, expect, it } from 'vitest';
import { parseQuantity, parseSimpleQuantity, type QuantityUnit } from '../../src/cost/quantity.js';
import { present } from '../helpers/present.js';

describe('quantities', () => {
  it('agrees with mathjs on every simple form', () => {
    const prefixes = ['', 'k', 'M', 'G', 'T', 'Ki', 'Mi', 'Gi', 'Ti'];
    const units: QuantityUnit[] = ['B', 'B/s', 'Hz'];
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 100000 }), fc.integer({ min: 0, max: 99 }), fc.constantFrom(...prefixes), fc.constantFrom(...units), fc.constantFrom('', ' '),
      (whole, frac, prefix, u, space) => {
        const text = `${whole}.${frac}${space}${prefix}${u}`;
        const fast = parseSimpleQuantity(text, u);
        let reference: number | undefined;
        try {
          reference = unit(text).toNumber(u);
        } catch {
          reference = undefined;
        }
        if (prefix.endsWith('i') && u === 'Hz') expect(fast).toBeUndefined(); // left to mathjs
        else {
          expect(reference).toBeDefined();
          expect(present(fast, `fast parse of ${text}`) / present(reference, `mathjs value of ${text}`)).toBeCloseTo(1, 12);
        }
      },
    ));
  });

  it("reads other unit spellings with mathjs's unit parser and rejects wrong dimensions", async () => {
    expect(await parseQuantity('1.05 GHz', 'Hz')).toBeCloseTo(1.05e9);
    expect(await parseQuantity('3 bytes/s', 'B/s')).toBe(3);
    expect(await parseQuantity('2 kB', 'B')).toBe(2000);
    await expect(parseQuantity('6 MiB', 'Hz')).rejects.toThrow();
  });

  it('evaluates no expression: a number and a unit only, at most 64 characters', async () => {
    // Under mathjs evaluate, the first ran 92 s and ran out of memory (issue 22).
    await expect(parseQuantity('sum(ones(20000,20000)) * 1 Hz', 'Hz')).rejects.toThrow();
    await expect(parseQuantity('2 * 900 GB/s', 'B/s')).rejects.toThrow();
    await expect(parseQuantity('1 Hz + 2 Hz', 'Hz')).rejects.toThrow();
    await expect(parseQuantity(`${'9'.repeat(70)} Hz`, 'Hz')).rejects.toThrow(/longer than 64/);
  });
});
