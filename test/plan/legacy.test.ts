/**
 * The legacy strategies' collective sizes (README, "Legacy strategies") on hand-computed cases,
 * plus properties: each keyword is a world of the parallel plan (plan/legacy.ts) and the sizes are
 * the plan's, read off the library's `workloadOf`. Every replica runs its own batch: no keyword
 * splits the rows M.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../../src/cost/ideal.js';
import type { HardwareProfile } from '../../src/cost/types.js';
import { keywordOfWorld, legacyWorld, PARALLELISMS, type ParallelConfig } from '../../src/plan/legacy.js';
import { analyseModel, type AnalysedModel, workloadOf } from '../../src/pipeline.js';
import { buildModel, FLOAT, type TensorSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-legacy-'));
let counter = 0;
const w = (name: string, dims: number[]): TensorSpec => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });

/** x [M, K] -> Gemm (K x K, the first layer) -> Gemm fc (K x N, bias N): fc is the layer under test. */
function twoGemms(m: number, n: number, k: number): AnalysedModel {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel({
    inputs: [{ name: 'x', dtype: FLOAT, dims: [m, k] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
    initializers: [w('first.weight', [k, k]), w('fc.weight', [k, n]), w('fc.bias', [n])],
    nodes: [
      { name: 'first', op: 'Gemm', inputs: ['x', 'first.weight'], outputs: ['h'] },
      { name: 'fc', op: 'Gemm', inputs: ['h', 'fc.weight', 'fc.bias'], outputs: ['y'] },
    ],
  }, 13));
  return analyseModel(path);
}

const profile: HardwareProfile = {
  name: 'unit', source: 'test', arrayRows: 8, arrayCols: 8, arrays: 1, dataflow: 'ws', ifmapSramBytes: 1 << 20,
  filterSramBytes: 1 << 20, ofmapSramBytes: 1 << 20, bandwidthMode: 'calc', dramBandwidthWordsPerCycle: 16, clockMHz: 1000, elementBytes: 1,
};
const base = { dtype: 'fp32', params: 'all' } as const;
const rowsOf = (analysed: AnalysedModel, config: ParallelConfig) => workloadOf(analysed, idealCostModel(profile), config).layers;
const fcRow = (analysed: AnalysedModel, config: ParallelConfig) => present(rowsOf(analysed, config)[1], 'the fc row');

describe('collective sizes (M=100, N=30, K=20, fp32)', () => {
  const model = twoGemms(100, 30, 20);

  it('DATA: weight-gradient all-reduce of all parameters, nothing else; each replica runs all 100 rows', () => {
    const r = fcRow(model, { ...base, parallelism: 'DATA', npus: 3, mpGroup: 1 });
    expect([r.fwdComm.type, r.igComm.type]).toEqual(['NONE', 'NONE']);
    expect(r.wgComm).toEqual({ type: 'ALLREDUCE', bytes: (600 + 30) * 4, group: 'data' });
    expect(r.work?.fwd.macs).toBe(100 * 30 * 20);
  });

  it('MODEL: all-gather of the output shard, reduce-scatter of the input gradient', () => {
    const r = fcRow(model, { ...base, parallelism: 'MODEL', npus: 4, mpGroup: 4 });
    expect([r.fwdComm.type, r.fwdComm.bytes]).toEqual(['ALLGATHER', 100 * 8 * 4]); // N/P rounded up to 8
    expect([r.igComm.type, r.igComm.bytes]).toEqual(['REDUCESCATTER', 100 * 20 * 4]);
    expect(r.wgComm.type).toBe('NONE');
  });

  it('MODEL: the first layer needs no input-gradient collective', () => {
    expect(present(rowsOf(model, { ...base, parallelism: 'MODEL', npus: 4, mpGroup: 4 })[0], 'the first row').igComm.type).toBe('NONE');
  });

  it('HYBRID_DATA_MODEL (8 NPUs, G=2): activation collectives of the replica\'s own rows, weight gradients of the shard', () => {
    const r = fcRow(model, { ...base, parallelism: 'HYBRID_DATA_MODEL', npus: 8, mpGroup: 2 });
    expect([r.fwdComm.type, r.fwdComm.bytes]).toEqual(['ALLGATHER', 100 * 15 * 4]);
    expect([r.igComm.type, r.igComm.bytes]).toEqual(['REDUCESCATTER', 100 * 20 * 4]);
    expect(r.wgComm).toEqual({ type: 'ALLREDUCE', bytes: (300 + 15) * 4, group: 'data' });
  });

  it('--params weights leaves biases out; --dtype scales bytes', () => {
    expect(fcRow(model, { parallelism: 'DATA', npus: 2, mpGroup: 1, dtype: 'bf16', params: 'weights' }).wgComm.bytes).toBe(600 * 2);
  });

  it('one table maps the keywords to worlds, and rejects a G that does not divide the NPUs', () => {
    expect(legacyWorld({ parallelism: 'DATA', npus: 8 })).toEqual({ tp: 1, dp: 8, pp: 1 });
    expect(legacyWorld({ parallelism: 'MODEL', npus: 8 })).toEqual({ tp: 8, dp: 1, pp: 1 });
    expect(legacyWorld({ parallelism: 'HYBRID_MODEL_DATA', npus: 8, mpGroup: 2 })).toEqual({ tp: 2, dp: 4, pp: 1 });
    expect(() => legacyWorld({ parallelism: 'HYBRID_MODEL_DATA', npus: 8, mpGroup: 3 })).toThrow(/^--mp-group 3 must divide --npus 8 for HYBRID_MODEL_DATA$/);
    expect(() => legacyWorld({ parallelism: 'HYBRID_DATA_MODEL', npus: 8 })).toThrow(/^-p HYBRID_DATA_MODEL needs --mp-group G/);
    expect(() => legacyWorld({ parallelism: 'DATA', npus: 8, mpGroup: 2 })).toThrow(/^--mp-group 2 does not apply to -p DATA/);
    expect(() => workloadOf(model, idealCostModel(profile), { ...base, parallelism: 'HYBRID_MODEL_DATA', npus: 8, mpGroup: 3 })).toThrow(/--mp-group 3 must divide --npus 8/);
  });

  it('the same table names the keyword of a --tp/--dp world: DATA for T = 1, MODEL for D = 1, HYBRID_DATA_MODEL otherwise', () => {
    expect(keywordOfWorld({ tp: 1, dp: 1, pp: 1 })).toBe('DATA');
    expect(keywordOfWorld({ tp: 1, dp: 8, pp: 1 })).toBe('DATA');
    expect(keywordOfWorld({ tp: 8, dp: 1, pp: 1 })).toBe('MODEL');
    expect(keywordOfWorld({ tp: 2, dp: 4, pp: 1 })).toBe('HYBRID_DATA_MODEL');
    // Round trip: a keyword's world names that keyword back, bar HYBRID_MODEL_DATA (its world is HYBRID_DATA_MODEL's).
    for (const parallelism of PARALLELISMS) {
      const world = legacyWorld({ parallelism, npus: 8, mpGroup: parallelism.startsWith('HYBRID') ? 2 : undefined });
      expect(keywordOfWorld(world)).toBe(parallelism === 'HYBRID_MODEL_DATA' ? 'HYBRID_DATA_MODEL' : parallelism);
    }
  });
});

describe('properties', () => {
  const dims = fc.integer({ min: 1, max: 5000 });
  const npus = fc.integer({ min: 1, max: 64 });

  it('DATA weight-gradient size does not depend on P; MODEL output shards cover the output', () => {
    fc.assert(fc.property(dims, dims, dims, npus, (m, n, k, p) => {
      const model = twoGemms(m, n, k);
      const data = fcRow(model, { ...base, parallelism: 'DATA', npus: p, mpGroup: 1 });
      if (p > 1) expect(data.wgComm.bytes).toBe((k * n + n) * 4);
      const shard = fcRow(model, { ...base, parallelism: 'MODEL', npus: p, mpGroup: p });
      if (p > 1) {
        const outputElementsPerNpu = shard.fwdComm.bytes / 4;
        expect(outputElementsPerNpu * p).toBeGreaterThanOrEqual(m * n);
        expect(outputElementsPerNpu * p).toBeLessThan(m * (n + p));
      }
    }));
  });

  it('hybrid with G = 1 sizes the weight gradient like DATA, with G = P like MODEL', () => {
    fc.assert(fc.property(dims, dims, dims, npus, (m, n, k, p) => {
      const model = twoGemms(m, n, k);
      const data = fcRow(model, { ...base, parallelism: 'DATA', npus: p, mpGroup: 1 });
      const hybrid1 = fcRow(model, { ...base, parallelism: 'HYBRID_DATA_MODEL', npus: p, mpGroup: 1 });
      expect(hybrid1.wgComm.bytes).toBe(data.wgComm.bytes);
      const shard = fcRow(model, { ...base, parallelism: 'MODEL', npus: p, mpGroup: p });
      const hybridP = fcRow(model, { ...base, parallelism: 'HYBRID_MODEL_DATA', npus: p, mpGroup: p });
      expect(hybridP.fwdComm.bytes).toBe(shard.fwdComm.bytes);
      expect(hybridP.igComm.bytes).toBe(shard.igComm.bytes);
    }));
  });
});
