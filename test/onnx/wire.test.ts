/** Wire reads the decoders build on: a string equal to one already read is that string. */
import { describe, expect, it } from 'vitest';
import { readModel } from '../../src/onnx/reader.js';
import { BufferWire, WireError } from '../../src/onnx/wire.js';
import protobuf from 'protobufjs/minimal.js';
import { buildModel, FLOAT, writeTensor } from '../helpers/onnx-builder.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const field = (...bytes: number[]): Uint8Array => Uint8Array.from([bytes.length, ...bytes]);

describe('BufferWire.name', () => {
  it('gives the known string its bytes spell, else decodes the name, and moves past the field', () => {
    const w = new BufferWire(Uint8Array.from([...field(0x76, 0x31), ...field(0x78), ...field(0xc3, 0xa9)]), 0);
    expect(w.name(['v', 'v1'])).toBe('v1');
    expect(w.pos).toBe(3);
    expect(w.name(['v1'])).toBe('x');
    expect(w.pos).toBe(5);
    expect(w.name()).toBe('é'); // UTF-8
    expect(w.pos).toBe(8);
  });

  it('decodes bytes that are not ASCII as string() does, never as a known string of the same characters', () => {
    // 0xE9 alone is invalid UTF-8 (U+FFFD), though its Latin-1 character is the known 'é'.
    const w = new BufferWire(field(0xe9), 0);
    expect(w.name(['é'])).toBe('\uFFFD');
  });

  // Ground truth: C0 controls (U+0000..U+001F) and DEL are refused wherever they are, as a model
  // error (not "not a valid ONNX file") at the field's offset, quoting the name as JSON.
  it.each<[string, number[], string]>([
    ['an ASCII name', [0x61, 0x0a, 0x62], 'a\\nb'],
    ['a name with DEL', [0x61, 0x7f], 'a\x7f'],
    ['a UTF-8 name', [0xc3, 0xa9, 0x01], 'é\\u0001'],
    ['a control byte after an invalid UTF-8 lead byte', [0xc3, 0x02], '\ufffd\\u0002'],
  ])('refuses %s holding a control character, even when a known string has the same bytes', (_, bytes, quoted) => {
    const known = [String.fromCharCode(...bytes)];
    const w = new BufferWire(Uint8Array.from([0x00, ...field(...bytes)]), 0);
    w.skip(1);
    let error: unknown;
    try {
      w.name(known);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).message).toBe(`the name "${quoted}" holds control characters`);
    expect((error as WireError).offset).toBe(1);
    expect((error as WireError).malformed).toBe(false);
  });
});

describe('decoding', () => {
  it('a node input naming the output of the node before it reads as that name; a lone such input shares that list (lists are never changed)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-wire-'));
    const path = join(dir, 'chain.onnx');
    writeFileSync(path, buildModel({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 3] }],
      outputs: [{ name: 'z', dtype: FLOAT, dims: [2, 3] }],
      nodes: [
        { op: 'Relu', inputs: ['x'], outputs: ['y'] },
        { op: 'Relu', inputs: ['y'], outputs: ['y2'] },
        { op: 'Add', inputs: ['y2', 'y'], outputs: ['z'] },
      ],
    }));
    const nodes = readModel(path).model.graph.nodes;
    expect(nodes.map((n) => n.inputs)).toEqual([['x'], ['y'], ['y2', 'y']]);
    expect(nodes[1]?.inputs).toBe(nodes[0]?.outputs);
    expect(nodes[2]?.inputs).not.toBe(nodes[1]?.outputs);
    expect(nodes.map((n) => n.opType)).toEqual(['Relu', 'Relu', 'Add']);
  });

  // Initializers are matched against the next few reads of names no node before writes; in any
  // other order, unread, or named like a read with other bytes, each keeps its own name.
  it('initializers in or out of the order nodes read them decode with their own names', () => {
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-wire-'));
    const path = join(dir, 'weights.onnx');
    const weights = ['w4', 'w0', 'unread', 'w1', 'w2', 'w3', 'w5', 'w6', 'w7', 'w8', 'w9', 'w10'];
    const reads = ['w0', 'w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8', 'w9', 'w10'];
    writeFileSync(path, buildModel({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2] }],
      outputs: [{ name: 'v10', dtype: FLOAT, dims: [2] }],
      initializers: weights.map((name) => ({ name, dtype: FLOAT, dims: [2] })),
      nodes: reads.map((w, i) => ({ op: 'Add', inputs: [i === 0 ? 'x' : `v${i - 1}`, w], outputs: [`v${i}`] })),
    }));
    const { graph } = readModel(path).model;
    expect(graph.initializers.map((t) => t.name)).toEqual(weights);
    expect(graph.nodes.map((n) => n.inputs[1])).toEqual(reads);
  });
});

