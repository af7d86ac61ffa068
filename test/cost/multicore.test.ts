/**
 * Multi-core profiles (cost/multicore.ts, docs/scalesim-model.md §11): the parser's keys, the
 * tiling against hand-worked figures (SCALE-sim's fold formula, §5), the bandwidth bounds, the
 * vector unit, and the shipped chips' peaks against the vendors' numbers.
 */
import { describe, expect, it } from 'vitest';
import { loadHardwareProfile, parseHardwareProfile } from '../../src/cost/hardware.js';
import { idealCostModel } from '../../src/cost/ideal.js';
import { chooseTiling, peakFlopsPerSecond } from '../../src/cost/multicore.js';
import { scalesimCostModel } from '../../src/cost/scalesim-model.js';
import type { HardwareProfile } from '../../src/cost/types.js';
import { vectorUnitOf } from '../../src/cost/vector.js';
import { InputError } from '../../src/errors.js';

/** 4 cores of one 16x16 os array; the ofmap SRAM holds exactly one 16x16 tile (1-byte words). */
const chip = (overrides: Partial<HardwareProfile> = {}): HardwareProfile => ({
  name: 'chip', source: 'test', arrayRows: 16, arrayCols: 16, arrays: 1, dataflow: 'os',
  ifmapSramBytes: 4096, filterSramBytes: 4096, ofmapSramBytes: 256, bandwidthMode: 'calc',
  dramBandwidthWordsPerCycle: 1000, clockMHz: 1000, elementBytes: 1, cores: 4, ...overrides,
});

describe('multi-core GEMM cost', () => {
  it('tiles that divide the cores exactly: cycles = tiles per core x one tile\'s SCALE-sim cycles', () => {
    // 64x64 outputs in 16x16 tiles: 16 tiles, 4 per core. One tile (16, 16, K = 100) on a 16x16 os
    // array: 1 fold of F = R + C + T - 2 = 130 lines, 130 - 1 = 129 cycles (§5). 4 x 129 = 516.
    const cost = scalesimCostModel(chip()).costGemm({ m: 64, n: 64, k: 100 });
    expect(cost.cycles).toBe(516);
    expect(cost.stallCycles).toBe(0);
    // 64 x 64 x 100 MACs over 516 cycles of 4 x 256 PEs.
    expect(cost.overallUtilPct).toBeCloseTo((100 * 64 * 64 * 100) / (516 * 1024), 10);
  });

  it('the busiest core runs ceil(tiles / cores) tiles', () => {
    // 80 x 16 outputs: 5 tiles of 16x16 on 4 cores -> 2 tiles on the busiest, 2 x 129 cycles.
    expect(scalesimCostModel(chip()).costGemm({ m: 80, n: 16, k: 100 }).cycles).toBe(258);
  });

  it('balances uneven tiles: 40 rows in 16-row tiles are 3 tiles of 14', () => {
    const tiling = chooseTiling({ m: 40, n: 16, k: 100 }, chip(), (g) => scalesimCostModel(chip({ cores: undefined })).costGemm(g));
    expect([tiling.tileM, tiling.tilesM, tiling.tileN, tiling.tilesN]).toEqual([14, 3, 16, 1]);
    // 3 tiles on 4 cores: one each; a 14x16 tile is still one fold of 16 + 16 + 100 - 2 lines.
    expect(tiling.computeCycles).toBe(129);
  });

  it('a memory-bound GEMM takes its bytes over HBM: without an L2 every tile reads its panels', () => {
    // 1 byte/cycle. Tiles 4 x 4: A (64x100) read 4 times, B (100x64) 4 times, C written once:
    // 4 x 6400 + 4 x 6400 + 4096 = 55,296 bytes = 55,296 cycles > 516 of compute.
    const cost = scalesimCostModel(chip({ dramBandwidthWordsPerCycle: 1 })).costGemm({ m: 64, n: 64, k: 100 });
    expect(cost.cycles).toBe(55296);
    expect(cost.stallCycles).toBe(55296 - 516);
  });

  it('with an L2, HBM moves each operand once and the L2 the tile panels', () => {
    // HBM: 6400 + 6400 + 4096 = 16,896 bytes at 1 B/cycle; L2: 55,296 bytes at 10 B/cycle = 5,530.
    const withL2 = chip({ dramBandwidthWordsPerCycle: 1, l2Bytes: 1 << 20, l2BytesPerCycle: 10 });
    expect(scalesimCostModel(withL2).costGemm({ m: 64, n: 64, k: 100 }).cycles).toBe(16896);
    // A slow L2 binds instead: 55,296 / 2 = 27,648.
    expect(scalesimCostModel({ ...withL2, l2BytesPerCycle: 2 }).costGemm({ m: 64, n: 64, k: 100 }).cycles).toBe(27648);
  });

  it('the ideal model counts every core\'s PEs', () => {
    // 64 x 64 x 100 MACs / (4 cores x 256 PEs) = 400 cycles.
    expect(idealCostModel(chip()).costGemm({ m: 64, n: 64, k: 100 }).cycles).toBe(400);
  });

  it('the vector unit is every core\'s lanes; with an L2 (a GPU) its bandwidth is capped by HBM', () => {
    const gpu = { vectorLanes: 32, vectorBytesPerCycle: 100, elementBytes: 2, l2Bytes: 1 << 20, l2BytesPerCycle: 1000 };
    const unit = vectorUnitOf(chip({ ...gpu, dramBandwidthWordsPerCycle: 300 }));
    expect(unit.lanes).toBe(128);
    expect(unit.bytesPerCycle).toBe(400); // min(4 x 100, 300 words x 2 bytes = 600)
    expect(vectorUnitOf(chip({ ...gpu, dramBandwidthWordsPerCycle: 100 })).bytesPerCycle).toBe(200);
    // No L2 (a TPU chip): the cores' own memories, 4 x 100, as a single core's profile has its own.
    expect(vectorUnitOf(chip({ vectorLanes: 32, vectorBytesPerCycle: 100, elementBytes: 2, dramBandwidthWordsPerCycle: 100 })).bytesPerCycle).toBe(400);
  });
});

