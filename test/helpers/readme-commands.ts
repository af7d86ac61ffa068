/**
 * The `npx modtrans ...` command lines of the README and of every Markdown file under examples/,
 * as argument lists, and the paths each one writes: test/cli/readme.test.ts runs them, the
 * git-ignore test checks what they leave in a clone.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from './models.js';

function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(m[1] ?? m[2] ?? m[3] ?? '');
  return words;
}

/** The `npx modtrans` commands of a Markdown text's fenced code blocks (shell comments and `&&`/`;` chains handled), as argument lists. */
export function modtransCommands(markdown: string): string[][] {
  const commands: string[][] = [];
  for (const block of markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)) {
    for (const raw of (block[1] ?? '').split('\n')) {
      const line = raw.replace(/(^|\s)#.*$/, '').trim();
      for (const part of line.split(/&&|;/)) {
        const words = shellWords(part.trim());
        if (words[0] === 'npx' && words[1] === 'modtrans') commands.push(words.slice(2));
      }
    }
  }
  return commands;
}

export interface ReadmeCommand {
  /** The Markdown file, relative to the repository. */
  file: string;
  args: string[];
}

export function readmeCommands(): ReadmeCommand[] {
  const files = [join(ROOT, 'README.md')];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith('.md')) files.push(path);
    }
  };
  walk(join(ROOT, 'examples'));
  return files.flatMap((file) => modtransCommands(readFileSync(file, 'utf8')).map((args) => ({ file: relative(ROOT, file), args })));
}

/**
 * Paths (relative to the working folder) a command line writes: a file for -o/--output, --chart,
 * --report, --timeline; for a Chakra -o PREFIX its first rank file and comm-group file; for a
 * SCALE-sim -o DIR a report inside it. Standard output (-o -) writes nothing.
 */
export function writtenPaths(args: readonly string[]): string[] {
  const value = (flag: string): string | undefined => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const format = value('--format');
  const paths: string[] = [];
  args.forEach((a, i) => {
    const next = args[i + 1];
    if (next === undefined || next === '-') return;
    if (a === '-o' || a === '--output') {
      if (args[0] === 'scalesim' || format === 'scalesim') paths.push(`${next}/run/COMPUTE_REPORT.csv`);
      else if (format === 'chakra') paths.push(`${next}.0.et`, `${next}.comm-groups.json`);
      else paths.push(next);
    } else if (['--chart', '--report', '--timeline'].includes(a)) paths.push(next);
  });
  return paths;
}
