/** The vector share of compute that translate prints, on a built block costed by hand. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idealCostModel } from '../src/cost/ideal.js';
import type { HardwareProfile } from '../src/cost/types.js';
import { analyseModel, vectorComputeShare, workloadOf } from '../src/pipeline.js';
import { buildModel, FLOAT } from './helpers/onnx-builder.js';

const profile: HardwareProfile = {
  name: 'unit', source: 'test', arrayRows: 8, arrayCols: 8, arrays: 1, dataflow: 'ws', ifmapSramBytes: 1 << 20,
  filterSramBytes: 1 << 20, ofmapSramBytes: 1 << 20, bandwidthMode: 'calc', dramBandwidthWordsPerCycle: 16, clockMHz: 1000, elementBytes: 1,
  vectorLanes: 64, vectorBytesPerCycle: 1 << 20,
};

describe('vector share of compute', () => {
  // x [32, 64] . W [64, 64] -> Relu: one GEMM and one element-wise layer.
  const path = join(mkdtempSync(join(tmpdir(), 'modtrans-share-')), 'm.onnx');
  writeFileSync(path, buildModel({
    inputs: [{ name: 'x', dtype: FLOAT, dims: [32, 64] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
    initializers: [{ name: 'fc.weight', dtype: FLOAT, dims: [64, 64], external: { location: 'missing.bin' } }],
    nodes: [
      { op: 'MatMul', inputs: ['x', 'fc.weight'], outputs: ['h'] },
      { op: 'Relu', inputs: ['h'], outputs: ['y'] },
    ],
  }));

  it("is the vector layers' cycles over all cycles of every pass", () => {
    const analysed = analyseModel(path, {}, {}, { vectorOps: true });
    const wl = workloadOf(analysed, idealCostModel(profile), { parallelism: 'DATA', npus: 1, mpGroup: 1, dtype: 'fp32', params: 'all' });
    // Ideal GEMM: ceil(32 x 64 x 64 MACs / 64 PEs) per pass; ReLU: 2048 elements x 1 op / 64 lanes, fwd and bwd.
    const gemm = 3 * (32 * 64 * 64) / 64;
    const relu = 2 * (32 * 64) / 64;
    expect(vectorComputeShare(analysed, wl)).toBeCloseTo(relu / (gemm + relu), 12);
    const off = analyseModel(path); // GEMM-only lowering
    expect(vectorComputeShare(off, workloadOf(off, idealCostModel(profile), { parallelism: 'DATA', npus: 1, mpGroup: 1, dtype: 'fp32', params: 'all' }))).toBe(0);
  });
});
