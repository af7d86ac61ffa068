/** Objects a plan shares between layers (passes of one geometry, empty collectives) carry the figures each layer's own would. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainModel } from '../../bench/chain-model.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { analyseModel, costedPlanOf, createCostModel, planOf } from '../../src/pipeline.js';
import { layerTable } from '../../src/schedule/layer-table.js';

// x[8, 64] -> (MatMul with a 64 x 64 weight, Relu) x 3: three GEMMs of M = 8, N = 64, K = 64.
const file = join(mkdtempSync(join(tmpdir(), 'modtrans-chain-')), 'chain.onnx');
writeFileSync(file, chainModel(6));
const plain = { sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25 } as const;

describe('a chain of equal MatMuls', () => {
  const analysed = analyseModel(file, {}, {}, { vectorOps: true });

  for (const tp of [1, 2]) {
    it(`TP ${tp}: every MatMul holds one rank's M x N/T x K GEMM in each pass, and the shared objects cannot be changed`, () => {
      const plan = planOf(analysed, { ...plain, world: { tp, dp: 1, pp: 1 }, batch: { globalBatch: 8, microBatch: 8, microBatches: 1 }, forceRole: 'split' });
      const gemms = plan.layers.filter((l) => l.layer.kind === 'gemm');
      expect(gemms).toHaveLength(3);
      const n = 64 / tp;
      for (const l of gemms) {
        expect(l.passes.fwd).toEqual([{ gemm: { m: 8, n, k: 64 }, count: 1 }]);
        expect(l.passes.ig).toEqual([{ gemm: { m: 8, n: 64, k: n }, count: 1 }]);
        expect(l.passes.wg).toEqual([{ gemm: { m: 64, n, k: 8 }, count: 1 }]);
        expect(() => (l.passes.fwd as unknown[]).push(1)).toThrow(TypeError);
        // Without collectives (T = 1) the layers share one empty, frozen set of lists.
        if (tp === 1) expect(() => (l.collectives.beforeFwd as unknown[]).push(1)).toThrow(TypeError);
      }
      // The legacy split all-gathers each MatMul's M x N/T outputs (fp32) when T > 1.
      for (const l of gemms) expect(l.collectives.afterFwd).toEqual(tp > 1 ? [{ type: 'ALLGATHER', bytes: 8 * n * 4, group: 'tp', label: 'out' }] : []);
    });
  }

  it('the text table without per-pass work has the same cycles and collectives', async () => {
    const model = await createCostModel(await loadHardwareProfile('tpu-256'));
    const plan = planOf(analysed, { ...plain, world: { tp: 1, dp: 2, pp: 1 }, batch: { globalBatch: 16, microBatch: 8, microBatches: 1 } });
    const full = layerTable(costedPlanOf(plan, model));
    const lean = layerTable(costedPlanOf(plan, model), undefined, { work: false });
    expect(lean.layers.every((r) => r.work === undefined)).toBe(true);
    expect(full.layers.every((r) => r.work !== undefined)).toBe(true);
    expect(lean).toEqual({ ...full, layers: full.layers.map(({ work: _, ...row }) => row) });
  });
});
