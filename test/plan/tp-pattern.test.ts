/** `--tp-plan` keys are globs matched in bounded time (issue 22 row 6). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTpPlan } from '../../src/plan/build.js';
import { compileNamePattern } from '../../src/plan/tp-pattern.js';

/** Glob semantics by definition: * any run, ? one character, the rest itself; the whole name. */
function referenceMatch(glob: string, name: string): boolean {
  const memo = new Map<string, boolean>();
  const go = (g: number, n: number): boolean => {
    const key = `${g},${n}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let r: boolean;
    if (g === glob.length) r = n === name.length;
    else if (glob[g] === '*') r = go(g + 1, n) || (n < name.length && go(g, n + 1));
    else r = n < name.length && (glob[g] === '?' || glob[g] === name[n]) && go(g + 1, n + 1);
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}

describe('--tp-plan globs', () => {
  it('match the whole layer name: * any run, ? one character, \\ escapes', () => {
    const m = (glob: string, name: string): boolean => compileNamePattern(glob, 'x').test(name);
    expect(m('*mlp.fc', 'blocks.0.mlp.fc')).toBe(true);
    expect(m('*mlp.fc', 'blocks.0.mlp.fc2')).toBe(false);
    expect(m('mlp.fc', 'blocks.0.mlp.fc')).toBe(false);
    expect(m('blocks.?.attn*', 'blocks.3.attn.qkv')).toBe(true);
    expect(m('blocks.?.attn*', 'blocks.13.attn.qkv')).toBe(false);
    expect(m('a.b', 'axb')).toBe(false); // '.' is a dot, not any character
    expect(m('\\*x', '*x')).toBe(true);
    expect(m('\\*x', 'ax')).toBe(false);
    expect(m('*', '')).toBe(true);
  });

  it('agree with the definition on random globs and names', () => {
    const alphabet = fc.constantFrom('a', 'b', '.', '*', '?');
    fc.assert(fc.property(fc.array(alphabet, { maxLength: 8 }), fc.array(fc.constantFrom('a', 'b', '.'), { maxLength: 12 }), (g, n) => {
      const glob = g.join('');
      const name = n.join('');
      expect(compileNamePattern(glob, 'x').test(name), `${glob} on ${name}`).toBe(referenceMatch(glob, name));
    }), { numRuns: 2000 });
  });

  it('refuse regular-expression syntax and long keys, with bounded messages', () => {
    // `^(.+)+!$` as a RegExp ran > 180 s on a GPT-3 graph.
    expect(() => parseTpPlan('p.json', '{ "^(.+)+!$": "column" }')).toThrow(
      /^--tp-plan p\.json: key '\^\(\.\+\)\+!\$' has '\^': keys are globs over the whole layer name \(\* any characters, \? one character, \\ escapes them\), not regular expressions$/,
    );
    expect(() => parseTpPlan('p.json', '{ "mlp\\\\.fc$": "row" }')).toThrow(/has '\$'/);
    const long = 'a'.repeat(300);
    expect(() => parseTpPlan('p.json', JSON.stringify({ [long]: 'row' }))).toThrow(/key 'a+\.\.\.\(220 characters left out\)\.\.\.a+' is 300 characters, more than the limit of 256$/);
    const many = Object.fromEntries(Array.from({ length: 4097 }, (_, i) => [`k${i}`, 'row']));
    expect(() => parseTpPlan('p.json', JSON.stringify(many))).toThrow(/4097 keys, more than the limit of 4096/);
  });

  it('match a star-heavy key on a long name without blowing up', () => {
    // Exponential for a backtracking matcher; the greedy glob matcher takes <= name x key steps.
    const key = `${'*a'.repeat(100)}b`;
    const name = 'a'.repeat(10_000);
    expect(compileNamePattern(key, 'x').test(name)).toBe(false);
    expect(compileNamePattern(key, 'x').test(`${name}b`)).toBe(true);
  });
});
