/** Layers without weights, biases or activation inputs share one frozen empty list; vector layers carry their work. */
import { describe, expect, it } from 'vitest';
import { analyseModel } from '../../src/pipeline.js';
import { modelPath } from '../helpers/models.js';

describe('lowered layers of resnet50 (vector ops on)', () => {
  const { layers } = analyseModel(modelPath('resnet50'), {}, {}, { vectorOps: true });

  it('share one frozen empty list where they have no bias (read-only: a change would change every layer)', () => {
    const biasless = layers.filter((l) => l.biasTensors.length === 0);
    expect(biasless.length).toBeGreaterThan(60);
    for (const l of biasless) {
      expect(l.biasTensors).toBe(biasless[0]?.biasTensors);
      expect(Object.isFrozen(l.biasTensors)).toBe(true);
    }
  });

  it('vector layers carry their work as the last field, as before', () => {
    const relu = layers.find((l) => l.op === 'Relu');
    expect(relu?.vector).toEqual(relu?.passes.vector);
    expect(Object.keys(relu ?? {}).at(-1)).toBe('vector');
    const conv = layers.find((l) => l.op === 'Conv');
    expect(conv !== undefined && 'vector' in conv).toBe(false);
  });
});
