/**
 * `--tp-plan` keys: globs over layer names, not regular expressions. A regex key such as
 * `^(.+)+!$` backtracks exponentially on a long layer name (> 180 s on a GPT-3 graph); a glob is
 * matched without any blow-up by the classic greedy matcher with one backtracking point (the
 * last `*`), in at most name length x pattern length steps. Grammar: `*` any run of characters
 * (empty too), `?` any one character, `\*` `\?` `\\` those characters, anything else itself;
 * the whole name must match. Characters that only make sense in a regular expression
 * (`^ $ ( ) [ ] { } + |`) are refused, so an old regex key fails loudly instead of matching nothing.
 */
import { InputError, shown } from '../errors.js';

/** Longest key, in characters (the longest GPT-3 layer name is under 60). */
export const MAX_TP_PATTERN_CHARS = 256;
/** Most keys in one file. */
export const MAX_TP_PATTERNS = 4096;

/** What a plan override needs of its pattern (a RegExp has the same shape, for library callers). */
export interface NamePattern {
  readonly source: string;
  test(name: string): boolean;
}

type Token = { kind: 'star' } | { kind: 'any' } | { kind: 'char'; char: string };

const REGEX_ONLY = /[\^$()[\]{}+|]/;

/** Compiles one glob key; `where` starts an error ("--tp-plan plan.json"). */
export function compileNamePattern(source: string, where: string): NamePattern {
  if (source.length > MAX_TP_PATTERN_CHARS) {
    throw new InputError(`${where}: key '${shown(source)}' is ${source.length} characters, more than the limit of ${MAX_TP_PATTERN_CHARS}`);
  }
  const bad = REGEX_ONLY.exec(source);
  if (bad !== null) {
    throw new InputError(
      `${where}: key '${shown(source)}' has '${bad[0]}': keys are globs over the whole layer name (* any characters, ? one character, \\ escapes them), not regular expressions`,
    );
  }
  const tokens: Token[] = [];
  for (let i = 0; i < source.length; i++) {
    const c = source[i] ?? '';
    if (c === '\\') {
      const next = source[i + 1];
      if (next !== '*' && next !== '?' && next !== '\\') throw new InputError(`${where}: key '${shown(source)}': '\\' escapes only *, ? and \\`);
      tokens.push({ kind: 'char', char: next });
      i++;
    } else if (c === '*') {
      // Runs of stars mean one star.
      if (tokens[tokens.length - 1]?.kind !== 'star') tokens.push({ kind: 'star' });
    } else tokens.push(c === '?' ? { kind: 'any' } : { kind: 'char', char: c });
  }
  return { source, test: (name) => globMatch(tokens, name) };
}

/**
 * Greedy glob matching: on a mismatch, retry from the last star with it eating one more
 * character. Earlier stars never need revisiting, so there is one backtracking point and the
 * work is bounded by name length x pattern length (Russ Cox, "Glob Matching Can Be Simple And Fast Too").
 */
function globMatch(tokens: readonly Token[], name: string): boolean {
  let p = 0;
  let n = 0;
  let starP = -1;
  let starN = 0;
  while (n < name.length || p < tokens.length) {
    const t = tokens[p];
    if (t !== undefined) {
      if (t.kind === 'star') {
        starP = p;
        starN = n;
        p++;
        continue;
      }
      if (n < name.length && (t.kind === 'any' || t.char === name[n])) {
        p++;
        n++;
        continue;
      }
    }
    if (starP >= 0 && starN < name.length) {
      starN++;
      p = starP + 1;
      n = starN;
      continue;
    }
    return false;
  }
  return true;
}
