/**
 * Mutation fuzzing of hardware profiles (issue 22): the shipped profiles with keys replaced by
 * hostile values (extreme numbers, expressions, odd units, long strings, control characters,
 * wrong types), removed or added. Whatever the profile, loading it either fails with a one-line
 * InputError naming the file, or gives a profile on which every cost is a finite number: never an
 * internal error, never Infinity or NaN, never a hang (the budget is fixed). The seed is printed;
 * MODTRANS_FUZZ_SEED replays a run.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadHardwareProfile, profilesDir } from '../../src/cost/hardware.js';
import type { CostModel, HardwareProfile } from '../../src/cost/types.js';
import { InputError } from '../../src/errors.js';
import type { Gemm } from '../../src/layers/types.js';
import { type AnalysedModel, analyseModel, createCostModel, workloadOf } from '../../src/pipeline.js';
import { writeAstraText } from '../../src/writers/astra-text.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { ROOT, modelPath } from '../helpers/models.js';
import { fuzzRuns, fuzzSeed } from '../helpers/fuzz.js';
import { present } from '../helpers/present.js';

/** 400 in `npm test`; the bench's fuzz suite runs 5,000 (MODTRANS_FUZZ_RUNS). */
const IN_PROCESS_RUNS = fuzzRuns(400);
const CLI_RUNS = 3;
const FUZZ_SEED = fuzzSeed();


async function replayable<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof Error) e.message = `profile fuzz seed ${FUZZ_SEED} (replay: MODTRANS_FUZZ_SEED=${FUZZ_SEED} npx vitest run test/cost/profile-fuzz.test.ts)\n${e.message}`;
    throw e;
  }
}

const SEEDS = readdirSync(profilesDir()).filter((f) => f.endsWith('.json')).sort().map((f) => JSON.parse(readFileSync(join(profilesDir(), f), 'utf8')) as Record<string, unknown>);
const KEYS = [
  'name', 'source', 'arrayRows', 'arrayCols', 'arrays', 'dataflow', 'ifmapSram', 'filterSram', 'ofmapSram', 'bandwidthMode', 'dramBandwidth', 'clock',
  'elementBytes', 'vectorLanes', 'vectorBytesPerCycle', 'vectorOpsPerElement', 'cores', 'l2Sram', 'l2Bandwidth',
];

