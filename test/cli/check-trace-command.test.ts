/** `modtrans check-trace PREFIX`: output lines, exit codes, the groups file, JSON. */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runCheckTrace } from '../../src/cli/check-trace-command.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { ROOT } from '../helpers/models.js';
import { coll, comp, recv, send, writeTraces } from '../check/traces.js';

afterEach(() => {
  vi.restoreAllMocks();
});

async function run(prefix: string, opts: Partial<Parameters<typeof runCheckTrace>[1]> = {}): Promise<{ out: string; code: number }> {
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
    out += String(s);
    return true;
  });
  const code = await runCheckTrace(prefix, { format: 'text', ...opts });
  vi.restoreAllMocks();
  return { out, code };
}

const pair = (pg?: string) => [
  [comp(0), coll(1, [0], { pg }), send(2, 0, 1, 9, 64, [1])],
  [comp(0), coll(1, [0], { pg }), recv(2, 0, 1, 9, 64, [1])],
];

describe('check-trace command', () => {
  it('clean: one summary line, exit 0', async () => {
    const { out, code } = await run(writeTraces(pair()));
    expect(out).toBe('clean: 2 files, 6 nodes, 2 collectives, 1 sends / 1 recvs checked\n');
    expect(code).toBe(0);
  });

  it('findings: one line each, then the summary; exit 2', async () => {
    const prefix = writeTraces([[comp(0), coll(1, [0], { size: 0 })], [comp(0, [5]), coll(1, [0], { size: 0 })]]);
    const { out, code } = await run(prefix);
    expect(out.trimEnd().split('\n')).toEqual([
      'rank 0 node 1 (coll1): comm_size 0: ASTRA-sim still simulates a small non-empty collective (B.8)',
      'rank 1: issues 0 collective(s) on all NPUs (no pg_name), and rank(s) 0 issue ALL_REDUCE of 0 B (rank 0 node 1) as the 1st; they wait for this rank forever',
      'rank 1 node 0 (comp0): depends on id 5, which is not in this file; the node never runs',
      'rank 1 node 1 (coll1): comm_size 0: ASTRA-sim still simulates a small non-empty collective (B.8)',
      '4 finding(s) (2 hang, 2 mis-time): 2 files, 4 nodes, 2 collectives, 0 sends / 0 recvs checked',
    ]);
    expect(code).toBe(2);
  });

  it('reads PREFIX.comm-groups.json by default, or the file --comm-groups names', async () => {
    const prefix = writeTraces(pair('1'), { '1': [0, 1] });
    expect((await run(prefix)).code).toBe(0);
    const other = join(dirname(prefix), 'other.json');
    writeFileSync(other, JSON.stringify({ '2': [0, 1] }));
    const { out, code } = await run(prefix, { commGroups: other });
    expect(code).toBe(2);
    expect(out).toMatch(/pg_name "1": the comm-groups file has no such group/);
  });

  it('--format json: the findings and counts', async () => {
    const prefix = writeTraces([[send(0, 0, 1, 3)], [comp(0)]]);
    const { out, code } = await run(prefix, { format: 'json' });
    const doc = JSON.parse(out) as { clean: boolean; stats: { sends: number }; findings: { kind: string; effect: string; rank: number; node: { id: number; name: string } }[] };
    expect(code).toBe(2);
    expect(doc.clean).toBe(false);
    expect(doc.stats.sends).toBe(1);
    expect(doc.findings).toEqual([expect.objectContaining({ kind: 'unmatched-send', effect: 'hang', rank: 0, node: { id: 0, name: 'send0' } })]);
  });

  it('from the command line: exit codes, and one line on stderr for a prefix without traces', async () => {
    // The command lines in this process (cli-batch): the process's exit code is tested on the
    // built bin in test/cli/exit-codes.test.ts.
    const lines = [
      [writeTraces(pair()), '--network-dims', '1'],
      [join(ROOT, 'no-such-folder', 'x')],
    ];
    const [clean, none] = await runCliBatch(lines.map((args) => ({ args: ['check-trace', ...args], cwd: ROOT })));
    expect(clean?.status).toBe(0);
    expect(clean?.stdout).toMatch(/^clean: 2 files/);
    expect(none?.status).toBe(2);
    expect(none?.stderr.trim().split('\n')).toHaveLength(1);
  });
});
