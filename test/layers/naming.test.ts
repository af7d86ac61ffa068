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
});
