/**
 * The one-line messages a user meets first (issue 20, "Messages"): Megatron-LM's flag names point
 * at ours, sizes that do not divide say which would, and conflicting flags are errors naming both.
 * All command lines run in one process (cli-batch).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-messages-'));
const badRole = join(dir, 'bad-role.json');
writeFileSync(badRole, JSON.stringify({ '^blocks\\.0\\.attn\\.q$': 'colum' }));

/** Command lines and, for each, the exact stderr line expected (exit code 2 unless told). */
const CASES: { args: string[]; stderr: string | RegExp; status?: number }[] = [
  // Megatron-LM's arguments.py names -> modtrans's flags (README, "Commands").
  { args: ['translate', 'alexnet', '--tensor-model-parallel-size', '2'], stderr: "modtrans: unknown option '--tensor-model-parallel-size' (Megatron-LM's name; modtrans: --tp)" },
  { args: ['translate', 'alexnet', '--tensor-model-parallel-size=2'], stderr: "modtrans: unknown option '--tensor-model-parallel-size' (Megatron-LM's name; modtrans: --tp)" },
  { args: ['translate', 'alexnet', '--pipeline-model-parallel-size', '2'], stderr: "modtrans: unknown option '--pipeline-model-parallel-size' (Megatron-LM's name; modtrans: --pp)" },
  { args: ['memory', 'alexnet', '--micro-batch-size', '2'], stderr: "modtrans: unknown option '--micro-batch-size' (Megatron-LM's name; modtrans: --micro-batch)" },
  { args: ['translate', 'alexnet', '--global-batch-size', '8'], stderr: "modtrans: unknown option '--global-batch-size' (Megatron-LM's name; modtrans: --global-batch)" },
  { args: ['translate', 'alexnet', '--seq-length', '128'], stderr: "modtrans: unknown option '--seq-length' (Megatron-LM's name; modtrans: --seq)" },
  { args: ['translate', 'alexnet', '--sequence-parallel'], stderr: "modtrans: unknown option '--sequence-parallel' (Megatron-LM's name; modtrans: --sp)" },
  { args: ['translate', 'alexnet', '--use-distributed-optimizer'], stderr: "modtrans: unknown option '--use-distributed-optimizer' (Megatron-LM's name; modtrans: --zero 1)" },
  { args: ['translate', 'alexnet', '--data-parallel-size', '2'], stderr: "modtrans: unknown option '--data-parallel-size' (modtrans: --dp; Megatron-LM has no such flag, its D is the world size / (T x P))" },
  // Other unknown options keep commander's word and the pointer to --help.
  { args: ['translate', 'alexnet', '--no-such-flag'], stderr: "modtrans: unknown option '--no-such-flag' (see --help)" },
];

describe('messages', () => {
  let results: CliResult[];
  beforeAll(() => {
    results = runCliBatch(CASES.map((c) => ({ args: c.args, cwd: dir })));
  }, 120_000);

  it('each is one line, exits as told', () => {
    CASES.forEach((c, i) => {
      const r = results[i];
      const what = c.args.join(' ');
      expect(r?.status, `${what}\n${r?.stderr}`).toBe(c.status ?? 2);
      const lines = (r?.stderr ?? '').trimEnd().split('\n');
      if (typeof c.stderr === 'string') expect(lines, what).toEqual([c.stderr]);
      else expect(lines.join('\n'), what).toMatch(c.stderr);
    });
  });
});

export { badRole };