describe('multi-core profile keys', () => {
  const base = {
    source: 's', cores: 8, arrayRows: 16, arrayCols: 16, arrays: 4, dataflow: 'os', ifmapSram: '64 KiB', filterSram: '64 KiB',
    ofmapSram: '64 KiB', l2Sram: '40 MB', l2Bandwidth: '7 TB/s', bandwidthMode: 'calc', dramBandwidth: '2 TB/s', clock: '1410 MHz', elementBytes: 2,
  };
  const refused = async (raw: Record<string, unknown>): Promise<string> => {
    try {
      await parseHardwareProfile(raw, 'gpu.json', 'gpu');
    } catch (e) {
      expect(e).toBeInstanceOf(InputError);
      return (e as Error).message;
    }
    throw new Error('accepted');
  };

  it('reads cores, the L2 size and its bandwidth per cycle', async () => {
    const p = await parseHardwareProfile(base, 'gpu.json', 'gpu');
    expect(p.cores).toBe(8);
    expect(p.l2Bytes).toBe(40e6);
    expect(p.l2BytesPerCycle).toBeCloseTo(7e12 / 1410e6, 6);
  });

  it('single-core profiles carry no multi-core fields', async () => {
    const { cores: _c, l2Sram: _s, l2Bandwidth: _b, ...single } = base;
    const p = await parseHardwareProfile(single, 'one.json', 'one');
    expect(Object.keys(p).filter((k) => k.startsWith('l2') || k === 'cores')).toEqual([]);
  });

  it.each([
    [{ cores: 2.5 }, "gpu.json: key 'cores' must be an integer, got 2.5"],
    [{ cores: 0 }, "gpu.json: key 'cores' must be positive, got 0"],
    [{ cores: '108' }, "gpu.json: key 'cores' must be a plain integer, e.g. \"cores\": 128"],
    [{ cores: 2 ** 21 }, "gpu.json: key 'cores' must be at most 1048576, got 2097152"],
    [{ l2Bandwidth: 7e12 }, "gpu.json: key 'l2Bandwidth' is a bare number (7000000000000); write it with its unit, e.g. \"l2Bandwidth\": \"5 TB/s\""],
    [{ l2Sram: '40 MHz' }, "gpu.json: key 'l2Sram': '40 MHz' is not a size in bytes: a number and a unit (e.g. \"l2Sram\": \"6 MiB\")"],
  ])('refuses %j in one line naming the file and key', async (change, message) => {
    expect(await refused({ ...base, ...change })).toBe(message);
  });

  it('refuses half an L2, and an L2 without cores', async () => {
    const { l2Bandwidth: _b, ...noBandwidth } = base;
    expect(await refused(noBandwidth)).toBe("gpu.json: key 'l2Bandwidth' is missing; an L2 needs both 'l2Sram' and 'l2Bandwidth'");
    const { cores: _c, ...noCores } = base;
    expect(await refused(noCores)).toBe("gpu.json: key 'l2Sram' describes a chip's shared L2 and needs key 'cores' (e.g. \"cores\": 108)");
  });
});

