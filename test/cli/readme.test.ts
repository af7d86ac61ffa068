/**
 * Every `npx modtrans ...` command in a README code block runs as written on a fresh clone: it
 * exits 0 and leaves the files it names. Commands are found automatically (README.md and every
 * Markdown file under examples/), run in one process (cli-batch.ts) in a temporary folder that
 * holds the repository's examples/ as a fresh clone would.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { ROOT } from '../helpers/models.js';
import { present } from '../helpers/present.js';

/** Words of a shell command line: whitespace-separated, with '...' and "..." quoting. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(m[1] ?? m[2] ?? m[3] ?? '');
  return words;
}

/** The `npx modtrans` commands of a Markdown text's fenced code blocks, as argument lists. */
function modtransCommands(markdown: string): string[][] {
  const commands: string[][] = [];
  for (const block of markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)) {
    for (const raw of (block[1] ?? '').split('\n')) {
      const line = raw.replace(/(^|\s)#.*$/, '').trim(); // shell comment
      for (const part of line.split(/&&|;/)) {
        const words = shellWords(part.trim());
        if (words[0] === 'npx' && words[1] === 'modtrans') commands.push(words.slice(2));
      }
    }
  }
  return commands;
}

function markdownFiles(): string[] {
  const found = [join(ROOT, 'README.md')];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith('.md')) found.push(path);
    }
  };
  walk(join(ROOT, 'examples'));
  return found;
}

/** Files a command says it writes: -o FILE|DIR|PREFIX, --chart FILE, --report FILE. */
function namedOutputs(args: string[]): string[] {
  const out: string[] = [];
  args.forEach((a, i) => {
    const next = args[i + 1];
    if (['-o', '--output', '--chart', '--report'].includes(a) && next !== undefined && next !== '-') out.push(next);
  });
  return out;
}

const commands = markdownFiles().flatMap((file) => modtransCommands(readFileSync(file, 'utf8')).map((args) => ({ file: relative(ROOT, file), args })));
// A model from the zoo needs the network, which tests must not use.
const offline = commands.filter((c) => !c.args.some((a) => a.startsWith('zoo:')) && !(c.args[0] === 'zoo' && c.args[1] === 'fetch'));

describe('README commands', () => {
  let cwd: string;
  let results: CliResult[];
  beforeAll(() => {
    cwd = mkdtempSync(join(tmpdir(), 'modtrans-readme-'));
    symlinkSync(join(ROOT, 'examples'), join(cwd, 'examples'));
    results = runCliBatch(offline.map((c) => ({ args: c.args, cwd })));
    // The batch takes ~8 s alone: the default 10 s hook limit fails it on a loaded machine.
  }, 120_000);

  it('finds the commands (the extraction itself works)', () => {
    expect(modtransCommands('```sh\nnpm ci && npx modtrans translate m -o "a b.txt"   # note\n```\nnpx modtrans outside\n')).toEqual([
      ['translate', 'm', '-o', 'a b.txt'],
    ]);
    expect(offline.length).toBeGreaterThanOrEqual(7);
    expect(offline.map((c) => c.args[0])).toEqual(expect.arrayContaining(['translate', 'inspect', 'compare', 'scalesim']));
  });

  it('every command runs as written and writes what it names', () => {
    offline.forEach((c, i) => {
      const what = `${c.file}: npx modtrans ${c.args.join(' ')}`;
      const r = present(results[i], `result of ${what}`);
      expect(r.status, `${what}\n${r.stderr}`).toBe(0);
      for (const output of namedOutputs(c.args)) {
        const path = join(cwd, output);
        // A chakra -o is a prefix (PREFIX.0.et, ...).
        const present = existsSync(path) || (existsSync(dirname(path)) && readdirSync(dirname(path)).some((f) => f.startsWith(`${basename(path)}.`)));
        expect(present, `${what}: ${output}`).toBe(true);
      }
    });
  });
});
