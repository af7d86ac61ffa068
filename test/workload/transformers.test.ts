/** BERT and GPT-2 translate under DATA and MODEL parallelism into files both ASTRA-sim readers accept. */
import { describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { analyseModel, createCostModel, workloadOf } from '../../src/pipeline.js';
import { writeAstraText } from '../../src/writers/astra-text.js';
import { checkWriterRules, parseLikeAstra1, parseLikeChakraConverter } from '../helpers/astra-parsers.js';
import { modelPath, truth } from '../helpers/models.js';

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
    const bytes = attributed.reduce((a, n) => a + t.initializers[n]!.bytes, 0);
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

  it('MODEL (4 NPUs): every projection all-gathers its output shard', () => {
    const layers = parseLikeAstra1(writeAstraText(workloadOf(analysed, cost, { parallelism: 'MODEL', npus: 4, mpGroup: 4, dtype: 'fp16', params: 'all' }))).layers;
    const proj = layers.find((l) => l.name.endsWith('layers.0.linear1') || l.name === 'blocks.0.fc')!;
    // 128 tokens x 3072 hidden / 4 NPUs x 2 bytes; input gradient 128 x 768 x 2 bytes.
    expect([proj.fwdType, proj.fwdSize, proj.igType, proj.igSize]).toEqual(['ALLGATHER', (128 * 3072 / 4) * 2, 'REDUCESCATTER', 128 * 768 * 2]);
    expect(layers.every((l) => l.wgType === 'NONE')).toBe(true);
  });
});
