import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FirstIdNames, InfoColumn, NameIndex, ValueTable } from '../../src/shape/value-table.js';
import type { TensorInfo } from '../../src/shape/tensor-info.js';

// Ground truth: a plain Map given the same sets in the same order.
describe('ValueTable reads as a Map', () => {
  const names = fc.constantFrom('a', 'b', 'c', 'd', 'x.weight', '');
  const step = fc.oneof(
    fc.record({ kind: fc.constant('set' as const), name: names, rank: fc.nat(3) }),
    fc.record({ kind: fc.constant('intern' as const), name: names }),
  );

  it('after any interns and sets, get, has, size and iteration order match the Map', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const table = new ValueTable();
        const map = new Map<string, TensorInfo>();
        for (const s of steps) {
          if (s.kind === 'intern') {
            table.intern(s.name);
            continue;
          }
          const info: TensorInfo = { dtype: 1, shape: new Array<number>(s.rank).fill(2) };
          table.set(s.name, info);
          map.set(s.name, info);
        }
        expect(table.size).toBe(map.size);
        expect([...table]).toEqual([...map]);
        expect([...table.keys()]).toEqual([...map.keys()]);
        expect([...table.values()]).toEqual([...map.values()]);
        for (const name of ['a', 'b', 'c', 'd', 'x.weight', '', 'never']) {
          expect(table.get(name)).toBe(map.get(name));
          expect(table.has(name)).toBe(map.has(name));
          const id = table.idOf(name);
          if (id !== undefined) expect(table.infoAt(id)).toBe(map.get(name));
        }
        const seen: [string, TensorInfo][] = [];
        table.forEach((info, name) => {
          seen.push([name, info]);
        });
        expect(seen).toEqual([...map]);
      }),
    );
  });

  // Many names (the table's index grows and rehashes several times), alike ones and absent ones.
  it('over thousands of names, ids and lookups match a Map given the same names', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.nat(5000).map((i) => `v${i}`), fc.string({ unit: 'grapheme', maxLength: 3 })), { minLength: 1, maxLength: 3000 }), (names) => {
        const table = new ValueTable();
        const ids = new Map<string, number>();
        for (const [i, name] of names.entries()) {
          if (i % 700 === 0) table.reserve(i); // reserving room never changes an id
          if (!ids.has(name)) ids.set(name, ids.size);
          expect(table.intern(name)).toBe(ids.get(name));
        }
        expect(table.idCount).toBe(ids.size);
        expect(table.names).toEqual([...ids.keys()]);
        for (const name of [...names, 'never', 'v5001', '']) expect(table.idOf(name)).toBe(ids.get(name));
      }),
      { numRuns: 30 },
    );
  });

  it('ids are dense and stable: a name keeps the id it was first given', () => {
    const table = new ValueTable();
    expect(table.intern('a')).toBe(0);
    expect(table.intern('b')).toBe(1);
    expect(table.intern('a')).toBe(0);
    table.set('c', { dtype: 1, shape: [] });
    expect(table.idOf('c')).toBe(2);
    expect(table.idCount).toBe(3);
    expect(table.size).toBe(1);
    expect(table.names).toEqual(['a', 'b', 'c']);
  });

  it('mapInfos keeps ids and order and changes only the infos', () => {
    const table = new ValueTable();
    table.set('b', { dtype: 1, shape: [1] });
    table.intern('unset');
    table.set('a', { dtype: 1, shape: [2] });
    const doubled = table.mapInfos((info) => ({ ...info, shape: info.shape?.map((d) => (typeof d === 'number' ? 2 * d : d)) }));
    expect([...doubled.keys()]).toEqual(['b', 'a']);
    expect(doubled.get('a')?.shape).toEqual([4]);
    expect(doubled.idOf('a')).toBe(table.idOf('a'));
    expect(table.get('a')?.shape).toEqual([2]);
    expect(doubled.has('unset')).toBe(false);
  });
});

