/**
 * The execution order: producers before consumers, file order wherever the graph allows it (the
 * reference: repeatedly run the lowest-positioned node whose inputs are all written), with each
 * node's value ids in that order; graphs already in file order (as exporters write them) take a
 * shortcut that must give the same.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Graph, Node } from '../../src/ir/graph.js';
import { orderGraph } from '../../src/shape/topo.js';
import { ValueTable } from '../../src/shape/value-table.js';

const node = (name: string, inputs: string[], outputs: string[]): Node => ({ name, opType: 'Add', domain: '', inputs, outputs, attributes: new Map() });
const graph = (nodes: Node[]): Graph => ({ name: 'g', nodes, inputs: [{ name: 'x', type: { kind: 'unknown' } }], outputs: [], valueInfo: [], initializers: [], sparseInitializers: [] });
const outside = { has: (name: string) => name === 'x' };

/** The reference order: the lowest file position whose reads are all available, again and again. */
function referenceOrder(nodes: readonly Node[]): number[] {
  const written = new Set(['x']);
  const done = new Set<number>();
  const order: number[] = [];
  while (order.length < nodes.length) {
    const next = nodes.findIndex((n, i) => !done.has(i) && n.inputs.every((v) => written.has(v)));
    if (next < 0) throw new Error('cycle');
    done.add(next);
    order.push(next);
    for (const o of nodes[next]?.outputs ?? []) written.add(o);
  }
  return order;
}

/** `table`: empty (the graph input unknown to it) or holding the graph input, as inference's does. */
function ordered(nodes: Node[], table = new ValueTable()): { names: string[]; positions: number[]; inputs: string[][]; outputs: string[][] } {
  const r = orderGraph('m.onnx', graph(nodes), outside, table);
  const { inputIds, inputStart, outputIds, outputStart } = r.nodeValues;
  const inputs = r.order.map((_, j) => Array.from(inputIds.subarray(inputStart[j], inputStart[j + 1]), (id) => table.names[id] ?? '?'));
  const outputs = r.order.map((_, j) => Array.from(outputIds.subarray(outputStart[j], outputStart[j + 1]), (id) => (id < 0 ? '' : (table.names[id] ?? '?'))));
  return { names: r.order.map((n) => n.name), positions: Array.from(r.positions), inputs, outputs };
}

/** A table holding the graph input 'x' (its outputs are then new names: the order's shortcut). */
function tableWithInput(): ValueTable {
  const table = new ValueTable();
  table.set('x', { dtype: 1, shape: [2] });
  return table;
}