describe('shipped chips', () => {
  // Vendor dense FP16/BF16 peaks, and the rounding each states them with.
  it.each([
    ['a100-sxm-80gb', 108, 312, 0.5], // A100 whitepaper: 312 TFLOPS
    ['h100-sxm', 132, 989.4, 0.05], // H100 SXM5 datasheet: 989.4 (1979 sparse / 2)
    ['mi300x', 304, 1307.4, 0.05], // MI300X datasheet: 1307.4
    ['tpu-v4-chip', 2, 275, 0.5], // Cloud TPU v4 docs: 275
    ['tpu-v5p-chip', 2, 459, 0.5], // Cloud TPU v5p docs: 459
  ])('%s parses with %i cores and peaks at %f TFLOP/s', async (name, cores, tflops, rounding) => {
    const p = await loadHardwareProfile(name);
    expect(p.cores).toBe(cores);
    expect(Math.abs(peakFlopsPerSecond(p) / 1e12 - tflops)).toBeLessThanOrEqual(rounding);
    // Sanity floor, not a measurement: a large GEMM runs at >= 75% of peak (the H100 is L2-bound at 80%).
    const macs = 8192 * 8192 * 8192;
    const cycles = scalesimCostModel(p).costGemm({ m: 8192, n: 8192, k: 8192 }).cycles;
    expect((2 * macs) / (cycles / (p.clockMHz * 1e6)) / peakFlopsPerSecond(p)).toBeGreaterThan(0.75);
  });

  it('the A100 profile\'s HBM bandwidth is the datasheet\'s 2039 GB/s', async () => {
    const p = await loadHardwareProfile('a100-sxm-80gb');
    expect(p.dramBandwidthWordsPerCycle * p.elementBytes * p.clockMHz * 1e6).toBeCloseTo(2039e9, -3);
  });
});

describe('modtrans scalesim on a multi-core profile', () => {
  it('is refused: SCALE-sim models one array, not a chip of cores', async () => {
    const { simulateScaleSim } = await import('../../src/scalesim/run.js');
    const { parseTopology } = await import('../../src/scalesim/topology.js');
    const layers = parseTopology('name, M, N, K,\ng, 64, 64, 100,\n', 't.csv', 'gemm');
    expect(() => simulateScaleSim(layers, chip())).toThrow("chip: SCALE-sim models one array; this profile is a chip of 4 cores (key 'cores')");
    expect(simulateScaleSim(layers, chip({ cores: undefined }))[0]?.totalCycles).toBe(4 * 4 * 130 - 1); // 16 folds of 130 lines, one array
  });
});

describe('compare on a multi-core profile', () => {
  it('counts every core\'s PEs in the utilisation: the ideal model is at most 100% on every layer', async () => {
    const { compareProfiles } = await import('../../src/compare/compare.js');
    const { analyseModel, costedPlanOf, leadingDim, planOf } = await import('../../src/pipeline.js');
    const { modelPath } = await import('../helpers/models.js');
    const analysed = analyseModel(modelPath('resnet50'));
    const batch = leadingDim(analysed);
    const plan = planOf(analysed, { world: { tp: 1, dp: 1, pp: 1 }, batch: { globalBatch: batch, microBatch: batch, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25 });
    const c = compareProfiles('resnet50', [costedPlanOf(plan, idealCostModel(await loadHardwareProfile('a100-sxm-80gb')))]);
    expect(c.profiles[0]?.processingElements).toBe(108 * 4 * 16 * 16);
    const utils = c.layers.map((l) => l.perProfile[0]?.utilPct ?? 0);
    expect(Math.max(...utils)).toBeLessThanOrEqual(100); // was ~10,800% (one core's PEs)
    expect(Math.max(...utils)).toBeGreaterThan(90);
  });
});

describe('one core', () => {
  it('"cores": 1 costs exactly as the same profile without the key (GEMMs and vector work)', async () => {
    const single = await loadHardwareProfile('tpu-v4');
    const oneCore: HardwareProfile = { ...single, cores: 1, l2Bytes: 1 << 20, l2BytesPerCycle: 1 };
    for (const g of [{ m: 128, n: 4096, k: 1024 }, { m: 3, n: 5, k: 7 }]) {
      expect(scalesimCostModel(oneCore).costGemm(g)).toEqual(scalesimCostModel(single).costGemm(g));
    }
    expect(vectorUnitOf(oneCore)).toEqual(vectorUnitOf(single));
  });
});
