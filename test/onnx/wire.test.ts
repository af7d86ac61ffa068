/** Wire reads the decoders build on: a string equal to one already read is that string. */
import { describe, expect, it } from 'vitest';
import { readModel } from '../../src/onnx/reader.js';
import { BufferWire } from '../../src/onnx/wire.js';
import { buildModel, FLOAT } from '../helpers/onnx-builder.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const field = (...bytes: number[]): Uint8Array => Uint8Array.from([bytes.length, ...bytes]);

describe('BufferWire.stringAmong', () => {
  it('gives the known string its bytes spell, and moves past the field', () => {
    const w = new BufferWire(Uint8Array.from([...field(0x76, 0x31), ...field(0x78)]), 0);
    expect(w.stringAmong(['v', 'v1', 'v2'])).toBe('v1');
    expect(w.pos).toBe(3);
    expect(w.stringAmong(['v1'])).toBe('x'); // no candidate: read as string()
    expect(w.pos).toBe(5);
  });

  it('decodes bytes that are not ASCII as string() does, never as a known string of the same characters', () => {
    // 0xE9 alone is invalid UTF-8 (U+FFFD), though its Latin-1 character is the known 'é'.
    const w = new BufferWire(field(0xe9), 0);
    expect(w.stringAmong(['é'])).toBe('\uFFFD');
  });
});

describe('decoding', () => {
  it('a node input naming an output of the node before it reads as that name (the graph and its shapes as before)', () => {
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
    const { model } = readModel(path);
    expect(model.graph.nodes.map((n) => n.inputs)).toEqual([['x'], ['y'], ['y2', 'y']]);
  });
});
