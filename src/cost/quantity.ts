/**
 * Quantities with units in hardware profiles ("6 MiB", "900 GB/s", "940 MHz"). mathjs is the
 * parser, but it takes ~1 s to load, so the plain `<number> <prefix><unit>` forms that every
 * shipped profile uses are read directly, with mathjs's meaning of each prefix (k = 1e3,
 * Ki = 1024, ...); anything else (expressions, other units) goes to mathjs.
 */
import { internalError } from '../errors.js';

export type QuantityUnit = 'B' | 'B/s' | 'Hz';

const PREFIX: Record<string, number> = {
  '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50,
};

const SIMPLE = /^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?(B\/s|B|Hz)\s*$/;

/** The fast path; undefined when the text is not of the simple form or not in `unit`. */
export function parseSimpleQuantity(text: string, unit: QuantityUnit): number | undefined {
  const m = SIMPLE.exec(text);
  if (m === null || m[3] !== unit) return undefined;
  const prefix = m[2] ?? '';
  // mathjs allows binary prefixes on bytes only, not on Hz.
  if (unit === 'Hz' && prefix.endsWith('i')) return undefined;
  // The pattern admits only PREFIX's keys.
  return Number(m[1]) * (PREFIX[prefix] ?? internalError(`unit prefix '${prefix}'`));
}

let evaluate: ((text: string) => unknown) | undefined;

/** `text` converted to `unit`; throws when it is not a quantity of that dimension. */
export async function parseQuantity(text: string, unit: QuantityUnit): Promise<number> {
  const simple = parseSimpleQuantity(text, unit);
  if (simple !== undefined) return simple;
  evaluate ??= (await import('mathjs')).evaluate as (text: string) => unknown;
  const value = evaluate(text) as { toNumber?: (unit: string) => number };
  if (typeof value?.toNumber !== 'function') throw new Error(`'${text}' is not a quantity`);
  return value.toNumber(unit);
}
