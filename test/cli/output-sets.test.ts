/**
 * Outputs are whole or absent (issue 22 rows 1-3, 8, 9; issue 20 items 5, 6), tested on the shipped
 * bin as a user meets them: a run killed mid-write (kill -9), a full disk (a file-size limit,
 * `ulimit -f`, in a spawned shell), two runs on one prefix, a FIFO or a symlink as -o, a path
 * whose temp file cannot be created. The previous good set must survive every failure. Kills,
 * file-size limits and two runs at once are processes of the built bin; the runs that only set up
 * or read a set, and the -o checks, run in this process (cli-batch).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { fixturePath, ROOT } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const BIN = join(ROOT, 'dist', 'cli', 'main.cjs');
const root = mkdtempSync(join(tmpdir(), 'modtrans-sets-'));
let folders = 0;
const fresh = (): string => {
  const d = join(root, `d${folders++}`);
  mkdirSync(d);
  return d;
};

/** A command line in this process (cli-batch): for the runs whose process is not what is tested. */
async function run(cwd: string, ...args: string[]): Promise<CliResult> {
  const [r] = await runCliBatch([{ args, cwd }]);
  return present(r, args.join(' '));
}

/** A command line as the spawned bin: for kills, file-size limits and two processes at once. */
function mt(cwd: string, ...args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd, timeout: 120_000 });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `sh -c 'ulimit -f BLOCKS; exec modtrans ...'`: every file the run writes is capped at BLOCKS x 512 bytes. */
function mtLimited(cwd: string, blocks: number, ...args: string[]): { status: number; stderr: string } {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const r = spawnSync('sh', ['-c', `ulimit -f ${blocks} && exec ${quoted}`], { encoding: 'utf8', cwd, timeout: 120_000 });
  return { status: r.status ?? -1, stderr: r.stderr };
}

/** Name -> SHA-256 of the visible files of a folder (hidden temp files and folders apart). */
function snapshot(dir: string): Map<string, string> {
  return new Map(
    readdirSync(dir)
      .filter((n) => !n.startsWith('.') && statSync(join(dir, n)).isFile())
      .sort()
      .map((n) => [n, createHash('sha256').update(readFileSync(join(dir, n))).digest('hex')]),
  );
}

/** 8 data-parallel ranks of ~1.4 KB each. */
const SMALL = ['translate', 'lstm_lm', '--npus', '8', '--format', 'chakra'];
/** 1,024 ranks, ~85 MB: seconds of writing, time enough to be killed halfway. */
const LARGE = ['translate', 'gpt2_small_like', '--tp', '4', '--dp', '256', '--global-batch', '256', '--format', 'chakra'];

/** Every file under `dir`, hidden folders included (files renamed or removed meanwhile are skipped). */
function countFiles(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let n = 0;
  for (const name of names) {
    const st = lstatSync(join(dir, name), { throwIfNoEntry: false });
    n += st === undefined ? 0 : st.isDirectory() ? countFiles(join(dir, name)) : 1;
  }
  return n;
}

