/** Malformed GEMM nodes are bad input: one-line graph errors naming the node, never an internal error. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { analyseModel } from '../../src/pipeline.js';
import { buildModel, FLOAT, type GraphSpec } from '../helpers/onnx-builder.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-malformed-'));
let counter = 0;
function path(g: GraphSpec, opset = 13, otherDomains: Record<string, number> = {}): string {
  const file = join(dir, `m${counter++}.onnx`);
  writeFileSync(file, buildModel(g, opset, otherDomains));
  return file;
}
const w = (name: string, dims: number[]) => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });

/** The error analysing `file` throws: an InputError of one line. */
function errorOf(file: string): InputError {
  try {
    analyseModel(file);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    const message = (e as Error).message;
    expect(message).not.toMatch(/internal error/);
    expect(message).not.toContain('\n');
    return e as InputError;
  }
  throw new Error('no error');
}

describe('malformed GEMM nodes', () => {
  it('a MatMul with one input names the file, the node and the missing input', () => {
    const file = path({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 64] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      nodes: [{ name: 'fc', op: 'MatMul', inputs: ['x'], outputs: ['y'] }],
    });
    expect(errorOf(file).message).toBe(`${file}: node 'fc' (MatMul): missing input 1`);
  });

  it('a Conv without a weight (input 1 empty) names the node and the missing input', () => {
    const file = path({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 3, 8, 8] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      nodes: [{ name: 'conv1', op: 'Conv', inputs: ['x', ''], outputs: ['y'] }],
    });
    expect(errorOf(file).message).toBe(`${file}: node 'conv1' (Conv): missing input 1`);
  });

  it('a Gemm whose weight is 1-D names the node', () => {
    const file = path({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 64] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('fc.weight', [64])],
      nodes: [{ name: 'fc', op: 'Gemm', inputs: ['x', 'fc.weight'], outputs: ['y'] }],
    });
    expect(errorOf(file).message).toMatch(new RegExp(`^${file.replace(/[.\\/]/g, '\\$&')}: node 'fc' \\(Gemm\\): `));
  });

  it('com.microsoft Attention with two qkv_hidden_sizes names the node and the attribute', () => {
    const file = path({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 16, 64] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('qkv.weight', [64, 192])],
      nodes: [{ name: 'attn', op: 'Attention', domain: 'com.microsoft', inputs: ['x', 'qkv.weight'], outputs: ['y'], attrs: { num_heads: 4, qkv_hidden_sizes: [64, 64] } }],
    }, 13, { 'com.microsoft': 1 });
    expect(errorOf(file).message).toMatch(/node 'attn' \(Attention\): .*qkv_hidden_sizes/);
  });
});
