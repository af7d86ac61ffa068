/**
 * Shape inference on every shipped model against ONNX's own shape inference (`values`) and, where
 * ONNX leaves a value unknown or symbolic, against the shapes onnxruntime produced.
 */
import { describe, expect, it } from 'vitest';
import { dimToJson } from '../../src/ir/dim.js';
import { dtypeName } from '../../src/ir/dtype.js';
import { inferModel } from '../../src/pipeline.js';
import { MODELS, modelPath, staticBindings, truth } from '../helpers/models.js';

const isDynamic = (m: string): boolean => m.endsWith('_dynamic');

describe.each(MODELS)('%s', (name) => {
  const t = truth(name);

  it('matches ONNX where it knows the shape and onnxruntime elsewhere', () => {
    const { inferred } = inferModel(modelPath(name), { dims: staticBindings(name) });
    const mismatches: string[] = [];
    for (const [value, expected] of Object.entries(t.values)) {
      const got = inferred.values.get(value);
      if (got === undefined) {
        mismatches.push(`${value}: not inferred`);
        continue;
      }
      const dims = got.shape?.map(dimToJson);
      const onnxKnows = !isDynamic(name) && expected.dims !== null && expected.dims.every((d) => typeof d === 'number');
      const want = onnxKnows ? expected.dims : t.runtime_values[value];
      if (JSON.stringify(dims) !== JSON.stringify(want)) mismatches.push(`${value}: ${JSON.stringify(dims)} != ${JSON.stringify(want)}`);
      if (dtypeName(got.dtype) !== expected.dtype) mismatches.push(`${value}: dtype ${dtypeName(got.dtype)} != ${expected.dtype}`);
    }
    expect(mismatches).toEqual([]);
    expect(Object.keys(t.values).length).toBeGreaterThan(10);
  });
});

describe.each(MODELS.filter(isDynamic))('%s unbound', (name) => {
  const t = truth(name);

  it('keeps symbols where unbound: static where ONNX is static, named dims where ONNX names them', () => {
    const { inferred } = inferModel(modelPath(name));
    const mismatches: string[] = [];
    for (const [value, expected] of Object.entries(t.values)) {
      const dims = inferred.values.get(value)?.shape?.map(dimToJson);
      if (dims === undefined) {
        mismatches.push(`${value}: not inferred`);
        continue;
      }
      if (expected.dims === null) continue; // ONNX gives no shape: onnxruntime's is bound, compared above
      if (dims.length !== expected.dims.length) {
        mismatches.push(`${value}: rank ${dims.length} != ${expected.dims.length}`);
        continue;
      }
      expected.dims.forEach((d, i) => {
        const mine = dims[i];
        // ONNX's anonymous unk__N are its own failures. A number we know without bindings must be
        // binding-independent, so it must equal what onnxruntime saw.
        if (typeof d === 'string' && d.startsWith('unk__')) {
          if (typeof mine === 'number' && mine !== t.runtime_values[value]?.[i]) mismatches.push(`${value}[${i}]: ${mine} != runtime`);
        } else if (d !== null && mine !== d) mismatches.push(`${value}[${i}]: ${String(mine)} != ${String(d)}`);
      });
    }
    expect(mismatches).toEqual([]);
  });
});

describe('scaled bindings', () => {
  it('bert_base_like_dynamic with batch 4, sequence 64 scales the encoder activations', () => {
    const { inferred } = inferModel(modelPath('bert_base_like_dynamic'), { dims: new Map([['batch', 4], ['sequence', 64]]) });
    expect(inferred.values.get('last_hidden_state')?.shape).toEqual([4, 64, 768]);
    // Attention scores: (batch x heads) x seq x seq.
    const scores = inferred.values.get('/encoder/layers.0/self_attn/Softmax_output_0')?.shape;
    expect(scores).toEqual([48, 64, 64]);
  });

  it('--batch rebinds the leading dim of a static model', () => {
    const { inferred } = inferModel(modelPath('resnet50'), { batch: 32 });
    expect(inferred.values.get('logits')?.shape).toEqual([32, 1000]);
    expect(inferred.values.get('/conv1/Conv_output_0')?.shape).toEqual([32, 64, 112, 112]);
  });
});