describe('a trace set is whole or absent', () => {
  it('kill -9 mid-write leaves the previous set untouched; the next run clears what the killed one left', async () => {
    const dir = fresh();
    expect((await run(dir, ...SMALL, '-o', 'g')).status).toBe(0);
    const before = snapshot(dir);
    const base = countFiles(dir);
    const child = spawn(process.execPath, [BIN, ...LARGE, '-o', 'g'], { cwd: dir, stdio: 'ignore' });
    const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
    // Kill once the run has written 100 of its 1,025 files (wherever it puts them).
    for (let tries = 0; tries < 3000 && countFiles(dir) < base + 100; tries++) await new Promise((ok) => setTimeout(ok, 10));
    child.kill('SIGKILL');
    expect(await exited).toBeNull(); // killed, not finished
    expect(snapshot(dir)).toEqual(before);
    // The killed run's lock goes stale after 10 s; age it instead of waiting.
    const lock = join(dir, 'g.manifest.json.lock');
    if (existsSync(lock)) utimesSync(lock, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const again = await run(dir, ...SMALL, '--npus', '4', '-o', 'g');
    expect(again.status, again.stderr).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['g.0.et', 'g.1.et', 'g.2.et', 'g.3.et', 'g.comm-groups.json', 'g.manifest.json']);
  });

  it('Ctrl-C (SIGINT) mid-write: the previous set untouched, and no temp folder or lock left', async () => {
    const dir = fresh();
    expect((await run(dir, ...SMALL, '-o', 'g')).status).toBe(0);
    const before = snapshot(dir);
    const base = countFiles(dir);
    const child = spawn(process.execPath, [BIN, ...LARGE, '-o', 'g'], { cwd: dir, stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((ok) => child.on('exit', (_code, signal) => ok(signal)));
    for (let tries = 0; tries < 3000 && countFiles(dir) < base + 100; tries++) await new Promise((ok) => setTimeout(ok, 10));
    child.kill('SIGINT');
    expect(await exited).toBe('SIGINT');
    expect(snapshot(dir)).toEqual(before);
    expect(readdirSync(dir).filter((n) => n.startsWith('.') || n.endsWith('.lock'))).toEqual([]);
  });

  it('a full disk (ulimit -f) fails with one line, exit 2, and the previous set untouched', async () => {
    const dir = fresh();
    expect((await run(dir, ...SMALL, '-o', 'g')).status).toBe(0);
    const before = snapshot(dir);
    // Rank files are ~1.4 KB: a 512-byte limit fails the first one, after the comm-groups file.
    const r = mtLimited(dir, 1, ...SMALL, '--npus', '16', '-o', 'g');
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/g\.0\.et: cannot write the output \(file too large/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(snapshot(dir)).toEqual(before);
    expect(readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('stale rank files of an earlier larger run are removed with it; the manifest lists what is there', async () => {
    const dir = fresh();
    expect((await run(dir, ...SMALL, '-o', 'g')).status).toBe(0);
    expect((await run(dir, ...SMALL, '--npus', '2', '-o', 'g')).status).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['g.0.et', 'g.1.et', 'g.comm-groups.json', 'g.manifest.json']);
    const manifest = JSON.parse(readFileSync(join(dir, 'g.manifest.json'), 'utf8')) as { modtrans: string; state: string; ranks: number; plan: { tp: number; dp: number }; files: { name: string; bytes: number }[] };
    expect(manifest).toMatchObject({ modtrans: '0.1.0', kind: 'chakra-trace-set', state: 'complete', ranks: 2, plan: { model: 'lstm_lm.onnx', strategy: 'DATA', tp: 1, dp: 2, pp: 1 } });
    expect(manifest.files).toEqual(['g.comm-groups.json', 'g.0.et', 'g.1.et'].map((name) => ({ name, bytes: statSync(join(dir, name)).size })));
  });

  it('a second run on the same prefix waits for the first: the set is one run whole', async () => {
    const dir = fresh();
    const first = spawn(process.execPath, [BIN, ...LARGE, '-o', 'g'], { cwd: dir, stdio: 'ignore' });
    const firstDone = new Promise<number | null>((ok) => first.on('exit', (code) => ok(code)));
    const lock = join(dir, 'g.manifest.json.lock');
    for (let tries = 0; tries < 3000 && !existsSync(lock); tries++) await new Promise((ok) => setTimeout(ok, 10));
    const second = mt(dir, ...SMALL, '-o', 'g');
    expect(second.status, second.stderr).toBe(0);
    expect(await firstDone).toBe(0);
    // The second started while the first held the lock, so it wrote last: 8 ranks, nothing of the first's 1,024.
    expect(readdirSync(dir).sort()).toEqual([...Array.from({ length: 8 }, (_, r) => `g.${r}.et`), 'g.comm-groups.json', 'g.manifest.json'].sort());
    const check = await run(dir, 'check-trace', 'g');
    expect(check.stdout).toMatch(/^clean: 8 files/);
  });

  it('an interrupted commit (the journal) is reported by check-trace and finished by the next run', async () => {
    const dir = fresh();
    expect((await run(dir, ...SMALL, '-o', 'g')).status).toBe(0);
    const other = fresh();
    expect((await run(other, ...SMALL, '--npus', '2', '-o', 'g')).status).toBe(0);
    // What a run killed between its journal and its final manifest leaves: g.0.et moved, g.1.et and the groups still in the temp folder.
    const temp = '.g.manifest.json.0123456789abcdef.tmp';
    mkdirSync(join(dir, temp));
    writeFileSync(join(dir, 'g.0.et'), readFileSync(join(other, 'g.0.et')));
    for (const n of ['g.1.et', 'g.comm-groups.json']) writeFileSync(join(dir, temp, n), readFileSync(join(other, n)));
    const journal = JSON.parse(readFileSync(join(other, 'g.manifest.json'), 'utf8')) as Record<string, unknown>;
    const stale = Array.from({ length: 6 }, (_, r) => `g.${r + 2}.et`);
    writeFileSync(join(dir, 'g.manifest.json'), JSON.stringify({ ...journal, state: 'committing', temp, remove: stale }));
    const check = await run(dir, 'check-trace', 'g');
    expect(check.stdout, check.stderr).toMatch(/g\.manifest\.json: the write of this set was interrupted/);
    // Any later run on the prefix finishes the move first, then writes its own set.
    const next = await run(dir, ...SMALL, '-o', 'g');
    expect(next.status).toBe(0);
    expect(next.stderr).toMatch(/finished the interrupted write/);
    expect(readdirSync(dir).sort()).toEqual([...Array.from({ length: 8 }, (_, r) => `g.${r}.et`), 'g.comm-groups.json', 'g.manifest.json'].sort());
  });

  it('check-trace reports rank files the manifest does not list, and checks only the listed ones', async () => {
    const dir = fresh();
    expect((await run(dir, ...SMALL, '-o', 'g')).status).toBe(0);
    writeFileSync(join(dir, 'g.8.et'), readFileSync(join(dir, 'g.0.et')));
    const r = await run(dir, 'check-trace', 'g');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('rank 8: g.8.et is not in g.manifest.json (left by another run?); not checked');
    expect(lines[1]).toMatch(/^1 finding\(s\) \(1 mixed-set\): 8 files, /);
    expect(lines).toHaveLength(2);
  });
});

describe('-o and check-trace prefixes (issue 20 items 5 and 6)', () => {
  it('-o DIR/ writes DIR/MODEL.<rank>.et, never hidden files, and says it created the folder', async () => {
    const dir = fresh();
    const r = await run(dir, ...SMALL, '-o', 'traces/');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^modtrans: created the folder traces\/?$/m);
    expect(readdirSync(join(dir, 'traces')).filter((n) => n.startsWith('.'))).toEqual([]);
    expect(existsSync(join(dir, 'traces', 'lstm_lm.7.et'))).toBe(true);
    // An existing folder without the slash means the same.
    expect((await run(dir, ...SMALL, '-o', 'traces')).status).toBe(0);
    expect(readdirSync(join(dir, 'traces')).filter((n) => n.endsWith('.et')).length).toBe(8);
  });

  it('check-trace takes PREFIX, PREFIX.et and a folder holding one set', async () => {
    const dir = fresh();
    expect((await run(dir, ...SMALL, '-o', 'out/g.et')).status).toBe(0);
    expect(existsSync(join(dir, 'out', 'g.0.et'))).toBe(true);
    for (const arg of ['out/g', 'out/g.et', 'out/', 'out']) expect((await run(dir, 'check-trace', arg)).stdout, arg).toMatch(/^clean: 8 files/);
    expect((await run(dir, ...SMALL, '-o', 'out/h')).status).toBe(0);
    const both = await run(dir, 'check-trace', 'out');
    expect(both.status).toBe(2);
    expect(both.stderr).toBe('modtrans: out: the folder holds 2 trace sets (out/g, out/h); name one\n');
  });
});

describe('-o targets and temp files (rows 2, 3, 8)', () => {
  it('a FIFO, a symlink to a device, a folder: exit 2 with one line, left as they were', async () => {
    const dir = fresh();
    expect(spawnSync('mkfifo', [join(dir, 'fifo')]).status).toBe(0);
    symlinkSync('/dev/null', join(dir, 'null-link'));
    symlinkSync('/dev/stdout', join(dir, 'stdout-link'));
    mkdirSync(join(dir, 'folder'));
    for (const [target, kind] of [['fifo', 'a FIFO'], ['null-link', 'a symbolic link'], ['stdout-link', 'a symbolic link'], ['folder', 'a folder']] as const) {
      const r = await run(dir, 'translate', 'resnet50', '-o', target);
      expect(r.status, target).toBe(2);
      expect(r.stderr, target).toBe(`modtrans: ${target}: is ${kind}; an output must be a regular file or a new path${kind === 'a folder' ? '' : '; for standard output pass -o - or leave -o out'}\n`);
    }
    expect(lstatSync(join(dir, 'fifo')).isFIFO()).toBe(true);
    expect(lstatSync(join(dir, 'null-link')).isSymbolicLink()).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['fifo', 'folder', 'null-link', 'stdout-link']);
  });

  it('a temp path that cannot be created gives the real error, exit 2, one line (ENOTDIR, ENAMETOOLONG)', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'afile'), 'x');
    const notDir = await run(dir, 'translate', 'resnet50', '-o', 'afile/r.txt');
    expect(notDir.status).toBe(2);
    expect(notDir.stderr).toBe('modtrans: afile/r.txt: cannot write the output (a part of the path is not a folder)\n');
    const long = 'n'.repeat(256);
    const tooLong = await run(dir, 'translate', 'resnet50', '-o', long);
    expect(tooLong.status).toBe(2);
    expect(tooLong.stderr).toBe(`modtrans: ${long}: cannot write the output (file name too long)\n`);
    // A 255-byte name is valid, and so must be its temp file's.
    expect((await run(dir, 'translate', 'resnet50', '-o', 'n'.repeat(255))).status).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['afile', 'n'.repeat(255)]);
  });
});

describe('the SCALE-sim report set (row 9)', () => {
  it('a full disk leaves the previous reports untouched', async () => {
    const dir = fresh();
    const cfg = fixturePath('scalesim/configs/google.cfg');
    expect((await run(dir, 'scalesim', '-t', fixturePath('scalesim/topologies/conv_nets/test.csv'), '-c', cfg, '-o', 'runs')).status).toBe(0);
    const reports = join(dir, 'runs', 'GoogleTPU_v1_ws');
    const before = snapshot(reports);
    expect([...before.keys()]).toEqual(['BANDWIDTH_REPORT.csv', 'COMPUTE_REPORT.csv', 'DETAILED_ACCESS_REPORT.csv', 'manifest.json']);
    // alexnet's COMPUTE (~0.4 KB) and BANDWIDTH (~0.7 KB) reports fit in 1 KB, its DETAILED_ACCESS one (~1.1 KB) does not.
    const r = mtLimited(dir, 2, 'scalesim', '-t', fixturePath('scalesim/topologies/conv_nets/alexnet.csv'), '-c', cfg, '-o', 'runs');
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/DETAILED_ACCESS_REPORT\.csv: cannot write the output \(file too large/);
    expect(snapshot(reports)).toEqual(before);
  });
});
