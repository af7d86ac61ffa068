/**
 * What the README's commands write into a clone is git-ignored: the quick start's resnet50.txt,
 * traces/, out/, the charts. A `git status` after following the README shows nothing new.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/models.js';
import { readmeCommands, writtenPaths } from '../helpers/readme-commands.js';

/** Whether git ignores `path` (relative to the repository root; it need not exist). */
function ignored(path: string): boolean {
  const r = spawnSync('git', ['check-ignore', '-q', '--', path], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0 && r.status !== 1) throw new Error(`git check-ignore ${path} failed (${r.status}): ${r.stderr}`);
  return r.status === 0;
}

describe('README outputs', () => {
  it('finds what the commands write (the extraction works)', () => {
    expect(writtenPaths(['translate', 'm', '--format', 'chakra', '-o', 'traces/m'])).toEqual(['traces/m.0.et', 'traces/m.comm-groups.json']);
    expect(writtenPaths(['scalesim', '-t', 't.csv', '-c', 'g.cfg', '-o', 'out'])).toEqual(['out/run/COMPUTE_REPORT.csv']);
    expect(writtenPaths(['translate', 'm', '-o', 'm.txt', '--timeline', 'm.svg', '--report', 'm.json'])).toEqual(['m.txt', 'm.svg', 'm.json']);
    expect(writtenPaths(['translate', 'm', '--format', 'chakra-json', '-o', '-'])).toEqual([]);
    // The quick start's output is among them.
    expect(readmeCommands().flatMap((c) => writtenPaths(c.args))).toEqual(expect.arrayContaining(['resnet50.txt', 'traces/gpt2.0.et', 'out/run/COMPUTE_REPORT.csv']));
  });

  it('every path a README command writes is git-ignored', () => {
    const paths = [...new Set(readmeCommands().flatMap((c) => writtenPaths(c.args)))];
    expect(paths.filter((p) => !ignored(p))).toEqual([]);
  });

  it('the ignore rules stay at the root: shipped files of the same kinds are not ignored', () => {
    for (const path of ['test/fixtures/astra-sim/Resnet50_DataParallel.txt', 'docs/new-figure.svg', 'package.json', 'examples/scalesim/out/x.csv']) expect(ignored(path), path).toBe(false);
  });
});
