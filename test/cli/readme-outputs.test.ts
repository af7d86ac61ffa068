/**
 * What the README's commands write into a clone is git-ignored: the quick start's resnet50.txt,
 * traces/, out/, the charts. A `git status` after following the README shows nothing new.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/models.js';
import { readmeCommands, writtenPaths } from '../helpers/readme-commands.js';

/** Which of `paths` git ignores (relative to the repository root; they need not exist), in one `git check-ignore`. */
function ignoredOf(paths: readonly string[]): Set<string> {
  // --stdin -z: one process for every path; exit 1 means none is ignored.
  const r = spawnSync('git', ['check-ignore', '--stdin', '-z'], { cwd: ROOT, encoding: 'utf8', input: paths.map((p) => `${p}\0`).join('') });
  if (r.status !== 0 && r.status !== 1) throw new Error(`git check-ignore failed (${r.status}): ${r.stderr}`);
  return new Set(r.stdout.split('\0').filter((p) => p !== ''));
}

/** Whether git ignores `path`. */
const ignored = (path: string): boolean => ignoredOf([path]).has(path);

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
    const ignoredPaths = ignoredOf(paths);
    expect(paths.filter((p) => !ignoredPaths.has(p))).toEqual([]);
  });

  it('the ignore rules stay at the root: shipped files of the same kinds are not ignored', () => {
    const shipped = ['test/fixtures/astra-sim/Resnet50_DataParallel.txt', 'docs/new-figure.svg', 'package.json', 'examples/scalesim/out/x.csv'];
    const ignoredPaths = ignoredOf(shipped);
    for (const path of shipped) expect(ignoredPaths.has(path), path).toBe(false);
    // The one-path form agrees: a README output is ignored, a shipped file is not.
    expect(ignored('resnet50.txt')).toBe(true);
    expect(ignored('package.json')).toBe(false);
  });
});