/** Numbers at and beyond every boundary a profile has. */
const numberArb = fc.oneof(
  fc.constantFrom(0, -1, 1, 2, 3, 0.5, 1e-300, 1e-9, 1e308, -1e308, 2 ** 20, 2 ** 20 + 1, 2 ** 31, 2 ** 53, 2 ** 60, 1e15, 64, 65, 100),
  fc.integer({ min: -5, max: 1 << 21 }),
  fc.double({ noNaN: true }),
);
const unitArb = fc.constantFrom('B', 'KiB', 'MiB', 'GiB', 'PiB', 'kB', 'bytes', 'B/s', 'GB/s', 'TB/s', 'B/ns', 'Hz', 'kHz', 'MHz', 'GHz', 'THz', 'PHz', 'm', 's', '');
/** Strings a user (or an attacker) might write for a quantity or a name. */
const stringArb = fc.oneof(
  fc.tuple(numberArb, fc.constantFrom('', ' '), unitArb).map(([n, sep, u]) => `${n}${sep}${u}`),
  fc.constantFrom(
    'sum(ones(20000,20000)) * 1 Hz', '2 * 900 GB/s', '1 Hz + 1 Hz', 'Infinity Hz', 'NaN B', '1e400 B/s', '-0 MHz', '0x10 B', '1_000 B', 'os', 'ws', 'is', 'user', 'calc', 'USER',
    '\u001b[2J\u001b]0;pwned\u0007', 'a\nb', '',
  ),
  fc.string({ maxLength: 12 }),
  fc.integer({ min: 70, max: 5000 }).map((n) => `${'9'.repeat(n)} Hz`),
);
const opsArb = fc.dictionary(
  fc.constantFrom('gelu', 'softmax', 'norm', 'elementwise', 'bogus'),
  fc.oneof(fc.dictionary(fc.constantFrom('fwd', 'bwd', 'wg', 'x'), fc.oneof(numberArb, stringArb), { maxKeys: 3 }), numberArb),
  { maxKeys: 3 },
);
const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: numberArb },
  { weight: 4, arbitrary: stringArb },
  { weight: 1, arbitrary: opsArb },
  { weight: 1, arbitrary: fc.constantFrom(null, true, [], {}, [1, 2]) },
);
/** Values of the key's own kind (a size for an SRAM, a count for arrayRows) at its edges: these load more often. */
const QUANTITY_UNITS: Record<string, string[]> = {
  ifmapSram: ['B', 'KiB', 'MiB', 'GiB', 'PiB'], filterSram: ['B', 'KiB', 'MiB'], ofmapSram: ['B', 'KiB', 'MiB', 'TiB'],
  dramBandwidth: ['B/s', 'kB/s', 'GB/s', 'TB/s', 'EB/s'], clock: ['Hz', 'kHz', 'MHz', 'GHz', 'PHz'],
  l2Sram: ['B', 'KiB', 'MiB', 'GiB'], l2Bandwidth: ['B/s', 'GB/s', 'TB/s', 'EB/s'],
};
const edgeNumber = fc.oneof(fc.constantFrom(1, 2, 3, 7, 16, 1000, 1024, 1e-6, 1e6, 1e12, 0.001, 2 ** 20), fc.integer({ min: 1, max: 4096 }));
function ownKindArb(key: string): fc.Arbitrary<unknown> {
  const units = QUANTITY_UNITS[key];
  if (units !== undefined) return fc.tuple(edgeNumber, fc.constantFrom(...units)).map(([n, u]) => `${n} ${u}`);
  if (key === 'dataflow') return fc.constantFrom('os', 'ws', 'is');
  if (key === 'bandwidthMode') return fc.constantFrom('user', 'calc');
  if (key === 'vectorOpsPerElement') return opsArb;
  if (key === 'name' || key === 'source') return stringArb;
  return edgeNumber;
}
const ownKindMutationArb = fc.constantFrom(...KEYS).chain((key) => ownKindArb(key).map((value) => ({ kind: 'set' as const, key, value })));

type Mutation = { kind: 'set'; key: string; value: unknown } | { kind: 'delete'; key: string } | { kind: 'add'; key: string; value: unknown };
const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 12, arbitrary: ownKindMutationArb },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...KEYS), value: valueArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...KEYS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('add' as const), key: fc.string({ maxLength: 300 }), value: valueArb }) },
);
const caseArb = fc.record({ seed: fc.integer({ min: 0, max: SEEDS.length - 1 }), mutations: fc.array(mutationArb, { minLength: 1, maxLength: 4 }) });

function mutated(c: { seed: number; mutations: Mutation[] }): Record<string, unknown> {
  const profile = { ...present(SEEDS[c.seed], `seed profile ${c.seed}`) };
  for (const m of c.mutations) {
    if (m.kind === 'delete') delete profile[m.key];
    else profile[m.key] = m.value;
  }
  return profile;
}

/** GEMMs small enough for the USER-mode memory walk on a 1x1 array, large enough to fold. */
const GEMMS: Gemm[] = [{ m: 1, n: 1, k: 1 }, { m: 16, n: 16, k: 16 }, { m: 100, n: 30, k: 7 }];

