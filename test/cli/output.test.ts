/**
 * Temp files of every output (issue 22 row 2): unpredictable names, created with O_EXCL and
 * O_NOFOLLOW, so symlinks planted where a temp file would go are never written through.
 */
import { lstatSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempPathBeside, writeFileAtomic, writeNewFile } from '../../src/cli/output.js';

describe('output temp files', () => {
  it('symlinks planted at the old predictable temp names (.NAME.PID.tmp) are not followed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-out-'));
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious');
    // The attack of row 2: links for this and the next PIDs, where the temp file used to go.
    for (let pid = process.pid; pid < process.pid + 50; pid++) symlinkSync(victim, join(dir, `.r.txt.${pid}.tmp`));
    writeFileAtomic(join(dir, 'r.txt'), 'workload');
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(lstatSync(join(dir, 'r.txt')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'r.txt'), 'utf8')).toBe('workload');
    expect(readdirSync(dir).filter((n) => !n.startsWith('.r.txt.')).sort()).toEqual(['r.txt', 'victim']);
  });

  it('a file or symlink already at a temp name fails the open (O_EXCL) and is left as it was', () => {
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-out-'));
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious');
    const temp = tempPathBeside(join(dir, 'r.txt'));
    symlinkSync(victim, temp);
    expect(() => writeNewFile(temp, 'x')).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(lstatSync(temp).isSymbolicLink()).toBe(true);
  });

  it('temp names are random, carry no PID and stay short for a 255-byte target name', () => {
    const a = tempPathBeside('/x/r.txt');
    const b = tempPathBeside('/x/r.txt');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^\/x\/\.r\.txt\.[0-9a-f]{16}\.tmp$/);
    expect(a).not.toContain(String(process.pid));
    expect(basename(tempPathBeside(`/x/${'n'.repeat(255)}`)).length).toBeLessThanOrEqual(255);
  });
});

describe('writeNewFile of text', () => {
  it('writes the UTF-8 of the whole text in chunks, a surrogate pair across a chunk boundary kept whole', () => {
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-chunks-'));
    // 16,384 UTF-16 units per chunk: a pair (U+1F600) at units 16,383-16,384, a lone high surrogate at the end, 3-byte characters between.
    const text = `${'a'.repeat(16_383)}\u{1F600}${'é€'.repeat(20_000)}\ud800`;
    const path = join(dir, 'text.txt');
    const expected = Buffer.from(text, 'utf8');
    expect(writeNewFile(path, text)).toBe(expected.length);
    expect(readFileSync(path).equals(expected)).toBe(true);
    expect(writeNewFile(join(dir, 'empty.txt'), '')).toBe(0);
    expect(readFileSync(join(dir, 'empty.txt')).length).toBe(0);
  });
});
