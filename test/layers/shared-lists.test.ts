/** Layers without weights, biases or activation inputs share one frozen empty list; vector layers carry their work. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainModel } from '../../bench/chain-model.js';
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

describe('lowered layers of a chain x -> (MatMul by fcI.weight, Relu) x 3 -> y (vector ops on)', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'modtrans-lists-')), 'chain.onnx');
  writeFileSync(file, chainModel(6));
  const { inferred, layers } = analyseModel(file, {}, {}, { vectorOps: true });

  it('a MatMul reads the list of the one-output node writing its input (the Relu before it), and x, written by no node, in a list of its own', () => {
    expect(layers.map((l) => l.activationInputs)).toEqual([['x'], ['v0'], ['v1'], ['v2'], ['v3'], ['v4']]);
    // The Relu before fc2 writes v1, the one before fc4 v3: the MatMuls keep those nodes' output lists.
    expect(layers[2]?.activationInputs).toBe(inferred.order[1]?.outputs);
    expect(layers[4]?.activationInputs).toBe(inferred.order[3]?.outputs);
    // A Relu keeps its own node's input list.
    expect(layers[1]?.activationInputs).toBe(inferred.order[1]?.inputs);
  });

  it('a MatMul by an initializer names it as its weight, and counts its 64 x 64 elements', () => {
    expect(layers.map((l) => l.weightTensors)).toEqual([['fc0.weight'], [], ['fc2.weight'], [], ['fc4.weight'], []]);
    expect(layers.map((l) => l.weightParams)).toEqual([4096, 0, 4096, 0, 4096, 0]);
    expect([...(layers[2]?.tensorParams ?? new Map())]).toEqual([['fc2.weight', 4096]]);
  });

  it('names layers by weight, and Relus by module path and op', () => {
    expect(layers.map((l) => l.name)).toEqual(['fc0', 'act1.Relu', 'fc2', 'act3.Relu', 'fc4', 'act5.Relu']);
  });
});
