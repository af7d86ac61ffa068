/**
 * check-trace on hostile files (issue 22 rows 4 and 12): absurd rank numbers, FIFOs, devices,
 * oversized files and groups files are findings or one-line errors, never a loop, a block or an
 * unbounded read; with --peak-perf, compute nodes without num_ops are reported.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkTraceSet } from '../../src/check/check-traces.js';
import { MAX_TRACE_BYTES, openTraceSet, readRegularFile } from '../../src/check/trace-set.js';
import { InputError } from '../../src/errors.js';
import { encodeEtFile } from '../../src/writers/chakra-encoding.js';
import { ROOT } from '../helpers/models.js';
import { attr, check, comp, where } from './traces.js';

const root = mkdtempSync(join(tmpdir(), 'modtrans-trace-files-'));
let n = 0;
/** A folder with rank files r.0.et and r.1.et (clean), for files to be added beside them. */
function setWithTwoRanks(): { dir: string; prefix: string } {
  const dir = join(root, `s${n++}`);
  mkdirSync(dir);
  for (const r of [0, 1]) writeFileSync(join(dir, `r.${r}.et`), encodeEtFile([comp(0)]));
  return { dir, prefix: join(dir, 'r') };
}

describe('rank files as files (row 4)', () => {
  it('rank numbers beyond 2^20 - 1 are stray-file findings, not a loop over the gap', () => {
    const { dir, prefix } = setWithTwoRanks();
    for (const rank of ['99999999999999999999', '2147483648', '1048576']) writeFileSync(join(dir, `r.${rank}.et`), '');
    const set = openTraceSet(prefix);
    expect(set.files.map((f) => f.rank)).toEqual([0, 1]);
    expect(set.findings.map((f) => `${f.kind} ${f.file}`).sort()).toEqual(['1048576', '2147483648', '99999999999999999999'].map((r) => `stray-file ${join(dir, `r.${r}.et`)}`));
    expect(checkTraceSet(set.files, undefined, { fileFindings: set.findings }).effects).toEqual({ crash: 0, hang: 0, 'mis-time': 0, misread: 0, 'mixed-set': 3 });
  });

  it('the highest rank taken: a gap up to it is one finding, not a million', () => {
    const { dir, prefix } = setWithTwoRanks();
    writeFileSync(join(dir, 'r.1048575.et'), encodeEtFile([comp(0)]));
    const set = openTraceSet(prefix);
    const missing = checkTraceSet(set.files, undefined).findings.filter((f) => f.kind === 'missing-file');
    expect(missing.map((f) => f.message)).toEqual(['no trace files for ranks 2..1048574 (1048573 ranks; ranks run 0..1048575); ASTRA-sim aborts: "workload file ... does not exist"']);
  });

  it('a FIFO, a link to /dev/zero, a folder and a file over the size bound are skipped with a finding, never opened', () => {
    const { dir, prefix } = setWithTwoRanks();
    expect(spawnSync('mkfifo', [join(dir, 'r.2.et')]).status).toBe(0);
    symlinkSync('/dev/zero', join(dir, 'r.3.et'));
    mkdirSync(join(dir, 'r.4.et'));
    writeFileSync(join(dir, 'r.5.et'), '');
    truncateSync(join(dir, 'r.5.et'), MAX_TRACE_BYTES + 1); // sparse: no disk used
    const set = openTraceSet(prefix);
    expect(set.files.map((f) => f.rank)).toEqual([0, 1]);
    expect(set.findings.map((f) => [f.rank, f.kind, f.message])).toEqual([
      [2, 'unreadable-file', `${join(dir, 'r.2.et')} is a FIFO, not a regular file; not read`],
      [3, 'unreadable-file', `${join(dir, 'r.3.et')} is a character device, not a regular file; not read`],
      [4, 'unreadable-file', `${join(dir, 'r.4.et')} is a folder, not a regular file; not read`],
      [5, 'unreadable-file', `${join(dir, 'r.5.et')} is ${MAX_TRACE_BYTES + 1} bytes, more than the ${MAX_TRACE_BYTES} bytes a trace file is read to; not read`],
    ]);
    // Skipped ranks are reported as such, not also as missing.
    expect(where(checkTraceSet(set.files, undefined, { fileFindings: set.findings }).findings)).toEqual(['unreadable-file@2', 'unreadable-file@3', 'unreadable-file@4', 'unreadable-file@5']);
  });

  it('reads stop at the size checked: a device or FIFO passed as a groups file is an InputError', () => {
    expect(() => readRegularFile('/dev/zero', 1 << 20, 'comm-groups file')).toThrow(new InputError('/dev/zero: the comm-groups file is a character device, not a regular file'));
    const { dir } = setWithTwoRanks();
    const big = join(dir, 'big.json');
    writeFileSync(big, '');
    truncateSync(big, 2048);
    expect(() => readRegularFile(big, 1024, 'comm-groups file')).toThrow(new InputError(`${big}: the comm-groups file is 2048 bytes, more than the 1024 bytes read`));
  });

  it('the command ends on all of it (spawned, with a timeout): no loop, no block', () => {
    const { dir, prefix } = setWithTwoRanks();
    writeFileSync(join(dir, 'r.99999999999999999999.et'), '');
    expect(spawnSync('mkfifo', [join(dir, 'r.2.et')]).status).toBe(0);
    symlinkSync('/dev/zero', join(dir, 'r.3.et'));
    const run = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'dist', 'cli', 'main.cjs'), 'check-trace', ...args], { encoding: 'utf8', timeout: 60_000 });
    const r = run(prefix);
    expect(r.signal).toBeNull();
    expect(r.stdout.trim().split('\n').at(-1)).toBe('3 finding(s) (2 crash, 1 mixed-set): 2 files, 2 nodes, 0 collectives, 0 sends / 0 recvs checked');
    const groups = run(prefix, '--comm-groups', '/dev/zero');
    expect(groups.signal).toBeNull();
    expect(groups.status).toBe(2);
    expect(groups.stderr).toBe('modtrans: /dev/zero: the comm-groups file is a character device, not a regular file\n');
  });
});

describe('roofline mode (row 12)', () => {
  it('--peak-perf reports compute nodes without num_ops: roofline mode aborts on them', () => {
    const noOps = { ...comp(0), attrs: [attr.cpu(), attr.u64('tensor_size', 64)] };
    const roofline = { peakTflops: 1 };
    expect(check([[noOps]], undefined, { roofline }).map((f) => [f.kind, f.effect, f.message])).toEqual([['missing-attribute', 'crash', 'compute node without num_ops: roofline mode aborts on it (B.7)']]);
    // Replay mode reads duration_micros: the same node is fine there.
    expect(check([[noOps]])).toEqual([]);
    // CPU ops are always replayed.
    expect(check([[{ ...noOps, attrs: [attr.cpu(true), attr.u64('tensor_size', 64)] }]], undefined, { roofline })).toEqual([]);
  });
});
