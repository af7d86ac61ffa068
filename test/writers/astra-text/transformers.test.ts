/** BERT and GPT-2 translate under DATA and MODEL parallelism into files both ASTRA-sim readers accept. */
import { describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../../src/cost/hardware.js';
import { analyseModel, createCostModel, workloadOf } from '../../../src/pipeline.js';
import { writeAstraText } from '../../../src/writers/astra-text.js';
import { checkWriterRules, parseLikeAstra1, parseLikeChakraConverter } from '../../helpers/astra-parsers.js';
import { modelPath, truth } from '../../helpers/models.js';
import { present } from '../../helpers/present.js';

describe.each(['bert_base_like', 'gpt2_small_like'])('%s', async (name) => {
  const analysed = analyseModel(modelPath(name));
  const cost = await createCostModel(await loadHardwareProfile('tpu-v4'));
  const t = truth(name);

  it('DATA: weight-gradient all-reduces carry every attributed parameter once', () => {
    const text = writeAstraText(workloadOf(analysed, cost, { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' }));
    expect(checkWriterRules(text)).toEqual([]);
    expect(parseLikeChakraConverter(text).layers.length).toBe(analysed.layers.length);
    const layers = parseLikeAstra1(text).layers;
    const attributed = analysed.layers.flatMap((l) => [...l.weightTensors, ...l.biasTensors]);
    const bytes = attributed.reduce((a, n) => a + present(t.initializers[n], n).bytes, 0);
    expect(layers.reduce((a, l) => a + l.wgSize, 0)).toBe(bytes);
    // Everything but LayerNorm's scale and shift (2 x 768 per norm, 25 norms) is in a layer.
    const all = Object.values(t.initializers).reduce((a, i) => a + i.bytes, 0);
    expect(all - bytes).toBe(25 * 2 * 768 * 4);
    // Attention products carry compute but no weight-gradient collective.
    const weightless = new Set(analysed.layers.filter((l) => l.kind === 'activation-gemm').map((l) => l.name));
    const attention = layers.filter((l) => weightless.has(l.name));
    expect(attention.length).toBe(24); // QK^T and AV in each of 12 blocks
    for (const l of attention) expect([l.wgType, l.wgSize, l.fwdCompute > 0]).toEqual(['NONE', 0, true]);
  });

  it('MODEL (4 NPUs): Megatron roles — the MLP up projection reduces its input gradient, the down projection its output', () => {
    const layers = parseLikeAstra1(writeAstraText(workloadOf(analysed, cost, { parallelism: 'MODEL', npus: 4, mpGroup: 4, dtype: 'fp16', params: 'all' }))).layers;
    const up = present(layers.find((l) => l.name.endsWith('layers.0.linear1') || l.name === 'blocks.0.fc'), 'the MLP up projection of block 0');
    const down = present(layers.find((l) => l.name.endsWith('layers.0.linear2') || l.name === 'blocks.0.proj'), 'the MLP down projection of block 0');
    // Column-parallel: no forward collective, backward all-reduce of 128 tokens x 768 x 2 bytes.
    expect([up.fwdType, up.fwdSize, up.igType, up.igSize]).toEqual(['NONE', 0, 'ALLREDUCE', 128 * 768 * 2]);
    // Row-parallel: forward all-reduce of its 128 x 768 output; its input gradient stays local.
    expect([down.fwdType, down.fwdSize, down.igType, down.igSize]).toEqual(['ALLREDUCE', 128 * 768 * 2, 'NONE', 0]);
    expect(layers.every((l) => l.wgType === 'NONE')).toBe(true);
  });
});
