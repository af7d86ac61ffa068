import { describe, expect, it } from 'vitest';
import { at, defined, fsErrorWords, internalError, last, mapGet } from '../src/errors.js';

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
