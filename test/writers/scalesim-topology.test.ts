/**
 * SCALE-sim export: the CSVs are read back with SCALE-sim's own parsing rules (src/scalesim/
 * topology.ts, docs/scalesim-model.md §2-3) and must give our per-NPU GEMMs; the backward rows follow the
 * shipped resnet topologies; the .cfg reads back as the profile.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { parseScaleSimConfig, scaleSimProfile } from '../../src/cost/scalesim-config.js';
import { analyseModel, type AnalysedModel } from '../../src/pipeline.js';
import { parseTopology } from '../../src/scalesim/topology.js';
import { makePasses } from '../../src/layers/types.js';
import { scalesimConfigOf, scalesimName, scalesimTopologies } from '../../src/report/scalesim.js';
import { convCsv, gemmCsv, scalesimCfg, scalesimExport } from '../../src/writers/scalesim-topology.js';
import { fixturePath, modelPath } from '../helpers/models.js';
import { present } from '../helpers/present.js';

describe('SCALE-sim topology export', () => {
  let resnet: AnalysedModel;
  beforeAll(() => {
    resnet = analyseModel(modelPath('resnet50'));
  });

  it('forward conv rows fold padding into the ifmap, so SCALE-sim computes our GEMMs', () => {
    const topo = scalesimTopologies(resnet.layers, resnet.inferred);
    const csv = convCsv(topo.fwd);
    expect(csv.split('\n')[1]).toBe('conv1,229,229,7,7,3,64,2,'); // 224 + 2x3 padding - 1 unused column
    const parsed = parseTopology(csv, 'fwd.csv', 'conv');
    expect(parsed.map((l) => l.geometry.gemm)).toEqual(resnet.layers.map((l) => l.gemm.fwd));
    // At batch 1 every conv keeps its conv shape (channels, filter); the fc layer is an mnk row.
    for (const [i, l] of parsed.entries()) expect(l.conv.channels > 1).toBe(resnet.layers[i]?.op === 'Conv');
  });

  it('backward rows follow the shipped resnet fwd / input-grad / weight-grad topologies', () => {
    const topo = scalesimTopologies(resnet.layers, resnet.inferred);
    const reference = (file: string): string => present(readFileSync(fixturePath(`scalesim/topologies/resnet/${file}`), 'utf8').replace(/^\uFEFF/, '').split(/\r?\n/)[1], `row 1 of ${file}`);
    expect(convCsv(topo.inputGrad).split('\n')[1]).toBe(reference('resnet_input_grad.csv'));
    expect(convCsv(topo.weightGrad).split('\n')[1]).toBe(reference('resnet_weight_grad.csv'));
    for (const [rows, pass] of [[topo.inputGrad, 'ig'], [topo.weightGrad, 'wg']] as const) {
      const parsed = parseTopology(convCsv(rows), `${pass}.csv`, 'conv');
      expect(parsed.map((l) => l.geometry.gemm)).toEqual(resnet.layers.map((l) => l.gemm[pass]));
    }
  });

  it('exports the per-NPU share: a share of 1/8 of the output rows keeps conv rows of those rows', () => {
    // A rank that runs 1/8 of each layer's rows (M / 8, rounded up): conv1's 112 x 112 outputs become 14 x 112.
    const shares = resnet.layers.map((l) => makePasses({ ...l.gemm.fwd, m: Math.ceil(l.gemm.fwd.m / 8) }, l.gemmCount).passes);
    const topo = scalesimTopologies(resnet.layers, resnet.inferred, shares);
    expect(convCsv(topo.fwd).split('\n')[1]).toBe('conv1,33,229,7,7,3,64,2,'); // 14 of 112 output rows: (14 - 1) x 2 + 7
    const parsed = parseTopology(convCsv(topo.fwd), 'fwd.csv', 'conv');
    expect(parsed.map((l) => l.geometry.gemm)).toEqual(shares.map((p, i) => present(p.fwd[0], `forward pass of layer ${i}`).gemm));
    const mnk = parseTopology(gemmCsv(topo.fwdGemm), 'fwd_gemm.csv', 'gemm');
    expect(mnk.map((l) => l.geometry.gemm)).toEqual(parsed.map((l) => l.geometry.gemm));
  });

  it('repeats batched GEMMs (attention heads) as numbered rows', () => {
    const bert = analyseModel(modelPath('bert_base_like'));
    const topo = scalesimTopologies(bert.layers, bert.inferred);
    const batched = present(bert.layers.find((l) => l.kind === 'activation-gemm' && l.gemmCount > 1), 'a batched activation GEMM');
    const rows = topo.fwd.filter((r) => r.name.startsWith(`${scalesimName(batched.name)}_`));
    expect(rows.length).toBeGreaterThanOrEqual(batched.gemmCount);
    expect(topo.fwd.every((r) => !r.name.includes('DP') && !r.name.includes(','))).toBe(true);
  });

  it('writes a .cfg that reads back as the profile', async () => {
    for (const name of ['google', 'eyeriss', 'scale']) {
      const profile = await loadHardwareProfile(name);
      const back = scaleSimProfile(parseScaleSimConfig(scalesimCfg(scalesimConfigOf(profile)), `${name}.cfg`), `${name}.cfg`);
      expect(back).toMatchObject({
        arrayRows: profile.arrayRows,
        arrayCols: profile.arrayCols,
        dataflow: profile.dataflow,
        ifmapSramBytes: profile.ifmapSramBytes,
        filterSramBytes: profile.filterSramBytes,
        ofmapSramBytes: profile.ofmapSramBytes,
        bandwidthMode: profile.bandwidthMode,
      });
    }
    const shipped = readFileSync(fixturePath('scalesim/configs/google.cfg'), 'utf8');
    const ours = scalesimCfg(scalesimConfigOf(await loadHardwareProfile('google')));
    const arch = (t: string): string[] => t.split('\n').filter((l) => /Sram|Array|Dataflow|InterfaceBandwidth/.test(l)).map((l) => l.replace(/\s+/g, ''));
    expect(arch(ours)).toEqual(arch(shipped));
  });

  it('names the files after the model and the profile', async () => {
    const topo = scalesimTopologies(resnet.layers.slice(0, 2), resnet.inferred);
    const files = scalesimExport('resnet50', topo, scalesimConfigOf(await loadHardwareProfile('google')));
    expect([...files.keys()]).toEqual(['resnet50_fwd.csv', 'resnet50_input_grad.csv', 'resnet50_weight_grad.csv', 'resnet50_fwd_gemm.csv', 'google.cfg']);
    for (const [name, text] of files) if (name.endsWith('.csv')) expect(text.split('\n').slice(1, -1).every((l) => l.endsWith(','))).toBe(true);
  });

  it('keeps DP out of names (SCALE-sim would expand the layer per channel)', () => {
    expect(scalesimName('blockDP.conv, x')).toBe('blockDp.conv__x');
  });
});

describe('SCALE-sim row names', () => {
  it('stay unique when a repeated GEMM suffix or the DP rewrite meets another layer name', async () => {
    const { makePasses } = await import('../../src/layers/types.js');
    const { scalesimTopologies } = await import('../../src/report/scalesim.js');
    const layer = (name: string, count: number) => ({
      name, op: 'MatMul', node: name, kind: 'activation-gemm' as const, outputShape: [count, 4, 4], ...makePasses({ m: 4, n: 4, k: 4 }, count),
      gemmCount: count, macs: 64 * count, weightParams: 0, biasParams: 0, weightBytes: 0, biasBytes: 0,
      inputActivationBytes: 0, outputActivationBytes: 0, activationInputs: [], output: name, weightTensors: [], biasTensors: [],
    });
    const inferred = { order: [] } as unknown as Parameters<typeof scalesimTopologies>[1];
    const topo = scalesimTopologies([layer('attn', 2), layer('attn_1', 1), layer('xDP', 1), layer('xDp', 1)], inferred);
    const names = topo.fwd.map((r) => r.name);
    expect(names).toEqual(['attn_0', 'attn_1', 'attn_1_dup2', 'xDp', 'xDp_dup2']);
    expect(topo.weightGrad.map((r) => r.name)).toEqual(names);
  });
});
