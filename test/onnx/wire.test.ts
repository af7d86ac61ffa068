/** Wire reads the decoders build on: a string equal to one already read is that string. */
import { describe, expect, it } from 'vitest';
import { readModel } from '../../src/onnx/reader.js';
import { BufferWire, WireError } from '../../src/onnx/wire.js';
import { buildModel, FLOAT } from '../helpers/onnx-builder.js';
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