describe('ValueTable room and order', () => {
  it('reserved ahead, reads exactly the names interned, and interns on after they were read', () => {
    const table = new ValueTable();
    table.reserve(1000);
    for (const name of ['a', 'b', 'c']) table.intern(name);
    expect(table.names).toEqual(['a', 'b', 'c']);
    expect(table.names.length).toBe(3);
    expect(table.intern('d')).toBe(3);
    expect(table.nameAt(3)).toBe('d');
    expect(table.nameAt(4)).toBeUndefined();
    expect(table.names).toEqual(['a', 'b', 'c', 'd']);
  });

  // Ground truth: a Map given the same sets (its iteration is first-set order).
  it('iterates in first-set order when ids are set out of id order, also through tables over it', () => {
    const table = new ValueTable();
    for (const name of ['x', 'y', 'z']) table.intern(name);
    const info = (n: number): TensorInfo => ({ dtype: 1, shape: [n] });
    table.setAt(0, info(0));
    table.setAt(2, info(2));
    table.setAt(1, info(1));
    table.setAt(2, info(3)); // set again: keeps its place
    expect([...table.keys()]).toEqual(['x', 'z', 'y']);
    expect(table.size).toBe(3);
    expect([...table.mapInfos((i) => i).keys()]).toEqual(['x', 'z', 'y']);
    expect([...table.over(new Map()).keys()]).toEqual(['x', 'z', 'y']);
  });

  it('a table over one set in id order keeps its own values when the first is set on', () => {
    const table = new ValueTable();
    table.set('a', { dtype: 1, shape: [1] });
    table.set('b', { dtype: 1, shape: [2] });
    table.intern('outer');
    const over = table.over(new Map([['outer', { dtype: 1, shape: [9] }]]));
    table.set('c', { dtype: 1, shape: [3] });
    expect([...table.keys()]).toEqual(['a', 'b', 'c']);
    expect([...over.keys()]).toEqual(['a', 'b']);
    expect(over.get('outer')?.shape).toEqual([9]);
    expect(over.has('c')).toBe(false);
  });
});

describe('InfoColumn', () => {
  const a: TensorInfo = { dtype: 1, shape: [1] };
  const b: TensorInfo = { dtype: 1, shape: [2] };
  const c: TensorInfo = { dtype: 1, shape: [3] };
  it('gives back each id its info, holding an info given again right after another once', () => {
    const column = new InfoColumn(4);
    const given = [a, b, a, b, c, a];
    for (const [id, info] of given.entries()) column.set(id, info);
    expect(given.map((_, id) => column.at(id))).toEqual(given);
    expect(given.every((info, id) => column.at(id) === info)).toBe(true);
    // a, b, then a and b again (the last two), c, then a (no longer one of the last two): 4 held.
    expect(column.distinctCount).toBe(4);
    expect(column.length).toBe(8); // grown twice as long for id 4
    expect([column.has(5), column.has(6), column.has(100)]).toEqual([true, false, false]);
    expect(column.at(100)).toBeUndefined();
  });

  it('maps each distinct info once and keeps every id', () => {
    const column = new InfoColumn();
    for (const [id, info] of [a, a, b, a].entries()) column.set(id, info);
    let calls = 0;
    const mapped = column.mapped((info) => {
      calls++;
      return { ...info, dtype: 2 };
    });
    expect(calls).toBe(2);
    expect([0, 1, 2, 3].map((id) => mapped.at(id)?.shape)).toEqual([[1], [1], [2], [1]]);
    expect([0, 1, 2, 3].map((id) => mapped.at(id)?.dtype)).toEqual([2, 2, 2, 2]);
    expect(column.at(0)).toBe(a);
  });
});

describe('FirstIdNames', () => {
  // Ground truth: a Set of the same first names.
  it('reads as the Set of the table names of its first ids', () => {
    const table = new ValueTable();
    for (const name of ['w1', 'w2', 'b', 'x', 'y']) table.intern(name);
    const names = new FirstIdNames(table, 3);
    const set = new Set(['w1', 'w2', 'b']);
    expect(names.size).toBe(3);
    expect([...names]).toEqual([...set]);
    expect([...names.entries()]).toEqual([...set.entries()]);
    expect([...names.keys()]).toEqual([...set.keys()]);
    for (const name of ['w1', 'b', 'x', 'y', 'never']) expect(names.has(name)).toBe(set.has(name));
    const seen: string[] = [];
    names.forEach((name, again) => {
      seen.push(name, again);
    });
    expect(seen).toEqual(['w1', 'w1', 'w2', 'w2', 'b', 'b']);
  });
});

