/** Values of one shape share one inferred info (infos are never changed once made); values with folded elements keep their own. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inferModel } from '../../src/pipeline.js';
import { buildModel, FLOAT, INT64 } from '../helpers/onnx-builder.js';

describe('shape inference shares equal infos', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-shared-info-'));
  const path = join(dir, 'm.onnx');
  writeFileSync(path, buildModel({
    inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 9] }],
    outputs: [{ name: 'r', dtype: FLOAT, dims: [9, 2] }],
    initializers: [{ name: 'w', dtype: FLOAT, dims: [9, 9] }, { name: 'w2', dtype: FLOAT, dims: [9, 9] }, { name: 'target', dtype: INT64, dims: [2], values: [9, 2] }],
    nodes: [
      { op: 'Relu', inputs: ['x'], outputs: ['a'] },
      { op: 'MatMul', inputs: ['a', 'w'], outputs: ['b'] },
      { op: 'Shape', inputs: ['b'], outputs: ['s'] },
      { op: 'Shape', inputs: ['b'], outputs: ['s2'] },
      { op: 'Reshape', inputs: ['b', 'target'], outputs: ['r'] },
      { op: 'MatMul', inputs: ['a', 'w2'], outputs: ['b2'] },
    ],
  }));
  const { values } = inferModel(path).inferred;

  it('an element-wise output and a MatMul output of their input shape are its info', () => {
    expect(values.get('a')).toEqual({ dtype: FLOAT, shape: [2, 9] });
    expect(values.get('a')).toBe(values.get('x'));
    expect(values.get('b')).toBe(values.get('x'));
  });

  it('initializers of one dtype and dims share one info too', () => {
    expect(values.get('w')).toEqual({ dtype: FLOAT, shape: [9, 9] });
    expect(values.get('w2')).toBe(values.get('w'));
  });

  it('values with folded elements and values of other shapes keep their own', () => {
    expect(values.get('s')).toEqual({ dtype: INT64, shape: [2], value: [2, 9] });
    expect(values.get('s2')).not.toBe(values.get('s'));
    expect(values.get('r')).toEqual({ dtype: FLOAT, shape: [9, 2] });
    expect(values.get('r')).not.toBe(values.get('x'));
  });
});
