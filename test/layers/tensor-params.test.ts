import { describe, expect, it } from 'vitest';
import { TensorParams } from '../../src/layers/tensor-params.js';

// Ground truth: a Map built from the same entries (TensorParams stands in for it on every layer).
describe('TensorParams answers as the Map of the same entries would', () => {
  const cases: [string, number][][] = [[], [['w', 64]], [['w', 64], ['b', 8]], [['w', 64], ['b', 8], ['w', 16]], [['a', 1], ['b', 2], ['c', 3]]];
  it.each(cases)('entries %j', (...entries) => {
    const params = new TensorParams(entries);
    const map = new Map(entries);
    expect(params.size).toBe(map.size);
    expect([...params]).toEqual([...map]);
    expect([...params.keys()]).toEqual([...map.keys()]);
    expect([...params.values()]).toEqual([...map.values()]);
    for (const name of ['w', 'b', 'a', 'missing']) {
      expect(params.get(name)).toBe(map.get(name));
      expect(params.has(name)).toBe(map.has(name));
    }
    const seen: [string, number][] = [];
    params.forEach((count, name) => {
      seen.push([name, count]);
    });
    expect(seen).toEqual([...map]);
    expect(JSON.stringify(params)).toBe(JSON.stringify(map));
  });
});

describe('TensorParams of distinct names and counts answers as the Map of those pairs', () => {
  const cases: [string[], number[]][] = [[[], []], [['w'], [64]], [['w', 'b', 'c'], [64, 8, 3]]];
  it.each(cases)('names %j', (names, counts) => {
    const params = new TensorParams(names, counts);
    const map = new Map(names.map((n, i) => [n, counts[i] ?? -1]));
    expect(params.size).toBe(map.size);
    expect([...params]).toEqual([...map]);
    for (const name of [...names, 'missing']) expect(params.get(name)).toBe(map.get(name));
  });
});
