/** The bar of USER-mode inspect/translate/compare and scalesim: the shared bar (src/progress.ts), on a terminal only, after one second, erased at the end. */
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { stepProgress, withCostProgress } from '../../src/cli/cost-progress.js';
import type { CostModel } from '../../src/cost/types.js';
import { at } from '../../src/errors.js';

/** A stream that says it is (or is not) a terminal and keeps what is written, cursor moves ignored. */
function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  let written = '';
  const stream = Object.assign(
    new Writable({
      write(chunk, _enc, next) {
        written += String(chunk);
        next();
      },
    }),
    { isTTY, columns: 120, cursorTo: () => true, clearLine: () => true, moveCursor: () => true, clearScreenDown: () => true },
  ) as unknown as NodeJS.WriteStream;
  return { stream, text: () => written };
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

  it('draws nothing in the first second, then the share of GEMMs costed', () => {
    const { stream, text } = fakeStream(true);
    const progress = withCostProgress([model], 4, stream);
    const counted = at(progress.models, 0);
    expect(counted.costGemm(gemm).cycles).toBe(7);
    expect(text()).toBe('');
    vi.advanceTimersByTime(1500);
    counted.costGemm(gemm);
    expect(text()).toContain(`costing [${'#'.repeat(15)}${'.'.repeat(15)}]  50%  2/4`);
    progress.done();
  });

  it('counts steps of its own (scalesim layers)', () => {
    const { stream, text } = fakeStream(true);
    const bar = stepProgress('simulating', 4, stream);
    vi.advanceTimersByTime(1200);
    bar.tick();
    bar.tick();
    bar.tick();
    vi.advanceTimersByTime(200); // the shared bar redraws on its own clock
    expect(text()).toContain(`simulating [${'#'.repeat(23)}${'.'.repeat(7)}]  75%  3/4`);
    bar.done();
  });

  it('writes nothing off a terminal and passes the models through', () => {
    const { stream, text } = fakeStream(false);
    const progress = withCostProgress([model], 1, stream);
    vi.advanceTimersByTime(5000);
    expect(at(progress.models, 0).costWeightUpdate(12)).toBe(12);
    at(progress.models, 0).costGemm(gemm);
    progress.done();
    expect(text()).toBe('');
  });

  it('off a terminal, a total given as a function is never counted', () => {
    const { stream } = fakeStream(false);
    const count = vi.fn(() => 3);
    withCostProgress([model], count, stream).done();
    expect(count).not.toHaveBeenCalled();
    const tty = fakeStream(true);
    withCostProgress([model], count, tty.stream).done();
    expect(count).toHaveBeenCalledTimes(1);
  });
});
