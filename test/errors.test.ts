import { describe, expect, it } from 'vitest';
import { at, defined, fsErrorWords, InputError, internalError, last, MAX_MESSAGE_CHARS, MAX_QUOTED_CHARS, mapGet, shown } from '../src/errors.js';

describe('internal-invariant helpers name what broke', () => {
  it('at() returns the element or names the index and the range', () => {
    expect(at([4, 5], 1)).toBe(5);
    expect(() => at([4, 5], 2)).toThrow('internal error: index 2 is outside 0..1');
  });
  it('defined() passes a value through (0 and empty strings too) and names a missing one', () => {
    expect(defined(0, 'x')).toBe(0);
    expect(defined('', 'x')).toBe('');
    expect(() => defined(undefined, 'the stage of layer fc1')).toThrow('internal error: the stage of layer fc1 is missing');
  });
  it('mapGet() names the map and the key', () => {
    const m = new Map([['a', 1]]);
    expect(mapGet(m, 'a', 'ranks by name')).toBe(1);
    expect(() => mapGet(m, 'b', 'ranks by name')).toThrow('internal error: ranks by name has no entry for b');
  });
  it('last() returns the last element and names an empty array', () => {
    expect(last([1, 2, 3], 'stack')).toBe(3);
    expect(() => last([], 'the work stack')).toThrow('internal error: the work stack is empty');
  });
  it('internalError() throws a plain Error (a bug, not an InputError)', () => {
    expect(() => internalError('boom')).toThrow(new Error('internal error: boom'));
  });
  it('fsErrorWords() words known codes, else the code, else the message', () => {
    expect(fsErrorWords({ code: 'ENOENT' })).toBe('no such file');
    expect(fsErrorWords({ code: 'EWHATEVER' })).toBe('EWHATEVER');
    expect(fsErrorWords(new Error('plain'))).toBe('plain');
  });
});

describe('InputError messages stay one bounded line', () => {
  it('escapes control characters and cuts a huge message in its middle', () => {
    expect(new InputError('a\u001b[31mb\nc').message).toBe('a\\x1b[31mb\\x0ac');
    const huge = new InputError(`x.json: '${'p'.repeat(50_000_000)}' is bad`).message;
    expect(huge.length).toBeLessThan(MAX_MESSAGE_CHARS + 100);
    expect(huge.startsWith("x.json: 'ppp")).toBe(true);
    expect(huge.endsWith("ppp' is bad")).toBe(true);
    expect(huge).toContain(`...(${50_000_000 + 17 - MAX_MESSAGE_CHARS} characters left out)...`);
  });
  it('shown() cuts a quoted user string to 80 characters', () => {
    expect(shown('short')).toBe('short');
    expect(shown('q'.repeat(1000)).length).toBeLessThan(MAX_QUOTED_CHARS + 40);
  });
});
