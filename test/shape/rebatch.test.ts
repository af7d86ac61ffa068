/**
 * Static exports re-batch: a model exported at batch 1 and run at --batch N gives exactly the
 * layers and shapes of the same model exported with a dynamic batch bound to N.
 */
import { describe, expect, it } from 'vitest';
import { analyseModel } from '../../src/pipeline.js';
import type { Layer } from '../../src/layers/types.js';
import { modelPath, truth } from '../helpers/models.js';

/** Everything of a layer but the exporter's node and value names (onnx::MatMul_1568 vs _1768). */
const comparable = (layers: readonly Layer[]) => layers.map(({ node: _n, weightTensors: _w, biasTensors: _b, activationInputs: _i, output: _o, tensorParams: _t, ...rest }) => rest);

describe('re-batching static exports', () => {
  it('bert_base_like --batch 8 equals bert_base_like_dynamic at batch=8 (its seq-first attention views included)', () => {
    const stat = analyseModel(modelPath('bert_base_like'), { batch: 8 });
    const dyn = analyseModel(modelPath('bert_base_like_dynamic'), { dims: new Map([['batch', 8], ['sequence', 128]]) });
    expect(comparable(stat.layers)).toEqual(comparable(dyn.layers));
    // And the batch really is 8: 96 = 8 x 12 heads of 128 x 128 scores per block.
    const scores = stat.layers.filter((l) => l.kind === 'activation-gemm');
    expect(scores.every((l) => l.gemmCount === 8 * 12)).toBe(true);
  });

  it('resnet50 --batch 32 equals resnet50_dynamic --dim batch=32', () => {
    const stat = analyseModel(modelPath('resnet50'), { batch: 32 });
    const dyn = analyseModel(modelPath('resnet50_dynamic'), { dims: new Map([['batch', 32]]) });
    expect(comparable(stat.layers)).toEqual(comparable(dyn.layers));
  });

  it.each(['alexnet', 'vgg16', 'vgg19', 'squeezenet1_0', 'gpt2_small_like'])('%s --batch 4: every GEMM scales by the batch, nothing else changes', (name) => {
    const one = analyseModel(modelPath(name)).layers;
    const four = analyseModel(modelPath(name), { batch: 4 }).layers;
    const t = truth(name);
    expect(four.length).toBe(one.length);
    for (const [i, l] of four.entries()) {
      const base = one[i];
      if (base === undefined) throw new Error(`layer ${i} (${l.name}) has no batch-1 counterpart`);
      // Weight GEMMs fold the batch into M; activation products repeat per sample.
      if (l.kind === 'gemm') expect([l.gemm.fwd.m, l.gemm.fwd.n, l.gemm.fwd.k, l.gemmCount]).toEqual([4 * base.gemm.fwd.m, base.gemm.fwd.n, base.gemm.fwd.k, base.gemmCount]);
      if (l.kind === 'activation-gemm') expect([l.gemm.fwd, l.gemmCount]).toEqual([base.gemm.fwd, 4 * base.gemmCount]);
      expect(l.macs).toBe(4 * base.macs);
      expect(l.weightParams).toBe(base.weightParams);
      // GPT-2's position embedding looks up positions, not samples: it is broadcast over the batch.
      if (l.name === 'wpe') {
        expect(l.outputShape).toEqual(base.outputShape);
        continue;
      }
      expect(l.outputActivationBytes).toBe(4 * base.outputActivationBytes);
      // The exported batch-1 output shape with its leading (batch) dim times 4.
      expect(l.outputShape).toEqual([4 * Number(base.outputShape[0]), ...base.outputShape.slice(1)]);
    }
    // Ground truth of the batch-1 export is untouched.
    expect(one.reduce((a, l) => a + l.weightParams, 0)).toBeLessThanOrEqual(Object.values(t.initializers).reduce((a, i) => a + i.numel, 0));
  });
});