describe('orderGraph', () => {
  it('keeps a graph already in file order as it is', () => {
    const r = ordered([node('a', ['x'], ['y']), node('b', ['y', 'x'], ['z']), node('c', ['z', 'y'], ['w'])]);
    expect(r).toEqual({ names: ['a', 'b', 'c'], positions: [0, 1, 2], inputs: [['x'], ['y', 'x'], ['z', 'y']], outputs: [['y'], ['z'], ['w']] });
  });

  it('gives the same order and ids when the table holds the graph input (outputs all new names)', () => {
    const nodes = [node('a', ['x'], ['y']), node('b', ['y', 'x'], ['z']), node('c', ['z', 'y'], ['w'])];
    expect(ordered(nodes, tableWithInput())).toEqual(ordered(nodes));
    const moved = [node('b', ['y'], ['z']), node('a', ['x'], ['y']), node('c', ['x'], ['w'])];
    expect(ordered(moved, tableWithInput())).toEqual({ names: ['a', 'b', 'c'], positions: [1, 0, 2], inputs: [['x'], ['y'], ['x']], outputs: [['y'], ['z'], ['w']] });
  });

  // A chain: every read the output just before or the next weight, as exporters write one.
  it('gives a chain its ids in file order, and names a chain read nothing provides', () => {
    const withWeights = (): ValueTable => {
      const t = tableWithInput();
      for (const w of ['w1', 'w2']) t.set(w, { dtype: 1, shape: [2, 2] });
      return t;
    };
    const table = withWeights();
    const nodes = [node('a', ['x', 'w1'], ['y']), node('b', ['y', 'w2', ''], ['z']), node('c', ['z'], ['out'])];
    expect(ordered(nodes, table)).toEqual({ names: ['a', 'b', 'c'], positions: [0, 1, 2], inputs: [['x', 'w1'], ['y', 'w2', '?'], ['z']], outputs: [['y'], ['z'], ['out']] });
    // Reads of an earlier output and of outside values in any order, looked up by name.
    const residual = [node('a', ['x', 'w2'], ['y']), node('b', ['y', 'w1'], ['z']), node('c', ['z', 'y', 'x'], ['out'])];
    expect(ordered(residual, withWeights())).toEqual({ names: ['a', 'b', 'c'], positions: [0, 1, 2], inputs: [['x', 'w2'], ['y', 'w1'], ['z', 'y', 'x']], outputs: [['y'], ['z'], ['out']] });
    const unset = tableWithInput();
    unset.intern('w'); // a name with no info that nothing outside provides
    expect(() => ordered([node('a', ['x', 'w'], ['y'])], unset)).toThrow("m.onnx: node 'a' (Add) reads 'w', which no node, input or initializer provides");
  });

  it('gives every output of nodes with several (more ids than nodes) and omitted ones', () => {
    const nodes = [node('a', ['x'], ['y1', '', 'y2', 'y3']), node('b', ['y3', 'y1'], ['z', 'z2']), node('c', ['z2'], ['w'])];
    for (const table of [new ValueTable(), tableWithInput()]) {
      expect(ordered(nodes, table)).toEqual({ names: ['a', 'b', 'c'], positions: [0, 1, 2], inputs: [['x'], ['y3', 'y1'], ['z2']], outputs: [['y1', '', 'y2', 'y3'], ['z', 'z2'], ['w']] });
    }
  });

  // Ground truth: ONNX's rule that a value has one producer and graph inputs have none.
  it('names a value written twice and a write to a graph input, whether the table holds the input or not', () => {
    for (const table of [() => new ValueTable(), tableWithInput]) {
      expect(() => ordered([node('a', ['x'], ['y']), node('b', ['x'], ['y'])], table())).toThrow("m.onnx: value 'y' has two producers: node 'a' (Add) and node 'b' (Add)");
      expect(() => ordered([node('a', ['x'], ['y', 'y'])], table())).toThrow("m.onnx: value 'y' has two producers: node 'a' (Add) and node 'a' (Add)");
      expect(() => ordered([node('a', ['x'], ['y']), node('b', ['y'], ['x'])], table())).toThrow("m.onnx: node 'b' (Add) writes 'x', which is a graph input");
    }
  });

  it('moves a consumer written before its producer after it, and its ids with it', () => {
    const r = ordered([node('b', ['y'], ['z']), node('a', ['x'], ['y']), node('c', ['x'], ['w'])]);
    expect(r).toEqual({ names: ['a', 'b', 'c'], positions: [1, 0, 2], inputs: [['x'], ['y'], ['x']], outputs: [['y'], ['z'], ['w']] });
  });

  it('names a read nothing provides and a cycle, in both graph kinds', () => {
    expect(() => ordered([node('a', ['x'], ['y']), node('b', ['nowhere'], ['z'])])).toThrow("m.onnx: node 'b' (Add) reads 'nowhere', which no node, input or initializer provides");
    expect(() => ordered([node('b', ['y'], ['z']), node('a', ['x'], ['y']), node('c', ['nowhere'], ['w'])])).toThrow("node 'c' (Add) reads 'nowhere', which no node");
    expect(() => ordered([node('a', ['x', 'z'], ['y']), node('b', ['y'], ['z'])])).toThrow('m.onnx: the graph has a cycle through');
    expect(() => ordered([node('a', ['y'], ['y'])])).toThrow('m.onnx: the graph has a cycle through');
  });

  it('gives the reference order on any acyclic graph, written in any node order', () => {
    // Node i reads x or outputs of nodes before it in creation order; the file order is shuffled.
    const spec = fc.array(fc.array(fc.nat(), { maxLength: 3 }), { minLength: 1, maxLength: 12 }).chain((reads) =>
      fc.tuple(fc.constant(reads), fc.shuffledSubarray(reads.map((_, i) => i), { minLength: reads.length, maxLength: reads.length })));
    fc.assert(fc.property(spec, ([reads, filePositions]) => {
      const made = reads.map((r, i) => node(`n${i}`, r.map((k) => (i === 0 || k % (i + 1) === i ? 'x' : `v${k % i}`)), [`v${i}`]));
      const nodes = filePositions.map((i) => made[i] as Node);
      const r = ordered(nodes);
      const expected = referenceOrder(nodes);
      expect(r.positions).toEqual(expected);
      expect(r.names).toEqual(expected.map((i) => nodes[i]?.name));
      expect(r.inputs).toEqual(expected.map((i) => nodes[i]?.inputs));
      // The same with the graph input in the table (the one-pass shortcut for graphs in file order).
      expect(ordered(nodes, tableWithInput())).toEqual(r);
    }));
  });
});
