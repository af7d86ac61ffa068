/**
 * Mutation fuzzing of real trace sets (issue 22): sets written by `translate --format chakra`
 * (data parallel, and tensor x pipeline parallel with sends and receives), mutated byte by byte
 * (rank files, the comm-groups file, the manifest) and as files (a rank file deleted, copied under
 * another or an absurd rank number, replaced by a symlink to /dev/zero or to a folder), then fed to
 * `check-trace`. Whatever the set, the check ends (a hang fails on the test's timeout) with
 * findings or a one-line InputError, never a crash. Fixed budget, printed seed.
 */
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCheckTrace } from '../../src/cli/check-trace-command.js';
import { InputError } from '../../src/errors.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { type ByteMutation, byteMutationArb, fraction, fuzzRuns, fuzzSeed, mutateBytes } from '../helpers/fuzz.js';

/** 200 in `npm test`; the bench's fuzz suite runs 5,000 (MODTRANS_FUZZ_RUNS). */
const RUNS = fuzzRuns(200);
const FUZZ_SEED = fuzzSeed();


const root = mkdtempSync(join(tmpdir(), 'modtrans-trace-fuzz-'));
/** Seed sets: folder -> prefix base. */
const SEEDS = [
  { dir: join(root, 'seed-dp'), base: 'lstm', args: ['translate', 'lstm_lm', '--npus', '4', '--format', 'chakra', '-o', 'lstm'] },
  { dir: join(root, 'seed-pp'), base: 'gpt', args: ['translate', 'gpt2_small_like', '--tp', '2', '--pp', '2', '--global-batch', '4', '--micro-batch', '1', '--format', 'chakra', '-o', 'gpt'] },
];

type FileMutation =
  | { kind: 'bytes'; file: 'rank' | 'groups' | 'manifest'; pick: number; edits: ByteMutation[] }
  | { kind: 'delete'; pick: number }
  | { kind: 'copy'; pick: number; rank: string }
  | { kind: 'link'; pick: number; to: 'zero' | 'folder' | 'nowhere' };

/** Overwrites that break varints and JSON (quotes, brackets, digits). */
const byteMutation = byteMutationArb([0x00, 0x7f, 0x80, 0xff, 0x08, 0x12, 0x1a, 0x22, 0x30, 0x39, 0x5b, 0x7b]);
const fileMutation: fc.Arbitrary<FileMutation> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('bytes' as const), file: fc.constantFrom('rank' as const, 'groups' as const, 'manifest' as const), pick: fraction, edits: fc.array(byteMutation, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fraction }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('copy' as const), pick: fraction, rank: fc.constantFrom('9', '1048575', '1048576', '2147483648', '99999999999999999999', '0009') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('link' as const), pick: fraction, to: fc.constantFrom('zero' as const, 'folder' as const, 'nowhere' as const) }) },
);
const caseArb = fc.record({ seed: fc.integer({ min: 0, max: SEEDS.length - 1 }), mutations: fc.array(fileMutation, { minLength: 1, maxLength: 3 }) });


let cases = 0;
/** A copy of seed set `seed` with the mutations applied; returns the folder. */
function mutatedSet(c: { seed: number; mutations: FileMutation[] }): { dir: string; base: string } {
  const seed = SEEDS[c.seed] ?? SEEDS[0];
  if (seed === undefined) throw new Error('no seed set');
  const dir = join(root, `case${cases++}`);
  mkdirSync(dir);
  for (const name of readdirSync(seed.dir)) copyFileSync(join(seed.dir, name), join(dir, name));
  for (const m of c.mutations) {
    // Regular files only: reading a planted link to /dev/zero would never end (the test's, not the checker's).
    const ranks = readdirSync(dir).filter((n) => /\.\d+\.et$/.test(n) && lstatSync(join(dir, n)).isFile()).sort();
    const pickRank = (f: number): string | undefined => ranks[Math.floor(f * ranks.length)];
    if (m.kind === 'bytes') {
      const name = m.file === 'rank' ? pickRank(m.pick) : `${seed.base}.${m.file === 'groups' ? 'comm-groups' : 'manifest'}.json`;
      if (name === undefined || lstatSync(join(dir, name), { throwIfNoEntry: false })?.isFile() !== true) continue;
      writeFileSync(join(dir, name), m.edits.reduce(mutateBytes, readFileSync(join(dir, name))));
    } else {
      const name = pickRank(m.pick);
      if (name === undefined) continue;
      if (m.kind === 'delete') rmSync(join(dir, name), { force: true });
      else if (m.kind === 'copy') copyFileSync(join(dir, name), join(dir, `${seed.base}.${m.rank}.et`));
      else {
        rmSync(join(dir, name), { force: true });
        symlinkSync(m.to === 'zero' ? '/dev/zero' : m.to === 'folder' ? dir : join(dir, 'nowhere'), join(dir, name));
      }
    }
  }
  return { dir, base: seed.base };
}

afterEach(() => {
  vi.restoreAllMocks();
  process.exitCode = undefined;
});

describe('fuzzed trace sets', () => {
  beforeAll(async () => {
    for (const s of SEEDS) mkdirSync(s.dir);
    const results = await runCliBatch(SEEDS.map((s) => ({ args: s.args, cwd: s.dir })));
    for (const r of results) expect(r.status, r.stderr).toBe(0);
  });

  it(`${RUNS} mutated sets: check-trace ends with findings or a one-line InputError`, async () => {
    const outcomes = { clean: 0, findings: 0, input: 0 };
    const samples = fc.sample(caseArb, { numRuns: RUNS, seed: FUZZ_SEED });
    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
      out += String(s);
      return true;
    });
    for (const [i, c] of samples.entries()) {
      const { dir, base } = mutatedSet(c);
      out = '';
      process.exitCode = undefined;
      try {
        await runCheckTrace(join(dir, base), { format: 'text' });
        const summary = out.trimEnd().split('\n').at(-1) ?? '';
        expect(summary, `case ${i}`).toMatch(/^(clean: |\d+ finding\(s\) )/);
        if (summary.startsWith('clean: ')) outcomes.clean++;
        else outcomes.findings++;
      } catch (e) {
        if (!(e instanceof InputError)) {
          vi.restoreAllMocks();
          throw new Error(`fuzz seed ${FUZZ_SEED} (replay: MODTRANS_FUZZ_SEED=${FUZZ_SEED} npx vitest run test/check/fuzz.test.ts), case ${i} ${JSON.stringify(c)}: ${(e as Error).stack}`);
        }
        outcomes.input++;
        expect(e.message).not.toMatch(/[\n\r]/);
      }
      rmSync(dir, { recursive: true, force: true });
    }
    vi.restoreAllMocks();
    // Most mutations break something the checker reports.
    expect(outcomes.findings, `fuzz seed ${FUZZ_SEED}`).toBeGreaterThan(RUNS / 2);
    console.log(`trace fuzz seed ${FUZZ_SEED}: ${outcomes.clean} clean, ${outcomes.findings} with findings, ${outcomes.input} refused with an InputError`);
  });
});
