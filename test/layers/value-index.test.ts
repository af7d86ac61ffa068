import { describe, expect, it } from 'vitest';
import { writeGptModel } from '../../bench/models/gpt-graph.js';
import { builtValueLinks, valueLinks } from '../../src/ir/graph.js';
import { ValueIndex, valueIndexOf } from '../../src/layers/value-index.js';
import { inferModel } from '../../src/pipeline.js';

// Ground truth: the graph's own links (ir/graph.ts, maps by value name) and its initializer list.
describe('the value index answers as the graph links do', () => {
  const { inferred } = inferModel(writeGptModel({ layers: 2, hidden: 32, heads: 2, seq: 8, batch: 2, vocab: 50, fusedQkv: true, tiedHead: true }));
  const index = new ValueIndex(inferred);
  const links = valueLinks(inferred.order);

  it('every node input and output has the id of its name, and ids name initializers first', () => {
    for (const [position, node] of inferred.order.entries()) {
      for (const [i, name] of node.inputs.entries()) expect(index.inputId(position, i)).toBe(name === '' ? -1 : index.idOf(name));
      for (const [i, name] of node.outputs.entries()) expect(index.outputId(position, i)).toBe(name === '' ? -1 : index.idOf(name));
    }
    for (const name of inferred.initializerNames) expect(index.isInitializer(index.idOf(name) ?? -1)).toBe(true);
    expect(index.initializerCount).toBe(inferred.initializerNames.size);
  });

  it('producers, sole consumers and infos match', () => {
    for (const [name, info] of inferred.values) {
      const id = index.idOf(name);
      if (id === undefined) continue; // a value no node reads nor writes (an unused input)
      expect(index.producer(id)).toBe(links.producer.get(name));
      const consumers = links.consumers.get(name) ?? [];
      expect(index.soleConsumer(id)).toBe(consumers.length === 1 ? consumers[0] : undefined);
      expect(index.info(id)).toBe(info);
    }
  });

  it('once an index exists, the graph links it answers are those the maps give', () => {
    const { inferred: other } = inferModel(writeGptModel({ layers: 2, hidden: 32, heads: 2, seq: 8, batch: 2, vocab: 50, mlp: 'swiglu', rotary: true, norm: 'rms' }));
    valueIndexOf(other);
    const answered = valueLinks(other.order);
    const built = builtValueLinks(other.order);
    expect(answered).not.toBe(built);
    for (const name of [...other.values.keys(), '', 'no such value']) {
      expect(answered.producer.get(name)).toBe(built.producer.get(name));
      expect(answered.consumers.get(name)).toEqual(built.consumers.get(name));
      expect(answered.consumers.has(name)).toBe(built.consumers.has(name));
    }
    expect([...answered.consumers.keys()]).toEqual([...built.consumers.keys()]);
  });

  it('an inference whose values are a plain Map (no shared ids) indexes to the same answers by name', () => {
    const byMap = new ValueIndex({ ...inferred, values: new Map(inferred.values) });
    expect(byMap.initializerCount).toBe(index.initializerCount);
    for (const [position, node] of inferred.order.entries()) {
      for (const [i, name] of node.inputs.entries()) expect(byMap.inputId(position, i)).toBe(name === '' ? -1 : byMap.idOf(name));
      for (const name of [...node.inputs, ...node.outputs]) {
        if (name === '') continue;
        const a = byMap.idOf(name) ?? -1;
        const b = index.idOf(name) ?? -1;
        expect(byMap.names[a]).toBe(name);
        expect(index.names[b]).toBe(name);
        expect(byMap.producer(a)).toBe(index.producer(b));
        expect(byMap.soleConsumer(a)).toBe(index.soleConsumer(b));
        expect(byMap.origin(a)).toBe(index.origin(b));
        expect(byMap.info(a)).toBe(index.info(b));
        expect(byMap.info(a)).toBe(inferred.values.get(name));
      }
    }
  });
});
