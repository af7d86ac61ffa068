/**
 * The bench runner's progress bar ends with its suite: a suite whose last report is short of its
 * total (goals reported 6 of 7 once) left the bar's redraw timer holding the process open after
 * the results were written.
 */
import { describe, expect, it } from 'vitest';
import { progressBar } from '../../bench/run.js';

const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('bench progress bar', () => {
  it('finish() stops a bar left short of its total: no timer is left running', () => {
    const before = timers();
    const bar = progressBar('suite');
    bar.onProgress(0, 7, 'first');
    bar.onProgress(6, 7, 'done');
    expect(timers()).toBeGreaterThan(before); // the bar redraws on a timer while it runs
    bar.finish();
    expect(timers()).toBe(before);
  });

  it('a bar that reaches its total stops by itself', () => {
    const before = timers();
    const bar = progressBar('suite');
    bar.onProgress(0, 2, 'first');
    bar.onProgress(2, 2, 'done');
    expect(timers()).toBe(before);
  });
});
