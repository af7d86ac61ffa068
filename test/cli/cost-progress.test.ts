/** The bar of USER-mode inspect/translate/compare and scalesim: a terminal only, after one second, erased at the end. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { stepProgress, withCostProgress } from '../../src/cli/cost-progress.js';
import type { CostModel } from '../../src/cost/types.js';
import { at } from '../../src/errors.js';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; written: string[] } {
  const written: string[] = [];
  const stream = { isTTY, write: (text: string) => written.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, written };
}

const model: CostModel = {
  name: 'fixed',
  profile: {} as CostModel['profile'],
  costGemm: () => ({ cycles: 7, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 }),
  costWeightUpdate: (bytes) => bytes,
};
const gemm = { m: 1, n: 1, k: 1 };

describe('costing progress bar', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('draws nothing in the first second, then the share of GEMMs costed, and erases itself', () => {
    const { stream, written } = fakeStream(true);
    const progress = withCostProgress([model], 4, stream);
    const counted = at(progress.models, 0);
    expect(counted.costGemm(gemm).cycles).toBe(7);
    expect(written).toEqual([]);
    vi.advanceTimersByTime(1500);
    counted.costGemm(gemm);
    expect(written).toEqual([`\rcosting [${'#'.repeat(15)}${'.'.repeat(15)}]  50%`]);
    progress.done();
    expect(written.at(-1)).toBe('\r\x1b[K');
  });

  it('counts steps of its own (scalesim layers) and redraws at most every 100 ms', () => {
    const { stream, written } = fakeStream(true);
    const bar = stepProgress('simulating', 4, stream);
    vi.advanceTimersByTime(1200);
    bar.tick();
    bar.tick(); // same instant: not redrawn
    vi.advanceTimersByTime(100);
    bar.tick();
    expect(written).toEqual([`\rsimulating [${'#'.repeat(8)}${'.'.repeat(22)}]  25%`, `\rsimulating [${'#'.repeat(23)}${'.'.repeat(7)}]  75%`]);
    bar.done();
    expect(written.length).toBe(3);
  });

  it('writes nothing off a terminal and passes the models through', () => {
    const { stream, written } = fakeStream(false);
    const progress = withCostProgress([model], 1, stream);
    vi.advanceTimersByTime(5000);
    expect(at(progress.models, 0).costWeightUpdate(12)).toBe(12);
    at(progress.models, 0).costGemm(gemm);
    progress.done();
    expect(written).toEqual([]);
  });
});
