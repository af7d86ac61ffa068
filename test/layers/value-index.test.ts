import { describe, expect, it } from 'vitest';
import { writeGptModel } from '../../bench/models/gpt-graph.js';
import { valueLinks } from '../../src/ir/graph.js';
import { ValueIndex } from '../../src/layers/value-index.js';
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
    const initializers = index.names.filter((_, id) => index.isInitializer(id));
    expect(initializers).toEqual([...inferred.initializerNames]);
    expect(index.names.slice(0, initializers.length)).toEqual(initializers);
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

  it("the index's links answer as the maps built from the nodes do", () => {
    const { inferred: other } = inferModel(writeGptModel({ layers: 2, hidden: 32, heads: 2, seq: 8, batch: 2, vocab: 50, mlp: 'swiglu', rotary: true, norm: 'rms' }));
    const answered = new ValueIndex(other).links;
    const built = valueLinks(other.order);
    expect(answered).not.toBe(built);
    for (const name of [...other.values.keys(), '', 'no such value']) {
      expect(answered.producer.get(name)).toBe(built.producer.get(name));
      expect(answered.consumers.get(name)).toEqual(built.consumers.get(name));
      expect(answered.consumers.has(name)).toBe(built.consumers.has(name));
    }
    expect([...answered.consumers.keys()]).toEqual([...built.consumers.keys()]);
  });
});
