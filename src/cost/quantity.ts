/**
 * Quantities with units in hardware profiles ("6 MiB", "900 GB/s", "940 MHz"): a number and a
 * unit, nothing else. mathjs's unit parser (`Unit.parse`, which reads one value and one unit and
 * evaluates no expression) is the reference, but it takes ~1 s to load, so the plain
 * `<number> <prefix><unit>` forms that every shipped profile uses are read directly, with mathjs's
 * meaning of each prefix (k = 1e3, Ki = 1024, ...); other spellings of a unit ("bytes/s", "kB")
 * go to mathjs's unit parser. Expressions ("2 * 900 GB/s", "sum(ones(9,9)) Hz") are refused.
 */
import { internalError } from '../errors.js';

export type QuantityUnit = 'B' | 'B/s' | 'Hz';

/** Longer text is no quantity (and is not handed to a parser). */
export const MAX_QUANTITY_CHARS = 64;

const PREFIX: Record<string, number> = {
  '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50,
};

const SIMPLE = /^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?(B\/s|B|Hz)\s*$/;

/** The fast path; undefined when the text is not of the simple form or not in `unit`. */
export function parseSimpleQuantity(text: string, unit: QuantityUnit): number | undefined {
  if (text.length > MAX_QUANTITY_CHARS) return undefined;
  const m = SIMPLE.exec(text);
  if (m === null || m[3] !== unit) return undefined;
  const prefix = m[2] ?? '';
  // mathjs allows binary prefixes on bytes only, not on Hz.
  if (unit === 'Hz' && prefix.endsWith('i')) return undefined;
  // The pattern admits only PREFIX's keys.
  return Number(m[1]) * (PREFIX[prefix] ?? internalError(`unit prefix '${prefix}'`));
}

interface ParsedUnit {
  toNumber(unit: string): number;
}
let parseUnit: ((text: string) => ParsedUnit) | undefined;

/**
 * `text` (a number and a unit) converted to `unit`; throws when it is longer than
 * MAX_QUANTITY_CHARS, not a number and a unit, or not of that dimension. The value may be any
 * number, Infinity included: the caller checks its range.
 */
export async function parseQuantity(text: string, unit: QuantityUnit): Promise<number> {
  if (text.length > MAX_QUANTITY_CHARS) throw new Error(`longer than ${MAX_QUANTITY_CHARS} characters`);
  const simple = parseSimpleQuantity(text, unit);
  if (simple !== undefined) return simple;
  parseUnit ??= (await import('mathjs')).Unit.parse as (text: string) => ParsedUnit;
  return parseUnit(text).toNumber(unit);
}
