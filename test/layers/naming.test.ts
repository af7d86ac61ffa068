/** Layer names from weight names: exporter-generated names (all digits, onnx::...) are not names. */
import { describe, expect, it } from 'vitest';
import { dotted, LayerNamer, nameFromWeight } from '../../src/layers/naming.js';

describe('nameFromWeight', () => {
  it('drops the parameter suffix of a meaningful weight name', () => {
    expect(nameFromWeight('fc1.weight')).toBe('fc1');
    expect(nameFromWeight('encoder.layer.0.W')).toBe('encoder.layer.0');
  });

  it('gives no name for generated weight names: all digits or onnx::', () => {
    expect(nameFromWeight('1234')).toBeUndefined();
    expect(nameFromWeight('onnx::MatMul_12')).toBeUndefined();
    expect(nameFromWeight('12a')).toBe('12a');
    expect(nameFromWeight(undefined)).toBeUndefined();
  });
});

describe('dotted', () => {
  it('joins two parts with a dot, short or long', () => {
    expect(dotted('act1', 'Relu')).toBe('act1.Relu');
    expect(dotted('encoder.layers.10.self_attn', 'MatMul_1')).toBe('encoder.layers.10.self_attn.MatMul_1');
    expect(dotted('a', '')).toBe('a.');
  });
});

describe('LayerNamer', () => {
  it('qualifies a weightless layer by module path and op part, and numbers a repeat', () => {
    const namer = new LayerNamer();
    expect(namer.name('/encoder/layers.10/self_attn/MatMul_1', 'MatMul', undefined, true)).toBe('encoder.layers.10.self_attn.MatMul_1');
    expect(namer.name('/encoder/layers.10/self_attn/MatMul_1', 'MatMul', undefined, true)).toBe('encoder.layers.10.self_attn.MatMul_1_2');
    expect(namer.name('/enc/attn/Attention', 'Attention', undefined, false, 'scores')).toBe('enc.attn.scores');
    expect(namer.name('/enc/attn/Attention', 'Attention', undefined, false, 'scores')).toBe('enc.attn.Attention.scores');
  });

  it('gives every layer its own name far past the count it was sized for (a non-ASCII and an empty node name too)', () => {
    const namer = new LayerNamer(2);
    const names = new Set<string>();
    for (let i = 0; i < 3000; i++) names.add(namer.name(`/blk.${i % 1000}/fc`, 'Gemm', undefined));
    for (const node of ['/kéy/MatMul', '/kéy/MatMul', '']) names.add(namer.name(node, 'MatMul', undefined, true));
    // 1,000 paths named three times each: the path, then its op part, then the op part numbered.
    expect(names.size).toBe(3003);
    expect(names.has('blk.999.fc')).toBe(true);
    expect(names.has('blk.999.fc.Gemm')).toBe(true);
    expect(names.has('blk.999.fc.Gemm_2')).toBe(true);
    expect(names.has('k_y.MatMul')).toBe(true);
    expect(names.has('k_y.MatMul_2')).toBe(true);
    expect(names.has('MatMul')).toBe(true);
  });
});
