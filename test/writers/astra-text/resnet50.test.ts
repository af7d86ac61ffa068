/** ResNet-50 data parallel against ASTRA-sim's own shipped workload (Resnet50_DataParallel.txt). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../../../src/cost/ideal.js';
import { loadHardwareProfile } from '../../../src/cost/hardware.js';
import { analyseModel, workloadOf } from '../../../src/pipeline.js';
import { writeAstraText } from '../../../src/writers/astra-text.js';
import { checkWriterRules, parseLikeAstra1, parseLikeChakraConverter } from '../../helpers/astra-parsers.js';
import { fixturePath, modelPath } from '../../helpers/models.js';
import { present } from '../../helpers/present.js';

const reference = parseLikeAstra1(readFileSync(fixturePath('astra-sim/Resnet50_DataParallel.txt'), 'utf8'));

describe('resnet50 -p DATA --params weights', async () => {
  const profile = await loadHardwareProfile('tpu-256');
  const analysed = analyseModel(modelPath('resnet50'));
  const workload = workloadOf(analysed, idealCostModel(profile), { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'weights' });
  const text = writeAstraText(workload);

  it('has the same 54 weight-gradient ALLREDUCE sizes as ASTRA-sim (as a multiset)', () => {
    const ours = parseLikeAstra1(text);
    expect(ours.layers).toHaveLength(54);
    const sizes = (layers: typeof ours.layers): number[] => layers.map((l) => l.wgSize).sort((a, b) => a - b);
    expect(sizes(ours.layers)).toEqual(sizes(reference.layers));
    expect(ours.layers.every((l) => l.wgType === 'ALLREDUCE')).toBe(true);
    expect(ours.layers.every((l) => l.fwdType === 'NONE' && l.fwdSize === 0 && l.igType === 'NONE' && l.igSize === 0)).toBe(true);
  });

  it('passes both parsers and the writer rules', () => {
    expect(checkWriterRules(text)).toEqual([]);
    const chakra = parseLikeChakraConverter(text);
    expect(chakra.keyword).toBe('DATA');
    expect(chakra.count).toBe(54);
    expect(chakra.layers).toHaveLength(54);
  });

  it('fills compute with the ideal systolic time in ns: ceil(MACs / (256 x 256)) cycles at 700 MHz', () => {
    const ours = parseLikeAstra1(text);
    const conv1 = present(ours.layers.find((l) => l.name === 'conv1'), 'conv1');
    // Each data-parallel replica runs its own sample (batch 1): M = 112 x 112 rows, 64 x 147.
    const cycles = Math.ceil((12544 * 64 * 147) / 65536);
    expect(conv1.fwdCompute).toBe(Math.round((cycles * 1000) / 700));
    expect(writeAstraText(workload, 'cycles').split('\n')[2]?.split('\t')[2]).toBe(String(cycles));
  });

  it('counts biases with --params all', () => {
    const all = workloadOf(analysed, idealCostModel(profile), { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' });
    const fc = present(all.layers.find((l) => l.name === 'fc'), 'fc');
    expect(fc.wgComm.bytes).toBe((2048 * 1000 + 1000) * 4);
  });
});

describe('the library entry (src/index.ts): buildWorkload is workloadOf', async () => {
  const lib = await import('../../../src/index.js');
  const profile = await loadHardwareProfile('tpu-v4');
  const analysed = lib.analyseModel(modelPath('resnet50'));
  const config = { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' } as const;

  it('one function, so the two names cannot disagree', () => {
    expect(lib.buildWorkload).toBe(lib.workloadOf);
  });

  it("resnet50 DATA over 8 NPUs: conv1's forward is one image's (the batch of 8 splits over the replicas, not the image)", async () => {
    const scalesim = await lib.createCostModel(profile);
    const conv1 = present(lib.buildWorkload(analysed, scalesim, config).layers[0], 'conv1');
    expect(conv1.name).toBe('conv1');
    // The export's batch is 1: 8 replicas run a global batch of 8, one 224 x 224 image each. conv1
    // (7 x 7, stride 2, pad 3, 3 -> 64 channels) has 112 x 112 outputs: the GEMM M = 12544, N = 64, K = 7 x 7 x 3.
    const image = { m: 112 * 112, n: 64, k: 7 * 7 * 3 };
    expect(conv1.fwdCycles).toBe(scalesim.costGemm(image).cycles);
    expect(conv1.fwdCycles).not.toBe(scalesim.costGemm({ ...image, m: image.m / 8 }).cycles);
    // The ideal bound of that GEMM: ceil(MACs / PEs), tpu-v4's 4 arrays of 128 x 128.
    const ideal = present(lib.buildWorkload(analysed, idealCostModel(profile), config).layers[0], 'conv1 (ideal)');
    expect(profile.arrays * profile.arrayRows * profile.arrayCols).toBe(4 * 128 * 128);
    expect(ideal.fwdCycles).toBe(Math.ceil((12544 * 64 * 147) / (4 * 128 * 128)));
  });
});
