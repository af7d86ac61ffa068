/**
 * USER-mode re-fetching and the SRAM that avoids it (src/cost/refetch.ts), on a small GEMM whose
 * weights are re-read once per row fold: os on a 4x4 array, M=64 (16 row folds), N=4, K=50, so the
 * filter is L = 200 words, prefetched once (one column fold) in 20 DRAM lines of 10 words.
 *
 * By hand (read-buffer-user.ts): S = 393 words gives sets of ceil(3.93) = 4 words and an active
 * half of 197 words, i.e. ceil(197/4) = 50 sets, and the filter fills sets 0..49: never a miss, so
 * DRAM reads = the initial fill of ceil(197/10) = 20 lines = the 200 words (1x). S = 392 gives an
 * active half of 196 words = 49 sets: the 50th set misses and every row fold re-reads the filter.
 */
import { describe, expect, it } from 'vitest';
import { gemmGeometry } from '../../src/cost/access/layer.js';
import { simulateLayerMemory } from '../../src/cost/access/simulate.js';
import { refetchFindings, refetchWarningsFor, userSramWordsToHold } from '../../src/cost/refetch.js';
import { scalesimCostModel } from '../../src/cost/scalesim-model.js';
import type { HardwareProfile } from '../../src/cost/types.js';

const gemm = { m: 64, n: 4, k: 50 };
const array = { rows: 4, cols: 4 };

function filterReads(filterSramWords: number): number {
  const config = { mode: 'user' as const, ifmapSramWords: 100_000, filterSramWords, ofmapSramWords: 100_000, bandwidthWordsPerCycle: 10 };
  return simulateLayerMemory(gemmGeometry(gemm), array, 'os', config).dram.filter.dramReads;
}

function profile(filterSramBytes: number): HardwareProfile {
  return {
    name: 'tiny', source: 'test', arrayRows: 4, arrayCols: 4, arrays: 1, dataflow: 'os',
    ifmapSramBytes: 100_000, filterSramBytes, ofmapSramBytes: 100_000, bandwidthMode: 'user',
    dramBandwidthWordsPerCycle: 10, clockMHz: 1000, elementBytes: 1,
  };
}

const layer = { name: 'fc', passes: { fwd: [{ gemm, count: 1 }], ig: [], wg: [] } };

describe('USER-mode re-fetching', () => {
  it('the SRAM formula is the smallest size that holds the operand', () => {
    expect(userSramWordsToHold(200)).toBe(393);
    expect(filterReads(393)).toBe(200);
    expect(filterReads(392)).toBeGreaterThan(200 * 16); // at least once per row fold
    // Small operands (sets of one word): the active half ceil(S/2) must reach L, so S = 2 L - 1.
    expect(userSramWordsToHold(10)).toBe(19);
    expect(userSramWordsToHold(50)).toBe(99);
    expect(userSramWordsToHold(1_000_000)).toBeGreaterThan(2_000_000 - 200_000);
    expect(userSramWordsToHold(1_000_000)).toBeLessThanOrEqual(2_000_000);
  });

  it('finds the re-fetched operand of a layer and names the SRAM that avoids it', () => {
    const reads = filterReads(392);
    const findings = refetchFindings([layer], scalesimCostModel(profile(392)), 2);
    expect(findings).toEqual([
      { layer: 'fc', pass: 'fwd', operand: 'filter', times: reads / 200, operandWords: 200, neededSramBytes: 393, sramBytes: 392 },
    ]);
    expect(refetchFindings([layer], scalesimCostModel(profile(393)), 2)).toEqual([]);
    expect(refetchFindings([layer], scalesimCostModel({ ...profile(392), bandwidthMode: 'calc' }), 2)).toEqual([]);
    // Two arrays share the SRAM: the profile needs twice the per-array size.
    const dual = refetchFindings([layer], scalesimCostModel({ ...profile(392), arrays: 2 }), 2);
    for (const f of dual) expect(f.neededSramBytes).toBe(2 * userSramWordsToHold(f.operandWords));
  });

  it('warns once per layer, naming the layer, the factor and the SRAM size', () => {
    // M = 256: 64 row folds, each re-reading (and thrashing through) the filter: over 1000x.
    const long = { m: 256, n: 4, k: 50 };
    const big = { name: 'fc', passes: { fwd: [{ gemm: long, count: 1 }], ig: [{ gemm: long, count: 1 }], wg: [] } };
    const lines = refetchWarningsFor([big, { ...big, name: 'fc2' }, layer], scalesimCostModel(profile(392)));
    expect(lines).toHaveLength(2); // fc and fc2 once each (two passes), not the 16-fold layer
    expect(lines[0]).toMatch(/^layer fc: its forward filter \(200 words\) is read from DRAM [\d,]+ times over in USER mode on tiny; a filterSram of 393 B \(now 392 B\) would hold it$/);
    expect(lines[1]).toMatch(/^layer fc2: /);
  });
});
