/** The shipped transformers with --vector-ops on: their softmax and (decomposed) LayerNorm layers, counted from the ONNX graph's own nodes. */
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../../src/cost/ideal.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { uniqueParameterCount } from '../../src/layers/params.js';
import { analyseModel, workloadOf } from '../../src/pipeline.js';
import { modelPath, staticBindings, truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

describe.each(['bert_base_like', 'gpt2_small_like'])('%s', (name) => {
  const analysed = analyseModel(modelPath(name), {}, {}, { vectorOps: true });
  const { layers } = analysed;
  const t = truth(name);
  const nodesOf = (op: string): number => t.nodes.filter((n) => n.op_type === op).length;

  it('one softmax layer per Softmax node, one layernorm layer per decomposed LayerNorm (its one Sqrt)', () => {
    const byClass = (cls: string): number => layers.filter((l) => l.vector?.opClass === cls).length;
    expect(nodesOf('Softmax')).toBe(12);
    expect(byClass('softmax')).toBe(nodesOf('Softmax'));
    expect(nodesOf('LayerNormalization')).toBe(0); // exported op by op
    expect(byClass('layernorm')).toBe(nodesOf('Sqrt'));
    // The pieces of the norms are inside those layers, not layers of their own.
    expect(layers.filter((l) => ['Sqrt', 'ReduceMean', 'Pow'].includes(l.op))).toEqual([]);
  });

  it("the norms hold LayerNorm's scale and shift, so every initializer is some layer's parameter", () => {
    const all = Object.values(t.initializers).reduce((a, i) => a + i.numel, 0);
    expect(uniqueParameterCount(layers)).toBe(all);
    for (const l of layers.filter((x) => x.vector?.opClass === 'layernorm')) expect([l.weightParams, l.biasParams]).toEqual([768, 768]);
  });

  it('vector layers carry compute but only the norms all-reduce gradients', async () => {
    const wl = workloadOf(analysed, idealCostModel(await loadHardwareProfile('tpu-v4')), { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' });
    const vector = wl.layers.filter((_, i) => present(layers[i], `layer ${i}`).kind === 'vector');
    expect(vector.every((l) => l.fwdCycles > 0 && l.igCycles > 0)).toBe(true);
    const reducing = vector.filter((l) => l.wgComm.type === 'ALLREDUCE');
    expect(reducing.length).toBe(nodesOf('Sqrt'));
    for (const l of reducing) expect(l.wgComm.bytes).toBe(2 * 768 * 4);
  });
});

it('dynamic BERT bound to the static export has the same vector layers (its extra Shape/Cast/Unsqueeze arithmetic is not work)', () => {
  const work = (name: string) => analyseModel(modelPath(name), { dims: staticBindings(name) }, {}, { vectorOps: true }).layers
    .filter((l) => l.kind === 'vector').map((l) => [l.op, l.vector]);
  const dynamic = work('bert_base_like_dynamic');
  expect(dynamic.length).toBeGreaterThan(0);
  expect(dynamic).toEqual(work('bert_base_like'));
});
