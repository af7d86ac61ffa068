/** The namer's set of taken names: what a Set of strings would answer, through growth and hash collisions. */
import { describe, expect, it } from 'vitest';
import { NameSet, nameHash } from '../../src/layers/name-set.js';

describe('nameHash', () => {
  it('is 32-bit FNV-1a of the code units (the published test vectors)', () => {
    expect(nameHash('') >>> 0).toBe(0x811c9dc5);
    expect(nameHash('a') >>> 0).toBe(0xe40c292c);
    expect(nameHash('foobar') >>> 0).toBe(0xbf9cf968);
  });
});

describe('NameSet', () => {
  it('adds a name once: true the first time, false after', () => {
    const set = new NameSet();
    expect(set.add('fc0')).toBe(true);
    expect(set.add('fc0')).toBe(false);
    expect(set.add('act1.Relu')).toBe(true);
    expect(set.has('fc0') && set.has('act1.Relu')).toBe(true);
    expect(set.has('fc1')).toBe(false);
    expect(set.size).toBe(2);
  });

  it('keeps every name through growth far past the expected count', () => {
    const set = new NameSet(2);
    for (let i = 0; i < 5000; i++) expect(set.add(`layer${i}`)).toBe(true);
    for (let i = 0; i < 5000; i++) expect(set.add(`layer${i}`)).toBe(false);
    expect(set.size).toBe(5000);
    expect(set.has('layer5000')).toBe(false);
  });

  it('tells apart names whose hashes land in one slot', () => {
    // 16 slots at first: names whose hashes agree in the low 4 bits probe on past each other.
    const names = Array.from({ length: 200 }, (_, i) => `n${i}`);
    const sameSlot = names.filter((n) => (nameHash(n) & 15) === (nameHash('n0') & 15)).slice(0, 4);
    expect(sameSlot).toHaveLength(4);
    const set = new NameSet();
    for (const n of sameSlot) expect(set.add(n)).toBe(true);
    for (const n of sameSlot) expect(set.has(n)).toBe(true);
    expect(set.size).toBe(4);
  });

  it('accepts the empty name and names beyond ASCII like any other', () => {
    const set = new NameSet();
    expect(set.add('')).toBe(true);
    expect(set.add('')).toBe(false);
    expect(set.add('\u00b5s')).toBe(true);
    expect(set.has('\u00b5s')).toBe(true);
  });
});