const dir = mkdtempSync(join(tmpdir(), 'modtrans-profile-fuzz-'));
const config = { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' } as const;

const finite = (x: number, what: string): void => {
  if (!Number.isFinite(x) || x < 0) throw new Error(`${what} is ${x}`);
};

/** Every cost a loaded profile gives: finite and >= 0. */
async function costEverything(profile: HardwareProfile, analysed: AnalysedModel): Promise<void> {
  const models: CostModel[] = [await createCostModel(profile, 'ideal'), await createCostModel(profile, 'scalesim')];
  for (const model of models) {
    for (const g of GEMMS) {
      const c = model.costGemm(g);
      finite(c.cycles, `${model.name} cycles of ${g.m}x${g.n}x${g.k}`);
      finite(c.stallCycles, `${model.name} stalls of ${g.m}x${g.n}x${g.k}`);
      finite(c.overallUtilPct, `${model.name} utilisation of ${g.m}x${g.n}x${g.k}`);
    }
    finite(model.costWeightUpdate(1e6), `${model.name} weight update`);
  }
  // The whole pipeline (vector layers included) on the ideal model, whose cost is closed-form.
  const text = writeAstraText(workloadOf(analysed, present(models[0], 'ideal model'), config));
  if (/Infinity|NaN|undefined/.test(text)) throw new Error('the workload holds Infinity, NaN or undefined');
}

describe('fuzzed hardware profiles', () => {
  let analysed: AnalysedModel;
  beforeAll(() => {
    analysed = analyseModel(modelPath('alexnet'), {}, {}, { vectorOps: true });
  });

  it(`${IN_PROCESS_RUNS} mutated profiles: a one-line InputError naming the file, or finite costs`, async () => {
    console.log(`profile fuzz seed ${FUZZ_SEED} (replay: MODTRANS_FUZZ_SEED=${FUZZ_SEED})`);
    const outcomes = { loaded: 0, refused: 0 };
    await replayable(() => fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const path = join(dir, 'mutant.json');
        writeFileSync(path, JSON.stringify(mutated(c)));
        let profile: HardwareProfile;
        try {
          profile = await loadHardwareProfile(path);
        } catch (e) {
          if (!(e instanceof InputError)) throw e;
          outcomes.refused++;
          expect(e.message.startsWith(`${path}: `), e.message).toBe(true);
          expect(e.message).not.toMatch(/[\n\r]/);
          expect(e.message.includes('\u001b'), e.message).toBe(false);
          expect(e.message.length).toBeLessThan(2100);
          return;
        }
        outcomes.loaded++;
        try {
          await costEverything(profile, analysed);
        } catch (e) {
          // A profile may still be refused when costed (an SRAM too small for the walk): one line.
          if (!(e instanceof InputError)) throw e;
          expect(e.message).not.toMatch(/[\n\r]/);
        }
      }),
      { numRuns: IN_PROCESS_RUNS, seed: FUZZ_SEED, endOnFailure: true },
    ));
    expect(outcomes.refused).toBeGreaterThan(IN_PROCESS_RUNS / 4);
    expect(outcomes.loaded).toBeGreaterThan(0);
    console.log(`profile fuzz seed ${FUZZ_SEED}: ${outcomes.loaded} loaded and costed, ${outcomes.refused} refused with an InputError`);
  });

  it('a profile too slow for the model (1 Hz, 2 B/s: an update of ~7 years) is a one-line InputError when written, not an internal error', async () => {
    // The fuzzer's counterexample (seed 868123738): the text format cannot hold times past 2^53.
    const path = join(dir, 'slow.json');
    writeFileSync(path, JSON.stringify({ ...present(SEEDS[5], 'seed profile 5'), dramBandwidth: '2 B/s', vectorBytesPerCycle: 3835, clock: '1 Hz' }));
    const profile = await loadHardwareProfile(path);
    const model = await createCostModel(profile, 'ideal');
    expect(() => writeAstraText(workloadOf(analysed, model, config))).toThrow(InputError);
    expect(() => writeAstraText(workloadOf(analysed, model, config))).toThrow(/^layer \S+: its \w+ time on \S+ is [\d.]+e\+\d+ ns, more than the text format holds exactly \(2\^53\)/);
  });

  it(`the CLI exits 0 or 2 with mutated profiles, one error line (${CLI_RUNS} runs)`, async () => {
    const cases = fc.sample(caseArb, { numRuns: CLI_RUNS, seed: FUZZ_SEED });
    const calls = cases.map((c, i) => {
      const path = join(dir, `cli-${i}.json`);
      writeFileSync(path, JSON.stringify(mutated(c)));
      return { args: ['inspect', 'alexnet', '--hardware', path, '--cost-model', 'ideal', '--format', 'csv'], cwd: ROOT };
    });
    const results = await runCliBatch(calls);
    await replayable(async () => {
      for (const [i, r] of results.entries()) {
        expect([0, 2], `${calls[i]?.args.join(' ')}: ${r.stderr}`).toContain(r.status);
        if (r.status === 2) expect(r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('modtrans: warning: '))).toHaveLength(1);
        expect(r.stderr).not.toMatch(/internal error/);
        expect(r.stderr.includes('\u001b')).toBe(false);
      }
    });
  });
});
