/**
 * SCALE-sim's Ifmap/Filter/OfmapOffset: addresses are base + relative address, and every buffer
 * treats the value -1 as "no element" (`addr == -1`). So an offset that puts an element at -1
 * removes it from the layer's traffic; other negative addresses stay real. Expectations are
 * counted by hand from SCALE-sim's construction (operand_matrix.py addresses, the demand-matrix
 * layout of systolic_compute_*.py, docs/scalesim-model.md §3-§7) for layers small enough to list.
 *
 * The layer: GEMM M=4, N=3, K=5 (ifmap address m*5 + k, filter n*5 + k, ofmap m*3 + n) on a 4x4
 * array with SRAMs far larger than the operands, so every distinct word is read from DRAM once
 * and the whole ofmap drains once at the end (DRAM counts = distinct real elements).
 */
import { describe, expect, it } from 'vitest';
import { gemmGeometry } from '../../src/cost/access/layer.js';
import { type MemoryConfig, simulateLayerMemory } from '../../src/cost/access/simulate.js';
import { parseScaleSimConfig, scaleSimProfile } from '../../src/cost/scalesim-config.js';
import type { Dataflow } from '../../src/cost/types.js';

const geometry = gemmGeometry({ m: 4, n: 3, k: 5 });
const array = { rows: 4, cols: 4 };
type Offsets = NonNullable<MemoryConfig['addressOffsets']>;

function run(dataflow: Dataflow, addressOffsets: Offsets | undefined, mode: 'calc' | 'user' = 'calc', ifmapSramWords = 4096) {
  const config: MemoryConfig = { mode, ifmapSramWords, filterSramWords: 4096, ofmapSramWords: 4096, bandwidthWordsPerCycle: 10, addressOffsets };
  return simulateLayerMemory(geometry, array, dataflow, config);
}

describe('SCALE-sim address offsets', () => {
  it('the element an offset puts at -1 is neither read nor written', () => {
    for (const df of ['os', 'ws', 'is'] as const) {
      // ws and is write every output once per row fold: K=5 over 4 rows is 2 folds; os once.
      const ofmapPasses = df === 'os' ? 1 : 2;
      const plain = run(df, undefined);
      expect(plain.dram.ifmap.dramReads, df).toBe(20);
      expect(plain.dram.filter.dramReads, df).toBe(15);
      expect(plain.dram.ofmap.dramWrites, df).toBe(12 * ofmapPasses);
      // -5 + 4 = -1: ifmap element (m0, k4) vanishes; -1 + 0: filter (n0, k0); -3 + 2: ofmap (m0, n2).
      const holed = run(df, { ifmap: -5, filter: -1, ofmap: -3 });
      expect(holed.dram.ifmap.dramReads, df).toBe(19);
      expect(holed.dram.filter.dramReads, df).toBe(14);
      expect(holed.dram.ofmap.dramWrites, df).toBe(11 * ofmapPasses);
      expect(holed.totalCycles, df).toBe(plain.totalCycles);
    }
  });

  it('offsets that put no element at -1 change nothing (SCALE-sim defaults, negative but out of range)', () => {
    const plain = run('os', undefined);
    for (const offsets of [{ ifmap: 0, filter: 10_000_000, ofmap: 20_000_000 }, { ifmap: -21, filter: -16, ofmap: -13 }, { ifmap: 7, filter: 0, ofmap: 3 }]) {
      expect(run('os', offsets)).toEqual(plain);
    }
  });

  it('a removed first element moves the SRAM start cycle', () => {
    // os ifmap: demand line 0 holds only (m0, k0), address 0; line 1 holds (m0, k1) and (m1, k0).
    // Reads are served one cycle later, so the start cycle goes from 1 to 2.
    expect(run('os', undefined).sram.ifmap.startCycle).toBe(1);
    expect(run('os', { ifmap: -1, filter: 0, ofmap: 0 }).sram.ifmap.startCycle).toBe(2);
    // os ofmap: after T-1 = 4 idle lines the flipped tile's bottom row (m3) comes first: line 4
    // holds only (m3, n0), address 9. Without it the first write is on line 5.
    expect(run('os', undefined).sram.ofmap.startCycle).toBe(4);
    expect(run('os', { ifmap: 0, filter: 0, ofmap: -10 }).sram.ofmap.startCycle).toBe(5);
    // ws: 2R-1 = 7 lines, then output row m0, column n0 first (address 0) alone on line 7.
    expect(run('ws', undefined).sram.ofmap.startCycle).toBe(7);
    expect(run('ws', { ifmap: 0, filter: 0, ofmap: -1 }).sram.ofmap.startCycle).toBe(8);
  });

  it('USER mode drops the element from the demand too', () => {
    const plain = run('os', undefined, 'user');
    const holed = run('os', { ifmap: -5, filter: -1, ofmap: -3 }, 'user');
    expect(plain.dram.ofmap.dramWrites).toBe(12);
    expect(holed.dram.ofmap.dramWrites).toBe(11);
    expect(holed.sram.ifmap).toEqual(plain.sram.ifmap); // (m0, k4) is not alone on its line
  });

  it('CALC times its first DRAM epoch from the first line whose largest address is > -1', () => {
    // M=4, N=3, K=130 (520 ifmap words) with a 1 KiB ifmap SRAM: sets of 10 words, an epoch closes
    // at 500 distinct words, and the first epoch is fetched at 10 words/cycle, 50 cycles before the
    // first request. IfmapOffset -130 makes addresses 0..128 negative (real) and 129 (m0, k129) -1.
    // Line 0 holds only (m0, k0) (address -130): the first request is line 1 (with (m1, k0) = 0).
    const big = gemmGeometry({ m: 4, n: 3, k: 130 });
    const config = (addressOffsets?: Offsets): MemoryConfig => ({
      mode: 'calc', ifmapSramWords: 1024, filterSramWords: 4096, ofmapSramWords: 4096, bandwidthWordsPerCycle: 10, addressOffsets,
    });
    const plain = simulateLayerMemory(big, array, 'os', config());
    expect(plain.dram.ifmap).toMatchObject({ dramReads: 520, dramStartCycle: -50 });
    const shifted = simulateLayerMemory(big, array, 'os', config({ ifmap: -130, filter: 0, ofmap: 0 }));
    expect(shifted.dram.ifmap).toMatchObject({ dramReads: 519, dramStartCycle: 1 - 50 });
  });

  it('a .cfg with a negative offset carries it into the profile; the shipped ones carry none', () => {
    const cfg = (offset: string): string =>
      `[general]\nrun_name = t\n[architecture_presets]\nArrayHeight: 4\nArrayWidth: 4\nIfmapSramSzkB: 1\nFilterSramSzkB: 1\nOfmapSramSzkB: 1\n` +
      `IfmapOffset: ${offset}\nFilterOffset: 10000000\nOfmapOffset: 20000000\nDataflow: os\n[run_presets]\nInterfaceBandwidth: CALC\n`;
    expect(scaleSimProfile(parseScaleSimConfig(cfg('-5'), 't.cfg'), 't.cfg').addressOffsets).toEqual({ ifmap: -5, filter: 10_000_000, ofmap: 20_000_000 });
    expect(scaleSimProfile(parseScaleSimConfig(cfg('0'), 't.cfg'), 't.cfg').addressOffsets).toBeUndefined();
  });
});
