/**
 * What the fuzzers share: the seed (MODTRANS_FUZZ_SEED to replay a failure, else the clock, so
 * each run explores new cases) and byte-level mutations of a file, their positions fractions of
 * its length so one mutation fits any input.
 */
import fc from 'fast-check';

export function fuzzSeed(fromEnv: string | undefined = process.env['MODTRANS_FUZZ_SEED']): number {
  if (fromEnv === undefined || fromEnv === '') return Date.now() % 2 ** 31;
  if (!/^\d+$/.test(fromEnv)) throw new Error(`MODTRANS_FUZZ_SEED=${fromEnv}: expected a non-negative integer`);
  return Number(fromEnv);
}

/**
 * Cases a fuzz property runs: MODTRANS_FUZZ_RUNS when set (`npm run bench -- fuzz` runs each
 * fuzzer at 5,000), else `testBudget`, the suite's budget in `npm test` (at most 500, to keep the
 * suite quick).
 */
export function fuzzRuns(testBudget: number, fromEnv: string | undefined = process.env['MODTRANS_FUZZ_RUNS']): number {
  if (fromEnv === undefined || fromEnv === '') return testBudget;
  if (!/^[1-9]\d*$/.test(fromEnv)) throw new Error(`MODTRANS_FUZZ_RUNS=${fromEnv}: expected a positive integer`);
  return Number(fromEnv);
}

export type ByteMutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'splice'; from: number; length: number; to: number }
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'overwrite'; at: number; byte: number };

/** A fraction of the current length. */
export const fraction = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

/** Byte mutations; `overwriteBytes` are the values that break the format's framing (varints, JSON). */
export function byteMutationArb(overwriteBytes: readonly number[]): fc.Arbitrary<ByteMutation> {
  return fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fraction, bit: fc.integer({ min: 0, max: 7 }) }),
    fc.record({ kind: fc.constant('truncate' as const), at: fraction }),
    fc.record({ kind: fc.constant('splice' as const), from: fraction, length: fc.integer({ min: 1, max: 256 }), to: fraction }),
    fc.record({ kind: fc.constant('insert' as const), at: fraction, bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 12 }) }),
    fc.record({ kind: fc.constant('overwrite' as const), at: fraction, byte: fc.constantFrom(...overwriteBytes) }),
  );
}

export function mutateBytes(input: Buffer, m: ByteMutation): Buffer {
  const pos = (f: number): number => Math.floor(f * input.length);
  switch (m.kind) {
    case 'flip': {
      const out = Buffer.from(input);
      const i = pos(m.at);
      const byte = out[i];
      if (byte !== undefined) out[i] = byte ^ (1 << m.bit);
      return out;
    }
    case 'truncate':
      return input.subarray(0, pos(m.at));
    case 'splice': {
      const piece = input.subarray(pos(m.from), pos(m.from) + m.length);
      return Buffer.concat([input.subarray(0, pos(m.to)), piece, input.subarray(pos(m.to))]);
    }
    case 'insert':
      return Buffer.concat([input.subarray(0, pos(m.at)), Buffer.from(m.bytes), input.subarray(pos(m.at))]);
    case 'overwrite': {
      const out = Buffer.from(input);
      if (out.length > 0) out[pos(m.at)] = m.byte;
      return out;
    }
  }
}
