/** Layer names from weight names: exporter-generated names (all digits, onnx::...) are not names. */
import { describe, expect, it } from 'vitest';
import { nameFromWeight } from '../../src/layers/naming.js';

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
