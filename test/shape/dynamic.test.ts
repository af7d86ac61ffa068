/**
 * Symbolic dims: the dynamic exports keep `batch` / `sequence` (and expressions of them) until
 * bound, and any binding scales every value as the architecture dictates. Expected shapes are the
 * static twin's onnxruntime shapes (batch 1, sequence 128), rescaled by hand per tensor pattern.
 */
import { describe, expect, it } from 'vitest';
import { dimToJson } from '../../src/ir/dim.js';
import { inferModel } from '../../src/pipeline.js';
import { modelPath, truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

type Shape = readonly number[];

/** BERT-base (12 heads of 64, hidden 768, FFN 3072) at batch 1, sequence 128 -> batch b, sequence s. */
function scaleBert(name: string, shape: Shape, b: number, s: number): number[] | undefined {
  const key = JSON.stringify(shape);
  // Position ids and embeddings are [1, sequence(, 768)]: they broadcast over the batch.
  if (name === '/Unsqueeze_output_0' || name === '/pos/Gather_output_0') return [1, s, ...shape.slice(2)];
  const [, second, third] = shape;
  if (shape.length <= 1 && key !== '[128]') return [...shape]; // scalars and shape vectors
  if (key === '[128]') return [s]; // position ids
  if (key === '[1,128]') return [b, s];
  if (shape.length === 3 && shape[0] === 1 && second === 128) return [b, s, present(third, `dim 2 of ${name}`)]; // batch-first activations
  if (shape.length === 3 && shape[0] === 128 && second === 1) return [s, b, present(third, `dim 2 of ${name}`)]; // sequence-first (nn.MultiheadAttention)
  if (key === '[128,12,64]') return [s, 12 * b, 64]; // heads split, before the transpose
  if (key === '[12,128,64]') return [12 * b, s, 64];
  if (key === '[12,64,128]') return [12 * b, 64, s]; // K transposed
  if (key === '[12,128,128]') return [12 * b, s, s]; // attention scores
  if (key === '[128,768]') return [s * b, 768]; // flattened for the output projection
  return undefined;
}

function inferredShapes(model: string, dims: Map<string, number>): Map<string, (number | string)[] | undefined> {
  const { inferred } = inferModel(modelPath(model), { dims });
  return new Map([...inferred.values].map(([k, v]) => [k, v.shape?.map(dimToJson)]));
}

describe('bert_base_like_dynamic', () => {
  const t = truth('bert_base_like_dynamic');

  it.each([[3, 77], [2, 128], [1, 1], [8, 512]])('batch %i, sequence %i scales every value as the architecture does', (b, s) => {
    const got = inferredShapes('bert_base_like_dynamic', new Map([['batch', b], ['sequence', s]]));
    const mismatches: string[] = [];
    for (const [name, shape] of Object.entries(t.runtime_values)) {
      const want = scaleBert(name, shape, b, s);
      if (want === undefined) mismatches.push(`${name}: no scaling rule for ${JSON.stringify(shape)}`);
      else if (JSON.stringify(got.get(name)) !== JSON.stringify(want)) mismatches.push(`${name}: ${JSON.stringify(got.get(name))} != ${JSON.stringify(want)}`);
    }
    expect(mismatches).toEqual([]);
    expect(Object.keys(t.runtime_values).length).toBeGreaterThan(1000);
  });

  it('keeps symbols and expressions of them when unbound', () => {
    const got = inferredShapes('bert_base_like_dynamic', new Map());
    expect(got.get('input_ids')).toEqual(['batch', 'sequence']);
    expect(got.get('/encoder/layers.0/self_attn/Reshape_output_0')).toEqual(['sequence', '12*batch', 64]);
    expect(got.get('/encoder/layers.0/self_attn/Softmax_output_0')).toEqual(['12*batch', 'sequence', 'sequence']);
    expect(got.get('/encoder/layers.0/self_attn/Reshape_3_output_0')).toEqual(['batch*sequence', 768]);
    expect(got.get('last_hidden_state')).toEqual(['batch', 'sequence', 768]);
  });

  it('binds one symbol and leaves the other', () => {
    const got = inferredShapes('bert_base_like_dynamic', new Map([['sequence', 64]]));
    expect(got.get('/encoder/layers.0/self_attn/Softmax_output_0')).toEqual(['12*batch', 64, 64]);
    expect(got.get('/encoder/layers.0/self_attn/Reshape_3_output_0')).toEqual(['64*batch', 768]);
  });
});

describe('resnet50_dynamic', () => {
  const t = truth('resnet50_dynamic');

  it.each([3, 7, 64])('batch %i scales the leading dim of every activation', (b) => {
    const got = inferredShapes('resnet50_dynamic', new Map([['batch', b]]));
    const mismatches: string[] = [];
    for (const [name, shape] of Object.entries(t.runtime_values)) {
      const want = [b, ...shape.slice(1)];
      if (JSON.stringify(got.get(name)) !== JSON.stringify(want)) mismatches.push(`${name}: ${JSON.stringify(got.get(name))} != ${JSON.stringify(want)}`);
    }
    expect(mismatches).toEqual([]);
  });

  it('keeps batch symbolic through Flatten and Gemm when unbound', () => {
    const got = inferredShapes('resnet50_dynamic', new Map());
    expect(got.get('logits')).toEqual(['batch', 1000]);
  });
});