describe('graph fields in any order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-order-'));
  type W = protobuf.Writer;
  const message = (w: W, field: number, body: (w: W) => void): void => {
    w.uint32((field << 3) | 2).fork();
    body(w);
    w.ldelim();
  };
  const node = (w: W, input: string, output: string): void => message(w, 1, (n) => n.uint32(10).string(input).uint32(18).string(output).uint32(34).string('Relu'));
  const tensor = (w: W, name: string, dims: number[]): void => message(w, 5, (t) => writeTensor(t, { name, dtype: FLOAT, dims }));
  /** A model whose graph holds `body`'s fields in the order written. */
  const model = (name: string, body: (g: W) => void): string => {
    const w = protobuf.Writer.create();
    w.uint32(8).int64(7);
    message(w, 7, body);
    message(w, 8, (o) => o.uint32(10).string('').uint32(16).int64(13));
    const path = join(dir, `${name}.onnx`);
    writeFileSync(path, w.finish());
    return path;
  };

  // Nodes and initializers are decoded run by run: a run ends at any other field, and decoding
  // goes on after it with the field's own decoder.
  it('nodes and initializers split by other fields keep their file order and names', () => {
    const path = model('split', (g) => {
      node(g, 'x', 'a');
      tensor(g, 'w0', [2]);
      g.uint32(18).string('split');
      node(g, 'a', 'b');
      node(g, 'b', 'c');
      tensor(g, 'w1', [3]);
      tensor(g, 'w2', [4]);
      g.uint32(18).string('split-graph');
      node(g, 'c', 'd');
    });
    const { graph } = readModel(path).model;
    expect(graph.name).toBe('split-graph');
    expect(graph.nodes.map((n) => [...n.inputs, ...n.outputs])).toEqual([['x', 'a'], ['a', 'b'], ['b', 'c'], ['c', 'd']]);
    expect(graph.initializers.map((t) => [t.name, ...t.dims])).toEqual([['w0', 2], ['w1', 3], ['w2', 4]]);
  });

  // Dims are read into one reused list: a tensor of lower rank after one of higher rank must not
  // keep the earlier tensor's trailing dims.
  it('each tensor has its own rank after tensors of higher rank', () => {
    const path = model('ranks', (g) => {
      node(g, 'x', 'y');
      tensor(g, 'r4', [2, 3, 4, 5]);
      tensor(g, 'r2', [6, 7]);
      tensor(g, 'r0', []);
      tensor(g, 'r1', [8]);
      tensor(g, 'r2b', [6, 7]);
    });
    const inits = readModel(path).model.graph.initializers;
    expect(inits.map((t) => t.dims)).toEqual([[2, 3, 4, 5], [6, 7], [], [8], [6, 7]]);
    expect(inits[4]?.dims).toBe(inits[1]?.dims); // equal dims lists are one (frozen) list
  });

  it('a dims error after a tensor of higher rank quotes only the dims of its own tensor', () => {
    const path = model('ranks-error', (g) => {
      node(g, 'x', 'y');
      tensor(g, 'r3', [2, 3, 4]);
      tensor(g, 'big', [2 ** 30, 2 ** 30]);
    });
    expect(() => readModel(path)).toThrow(`${path}: tensor 'big': dims [1073741824, 1073741824] hold more than 2^53 elements`);
  });
});
