/** Communication sizing: the README formulas on hand-computed cases, plus properties. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makePasses, type Layer } from '../../src/layers/types.js';
import { collectivesOf, type ParallelConfig, shareOf, splitOf } from '../../src/plan/legacy.js';

function gemmLayer(m: number, n: number, k: number, bias = true): Layer {
  const { gemm, passes } = makePasses({ m, n, k }, 1);
  return {
    name: 'fc', op: 'Gemm', node: 'fc', kind: 'gemm', outputShape: [m, n], gemm, gemmCount: 1, passes,
    macs: m * n * k, weightParams: k * n, biasParams: bias ? n : 0, weightBytes: 4 * k * n, biasBytes: bias ? 4 * n : 0,
    inputActivationBytes: 4 * m * k, outputActivationBytes: 4 * m * n, activationInputs: ['x'], output: 'y', weightTensors: ['w'], biasTensors: bias ? ['b'] : [],
  };
}

function comms(layer: Layer, config: ParallelConfig, index = 1) {
  const split = splitOf(config);
  return collectivesOf(layer, shareOf(layer, split), split, config, index > 0);
}

const base = { dtype: 'fp32', params: 'all' } as const;

describe('collective sizes (M=100, N=30, K=20, fp32)', () => {
  const layer = gemmLayer(100, 30, 20);

  it('DATA: weight-gradient all-reduce of all parameters, nothing else', () => {
    const c = comms(layer, { ...base, parallelism: 'DATA', npus: 3, mpGroup: 1 });
    expect(c.fwd.type).toBe('NONE');
    expect(c.ig.type).toBe('NONE');
    expect(c.wg).toEqual({ type: 'ALLREDUCE', bytes: (600 + 30) * 4, group: 'all' });
    expect(shareOf(layer, splitOf({ ...base, parallelism: 'DATA', npus: 3, mpGroup: 1 })).passes.fwd[0]?.gemm).toEqual({ m: 34, n: 30, k: 20 });
  });

  it('MODEL: all-gather of the output shard, reduce-scatter of the input gradient', () => {
    const c = comms(layer, { ...base, parallelism: 'MODEL', npus: 4, mpGroup: 4 });
    expect(c.fwd).toEqual({ type: 'ALLGATHER', bytes: 100 * 8 * 4, group: 'all' }); // N/P rounded up to 8
    expect(c.ig).toEqual({ type: 'REDUCESCATTER', bytes: 100 * 20 * 4, group: 'all' });
    expect(c.wg.type).toBe('NONE');
  });

  it('MODEL: the first layer needs no input-gradient collective', () => {
    expect(comms(layer, { ...base, parallelism: 'MODEL', npus: 4, mpGroup: 4 }, 0).ig.type).toBe('NONE');
  });

  it('HYBRID_DATA_MODEL (8 NPUs, G=2): activation collectives use the data share of M', () => {
    const c = comms(layer, { ...base, parallelism: 'HYBRID_DATA_MODEL', npus: 8, mpGroup: 2 });
    expect(c.fwd).toEqual({ type: 'ALLGATHER', bytes: 25 * 15 * 4, group: 'model' });
    expect(c.ig).toEqual({ type: 'REDUCESCATTER', bytes: 25 * 20 * 4, group: 'model' });
    expect(c.wg).toEqual({ type: 'ALLREDUCE', bytes: (300 + 15) * 4, group: 'data' });
  });

  it('--params weights leaves biases out; --dtype scales bytes', () => {
    const c = comms(layer, { parallelism: 'DATA', npus: 2, mpGroup: 1, dtype: 'bf16', params: 'weights' });
    expect(c.wg.bytes).toBe(600 * 2);
  });

  it('rejects an mp-group that does not divide the NPUs', () => {
    expect(() => splitOf({ ...base, parallelism: 'HYBRID_MODEL_DATA', npus: 8, mpGroup: 3 })).toThrow(/--mp-group 3 must divide --npus 8/);
  });
});

describe('properties', () => {
  const dims = fc.integer({ min: 1, max: 5000 });
  const npus = fc.integer({ min: 1, max: 64 });

  it('DATA weight-gradient size does not depend on P; MODEL output shards cover the output', () => {
    fc.assert(fc.property(dims, dims, dims, npus, (m, n, k, p) => {
      const layer = gemmLayer(m, n, k);
      const data = comms(layer, { ...base, parallelism: 'DATA', npus: p, mpGroup: 1 });
      if (p > 1) expect(data.wg.bytes).toBe((k * n + n) * 4);
      const split = splitOf({ ...base, parallelism: 'MODEL', npus: p, mpGroup: p });
      const share = shareOf(layer, split);
      expect(share.outputElementsPerNpu * p).toBeGreaterThanOrEqual(m * n);
      expect(share.outputElementsPerNpu * p).toBeLessThan(m * (n + p));
    }));
  });

  it('hybrid with G = 1 sizes the weight gradient like DATA, with G = P like MODEL', () => {
    fc.assert(fc.property(dims, dims, dims, npus, (m, n, k, p) => {
      const layer = gemmLayer(m, n, k);
      const data = comms(layer, { ...base, parallelism: 'DATA', npus: p, mpGroup: 1 });
      const hybrid1 = comms(layer, { ...base, parallelism: 'HYBRID_DATA_MODEL', npus: p, mpGroup: 1 });
      expect(hybrid1.wg.bytes).toBe(data.wg.bytes);
      const model = comms(layer, { ...base, parallelism: 'MODEL', npus: p, mpGroup: p });
      const hybridP = comms(layer, { ...base, parallelism: 'HYBRID_MODEL_DATA', npus: p, mpGroup: p });
      expect(hybridP.fwd.bytes).toBe(model.fwd.bytes);
      expect(hybridP.ig.bytes).toBe(model.ig.bytes);
    }));
  });
});