describe('the ids the topological order gives', () => {
  // Ground truth: the nodes' own input and output names.
  it('name every node input and output, and the order is the inferred one', async () => {
    const { writeGptModel } = await import('../../bench/models/gpt-graph.js');
    const { inferModel } = await import('../../src/pipeline.js');
    const { inferred } = inferModel(writeGptModel({ layers: 2, hidden: 32, heads: 2, seq: 8, batch: 2, vocab: 50, mlp: 'swiglu', rotary: true, norm: 'rms' }));
    const { values, nodeValues: ids } = inferred;
    expect(ids.inputStart.length).toBe(inferred.order.length + 1);
    for (const [j, node] of inferred.order.entries()) {
      const from = ids.inputStart[j] ?? 0;
      expect((ids.inputStart[j + 1] ?? 0) - from).toBe(node.inputs.length);
      for (const [i, name] of node.inputs.entries()) {
        const id = ids.inputIds[from + i] ?? -2;
        expect(id < 0 ? '' : values.names[id]).toBe(name);
      }
      const out = ids.outputStart[j] ?? 0;
      expect((ids.outputStart[j + 1] ?? 0) - out).toBe(node.outputs.length);
      for (const [i, name] of node.outputs.entries()) {
        const id = ids.outputIds[out + i] ?? -2;
        expect(id < 0 ? '' : values.names[id]).toBe(name);
        if (id >= 0) expect(values.infoAt(id)).toBe(inferred.values.get(name));
      }
    }
    // The initializers hold the first ids, in file order.
    expect(values.names.slice(0, inferred.initializerNames.size)).toEqual([...inferred.initializerNames]);
  });
});

describe('initializerNames', () => {
  // Ground truth: the set of the file's initializer names, in file order.
  const infer = async (initializers: string[], inputs: string[]) => {
    const { buildModel, FLOAT } = await import('../helpers/onnx-builder.js');
    const { readModel } = await import('../../src/onnx/reader.js');
    const { inferShapes } = await import('../../src/shape/infer.js');
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-init-'));
    const path = join(dir, 'm.onnx');
    writeFileSync(path, buildModel({
      inputs: inputs.map((name) => ({ name, dtype: FLOAT, dims: [2, 2] })),
      outputs: [{ name: 'y', dtype: FLOAT, dims: [2, 2] }],
      initializers: initializers.map((name) => ({ name, dtype: FLOAT, dims: [2, 2] })),
      nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['s'] }, { op: 'Add', inputs: ['s', 'b'], outputs: ['y'] }],
    }));
    return inferShapes(readModel(path)).initializerNames;
  };

  it('are the initializers, in file order, also when one is a graph input too (IR < 4)', async () => {
    const names = await infer(['w', 'b'], ['x', 'w', 'b']);
    expect([...names]).toEqual(['w', 'b']);
    expect(['x', 'w', 'b', 's', 'y'].map((n) => names.has(n))).toEqual([false, true, true, false, false]);
  });

  it('count a name given twice once', async () => {
    const names = await infer(['w', 'b', 'w'], ['x']);
    expect([...names]).toEqual(['w', 'b']);
    expect(names.size).toBe(2);
    expect(names.has('x')).toBe(false);
  });
});

describe('NameIndex against colliding names', () => {
  it('names that all hash alike (a crafted model) go over to a Map: ids unchanged, lookups linear', () => {
    const index = new NameIndex(() => 7);
    const names = Array.from({ length: 5000 }, (_, i) => `/blocks.${i}/MatMul_output_0`);
    for (const [i, name] of names.entries()) expect(index.intern(name)).toBe(i);
    expect(index.usesMap).toBe(true);
    names.forEach((name, i) => {
      expect(index.intern(name)).toBe(i);
      expect(index.find(name)).toBe(i);
    });
    expect(index.find('absent')).toBe(-1);
    expect(index.names).toEqual(names);
    // Probing stopped at the first run of 64: about 64 x 65 / 2 slots in all (a table kept to the end would probe ~12.5 M).
    expect(index.probes).toBeLessThan(10_000);
  });

  // A table of any size: a hash's probe starts at its scaled slot and wraps from the last slot to the first.
  it('a table of a size not a power of two wraps from its last slot to its first', () => {
    const index = new NameIndex(() => -1); // every name's probe starts at the last of the 10 slots
    index.reserve(5);
    expect(['a', 'b', 'c'].map((name) => index.intern(name))).toEqual([0, 1, 2]);
    expect(['a', 'b', 'c', 'd'].map((name) => index.find(name))).toEqual([0, 1, 2, -1]);
    expect(index.usesMap).toBe(false);
    // Slots 9, 0, 1 hold a, b, c: interning probed 0 + 1 + 2 slots past the first, finding 0 + 1 + 2 + 3.
    expect(index.probes).toBe(9);
  });

  it("an exporter's names keep the table: about one probe per lookup", () => {
    const index = new NameIndex();
    const names = Array.from({ length: 100_000 }, (_, i) => `/model/layers.${i >> 1}/${i % 2 === 0 ? 'MatMul' : 'Relu'}_output_0`);
    index.reserve(names.length);
    for (const name of names) index.intern(name);
    for (const name of names) index.find(name);
    expect(index.usesMap).toBe(false);
    expect(index.probes / (2 * names.length)).toBeLessThan(2);
  });
});
