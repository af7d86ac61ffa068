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
