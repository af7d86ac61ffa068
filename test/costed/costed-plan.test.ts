/**
 * The costed plan (src/costed/costed-plan.ts): each distinct passes object costed once, each
 * layer's pass lists in the order the step issues them, the stage's optimizer step. Figures are
 * worked by hand from a fake cost model's table (count x cycles per GEMM; update = bytes / 2).
 */
import { describe, expect, it } from 'vitest';
import { costPlan, layerStepCycles } from '../../src/costed/costed-plan.js';
import type { CostModel, GemmCost, HardwareProfile } from '../../src/cost/types.js';
import type { Gemm, Layer, LayerPasses } from '../../src/layers/types.js';
import type { LayerPlan, ParallelPlan } from '../../src/plan/types.js';
import { sumOverPasses, trainingCycles } from '../../src/passes.js';

const profile: HardwareProfile = {
  name: 't', source: 't', arrayRows: 4, arrayCols: 4, arrays: 1, dataflow: 'os', ifmapSramBytes: 1 << 20,
  filterSramBytes: 1 << 20, ofmapSramBytes: 1 << 20, bandwidthMode: 'calc', dramBandwidthWordsPerCycle: 8, clockMHz: 500, elementBytes: 2,
};

const cost = (cycles: number): GemmCost => ({ cycles, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 100, computeUtilPct: 100 });
/** fwd 2x3x4 = 10 cycles, ig 2x4x3 = 20, wg 4x3x2 = 30. */
const TABLE: Record<string, number> = { '2x3x4': 10, '2x4x3': 20, '4x3x2': 30 };

function countingModel(): { model: CostModel; asked: () => number } {
  let asked = 0;
  const model: CostModel = {
    name: 'fake',
    profile,
    costGemm: (g: Gemm) => {
      asked++;
      const cycles = TABLE[`${g.m}x${g.n}x${g.k}`];
      if (cycles === undefined) throw new Error(`no figures for ${g.m}x${g.n}x${g.k}`);
      return cost(cycles);
    },
    costWeightUpdate: (bytes: number) => bytes / 2,
  };
  return { model, asked: () => asked };
}

const passes: LayerPasses = {
  fwd: [{ gemm: { m: 2, n: 3, k: 4 }, count: 1 }],
  ig: [{ gemm: { m: 2, n: 4, k: 3 }, count: 1 }],
  wg: [{ gemm: { m: 4, n: 3, k: 2 }, count: 1 }],
};

function layerPlan(name: string, needsInputGrad: boolean, recompute: boolean): LayerPlan {
  const layer = { name, kind: 'gemm', weightParams: 12, biasParams: 0, weightBytes: 24, biasBytes: 0 } as unknown as Layer;
  return { layer, role: 'replicated', reason: '', passes, weightParamsHeld: 12, biasParamsHeld: 0, collectives: { beforeFwd: [], afterFwd: [], beforeBwd: [], afterIg: [] }, needsInputGrad, stage: 0, recompute };
}

/** Only what costPlan reads of a plan: three layers sharing one passes object, one stage. */
function plan(): ParallelPlan {
  const layers = [layerPlan('first', false, false), layerPlan('mid', true, true), layerPlan('last', true, false)];
  return {
    world: { tp: 1, dp: 2, pp: 1 },
    zero: 1,
    elementBytes: 2,
    gradientParams: 'all',
    otherParams: 4,
    layers,
    pipeline: { schedule: '1f1b', virtualStages: 1, stages: [{ layers: [0, 1, 2], chunks: [[0, 1, 2]], cycles: 0 }], partition: 'one stage' },
  } as unknown as ParallelPlan;
}

describe('costPlan', () => {
  it('asks the model once per shared passes object (3 GEMMs for 3 layers)', () => {
    const { model, asked } = countingModel();
    const costed = costPlan(plan(), model);
    expect(asked()).toBe(3);
    expect(costed.layers.map((l) => [l.fwd.cycles, l.ig.cycles, l.wg.cycles])).toEqual([[10, 20, 30], [10, 20, 30], [10, 20, 30]]);
    // Layers of one passes object and the same input-gradient and recompute settings share one entry.
    expect(costed.layers[0]?.fwd).toBe(costed.layers[2]?.fwd);
    // MACs of the pass: 2 x 3 x 4; operands read and result written once: (2x4 + 4x3 + 2x3) x 2 bytes.
    expect(costed.layers[0]?.fwd.macs).toBe(24);
    expect(costed.layers[0]?.fwd.tensorBytes).toBe((8 + 12 + 6) * 2);
    expect(costed.clockMHz).toBe(500);
  });

  it('lists each layer\'s passes in issue order: recomputed forward, input gradient when computed, weight gradient', () => {
    const costed = costPlan(plan(), countingModel().model);
    const order = costed.layers.map((l) => [...l.forward, ...l.backward].map((p) => `${p.pass}:${p.cost.cycles}`));
    expect(order).toEqual([
      ['fwd:10', 'wg:30'],
      ['fwd:10', 'recompute:10', 'ig:20', 'wg:30'],
      ['fwd:10', 'ig:20', 'wg:30'],
    ]);
    // Stages are balanced on fwd + ig (when computed) + wg, without the recomputed forward.
    expect(costed.layers.map((l) => l.stepCycles)).toEqual([40, 60, 60]);
    expect(layerStepCycles(plan().layers[0] as LayerPlan, countingModel().model)).toBe(40);
  });

  it('costs the stage\'s optimizer step on the ZeRO-1 shard, and each layer\'s update for the text format', () => {
    const costed = costPlan(plan(), countingModel().model);
    // 3 x 12 weights + 4 outside every layer = 40 held; ZeRO-1 over D = 2 updates 20; x 2 bytes / 2.
    expect(costed.stages).toEqual([{ updatedParams: 20, updateCycles: 20 }]);
    // 12 gradient elements x 2 bytes / 2 per layer; compare's share: 24 bytes x 12 / 12 held / 2.
    expect(costed.layerUpdateCycles).toEqual([12, 12, 12]);
    expect(costed.shareUpdateCycles).toEqual([12, 12, 12]);
  });
});

describe('sumOverPasses', () => {
  it('adds fwd, ig and wg, ig only when computed', () => {
    expect(sumOverPasses({ fwd: 1, ig: 20, wg: 300 }, (x) => x)).toBe(321);
    expect(trainingCycles({ fwd: { cycles: 1 }, ig: { cycles: 20 }, wg: { cycles: 300 } }, false)).toBe(301);
  });
});
