/**
 * Mutation fuzzing of the real example models: bit flips, truncations, splices, byte insertions and
 * overwrites. Whatever the bytes, the pipeline (read -> shapes -> layers -> workload -> writer) either
 * succeeds or fails with a one-line InputError naming the file; the CLI exits 0 or 2 and never
 * leaves a partial output file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import type { CostModel } from '../../src/cost/types.js';
import { InputError } from '../../src/errors.js';
import { analyseModel, createCostModel, workloadOf } from '../../src/pipeline.js';
import { writeAstraText } from '../../src/writers/astra-text.js';
import { ROOT, fixturePath, modelPath } from '../helpers/models.js';
import { type ByteMutation, byteMutationArb, fuzzRuns, fuzzSeed, mutateBytes } from '../helpers/fuzz.js';
import { present } from '../helpers/present.js';

/** Small graph-only models (5-30 KB), so thousands of cases stay fast. */
const SEEDS = ['alexnet', 'lstm_lm', 'resnet50', 'squeezenet1_0', 'vgg16'].map((name) => readFileSync(modelPath(name)));
/** 500 in `npm test`; the bench's fuzz suite runs 5,000 (MODTRANS_FUZZ_RUNS). */
const IN_PROCESS_RUNS = fuzzRuns(500);
const CLI_RUNS = 2;

/**
 * Each run explores new cases: the seed is MODTRANS_FUZZ_SEED when set (to replay a failure),
 * else taken from the clock. A failure names the seed, so it can be replayed exactly.
 */
const FUZZ_SEED = fuzzSeed();


/** Runs `body`; a failure's message starts with how to replay it. */
function replayable<T>(body: () => T): T {
  try {
    return body();
  } catch (e) {
    if (e instanceof Error) e.message = `fuzz seed ${FUZZ_SEED} (replay: MODTRANS_FUZZ_SEED=${FUZZ_SEED} npx vitest run test/onnx/fuzz.test.ts)\n${e.message}`;
    throw e;
  }
}

/** Varint-breaking overwrites: continuation bits, zero lengths, maximal lengths. */
const mutationArb = byteMutationArb([0x00, 0x7f, 0x80, 0xff, 0x08, 0x12, 0x1a]);
const caseArb = fc.record({
  seed: fc.integer({ min: 0, max: SEEDS.length - 1 }),
  mutations: fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
  streaming: fc.boolean(),
});

const mutated = (c: { seed: number; mutations: ByteMutation[] }): Buffer => c.mutations.reduce(mutateBytes, present(SEEDS[c.seed], `seed ${c.seed}`));

/** The built bin (npm run build): the exit code is the process's. */
const BIN = join(ROOT, 'dist', 'cli', 'main.cjs');
const dir = mkdtempSync(join(tmpdir(), 'modtrans-fuzz-'));
const config = { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' } as const;

/** Runs the whole library pipeline; returns 'ok' or the InputError message, rethrows anything else. */
function translate(path: string, streaming: boolean, cost: CostModel): string {
  try {
    const analysed = analyseModel(path, {}, { streaming });
    writeAstraText(workloadOf(analysed, cost, config));
    return 'ok';
  } catch (e) {
    if (e instanceof InputError) return e.message;
    throw e;
  }
}

describe('fuzzed models', () => {
  let cost: CostModel;
  beforeAll(async () => {
    cost = await createCostModel(await loadHardwareProfile('tpu-256'), 'ideal');
  });

  it(`${IN_PROCESS_RUNS} mutated models: success or a one-line InputError naming the file`, () => {
    const path = join(dir, 'mutant.onnx');
    const outcomes = { ok: 0, input: 0 };
    replayable(() => fc.assert(
      fc.property(caseArb, (c) => {
        writeFileSync(path, mutated(c));
        const result = translate(path, c.streaming, cost);
        if (result === 'ok') outcomes.ok++;
        else {
          outcomes.input++;
          expect(result.startsWith(`${path}: `), result).toBe(true);
          expect(result).not.toMatch(/[\n\r]/);
        }
      }),
      { numRuns: IN_PROCESS_RUNS, seed: FUZZ_SEED, endOnFailure: true },
    ));
    // Most mutations break the file; some (a flipped bit in a name) leave it translatable.
    replayable(() => {
      expect(outcomes.input).toBeGreaterThan(IN_PROCESS_RUNS / 2);
      expect(outcomes.ok).toBeGreaterThan(0);
    });
    console.log(`fuzz seed ${FUZZ_SEED}: ${outcomes.ok} translated, ${outcomes.input} refused with an InputError`);
  });

  it('a name with control characters is refused at read time (regression from fuzzing)', () => {
    const path = fixturePath('fuzz/control-char-name.onnx');
    expect(translate(path, false, cost)).toMatch(/control-char-name\.onnx: the name ".*" holds control characters$/);
  });

  it(`the CLI exits 0 or 2 on mutated models, with one line on stderr and no partial output (${CLI_RUNS} runs)`, () => {
    const cases = fc.sample(caseArb, { numRuns: CLI_RUNS, seed: FUZZ_SEED });
    replayable(() => cases.forEach((c, i) => {
      const model = join(dir, `cli-${i}.onnx`);
      const out = join(dir, `cli-${i}.txt`);
      writeFileSync(model, mutated(c));
      const r = spawnSync(process.execPath, [BIN, 'translate', model, '-o', out], { encoding: 'utf8', cwd: dir });
      expect([0, 2], r.stderr).toContain(r.status);
      if (r.status === 2) {
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr).toContain(model);
        expect(existsSync(out)).toBe(false);
      } else expect(readFileSync(out, 'utf8')).toMatch(/^DATA\n\d+\n/);
      rmSync(out, { force: true });
    }));
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
