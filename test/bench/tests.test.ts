/** The bench's test-suite figures: what it reads of the fuzzers' output, and their case budget (no timing assertions). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FUZZ_FILES, printedSeeds } from '../../bench/tests.js';
import { fuzzRuns } from '../helpers/fuzz.js';
import { ROOT } from '../helpers/models.js';

describe('bench tests and fuzz suites', () => {
  it('reads the seed each fuzzer printed, the first of each', () => {
    const out = [
      'fuzz seed 12: 40 translated, 460 refused with an InputError',
      'trace fuzz seed 34: 3 clean, 150 with findings, 47 refused with an InputError',
      'profile fuzz seed 56 (replay: MODTRANS_FUZZ_SEED=56)',
      'profile fuzz seed 56: 100 loaded and costed, 300 refused with an InputError',
    ].join('\n');
    expect(printedSeeds(out)).toEqual({ onnx: 12, trace: 34, profile: 56 });
    // vitest colours its output even into a pipe: a colour code right before a line is not part of a word.
    const esc = String.fromCharCode(27);
    expect(printedSeeds(`${esc}[22m${esc}[39mtrace fuzz seed 7: 1 clean\n${esc}[39mfuzz seed 8: 1 translated`)).toEqual({ trace: 7, onnx: 8 });
  });

  it('runs the three fuzzers, each sized by MODTRANS_FUZZ_RUNS', () => {
    for (const file of FUZZ_FILES) {
      expect(existsSync(join(ROOT, file)), file).toBe(true);
      expect(readFileSync(join(ROOT, file), 'utf8'), file).toMatch(/= fuzzRuns\((\d+)\);/);
    }
    expect(fuzzRuns(500, undefined)).toBe(500);
    expect(fuzzRuns(500, '')).toBe(500);
    expect(fuzzRuns(500, '5000')).toBe(5000);
    expect(() => fuzzRuns(500, '0')).toThrow(/MODTRANS_FUZZ_RUNS=0: expected a positive integer/);
    expect(() => fuzzRuns(500, 'many')).toThrow(/expected a positive integer/);
  });

  it('keeps every fuzzer at 500 cases or fewer in npm test', () => {
    for (const file of FUZZ_FILES) {
      const budget = Number(/= fuzzRuns\((\d+)\);/.exec(readFileSync(join(ROOT, file), 'utf8'))?.[1]);
      expect(budget, file).toBeLessThanOrEqual(500);
    }
  });
});
