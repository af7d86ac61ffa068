/**
 * The ASTRA-sim log parser on real logs (test/fixtures/astra-sim/logs/README.md says how each was
 * recorded). Expected values are the logs' own `finished` lines (astra-sim workload/Workload.cc:571).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAstraLog, rankList } from '../../src/cluster/astra-log.js';

const LOGS = join(__dirname, '../fixtures/astra-sim/logs');
const log = (name: string): string => readFileSync(join(LOGS, name), 'utf8');

describe('parseAstraLog', () => {
  it('a finished run: every rank, its cycles and exposed communication', () => {
    const run = parseAstraLog(log('finished-8-ranks.log'), 8);
    expect(run.missing).toEqual([]);
    expect(run.finished.map((r) => r.rank)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // sys[0] finished, 6955017 cycles, exposed communication 3986435 cycles.
    expect(run.finished[0]).toEqual({ rank: 0, finishedCycles: 6955017, exposedCommCycles: 3986435 });
    expect(run.teardownAbort).toBeUndefined();
  });

  it("the teardown abort after every rank finished: all ranks and glibc's message", () => {
    const run = parseAstraLog(log('teardown-abort-134-8-ranks.log'), 8);
    expect(run.missing).toEqual([]);
    expect(run.finished.find((r) => r.rank === 4)).toEqual({ rank: 4, finishedCycles: 4017750, exposedCommCycles: 1358572 });
    expect(run.finished.find((r) => r.rank === 0)).toEqual({ rank: 0, finishedCycles: 5438398, exposedCommCycles: 2441042 });
    expect(run.teardownAbort).toBe('malloc_consolidate(): unaligned fastbin chunk detected');
  });

  it('a deadlock (exit 0) and a killed hang: the ranks that never finished', () => {
    expect(parseAstraLog(log('deadlock-2-ranks.log'), 2)).toEqual({ finished: [], missing: [0, 1] });
    const killed = parseAstraLog(log('timeout-killed-64-ranks.log'), 64);
    expect(killed.finished).toEqual([]);
    expect(killed.missing).toHaveLength(64);
  });

  it('a log with one rank missing names it; ranks past the world are ignored', () => {
    const lines = log('finished-8-ranks.log').split('\n').filter((l) => !l.includes('sys[5] finished'));
    const run = parseAstraLog(lines.join('\n'), 8);
    expect(run.missing).toEqual([5]);
    expect(parseAstraLog(log('finished-8-ranks.log'), 4).finished.map((r) => r.rank)).toEqual([0, 1, 2, 3]);
  });

  it('rankList shortens long lists', () => {
    expect(rankList([1, 2, 3])).toBe('1, 2, 3');
    expect(rankList(Array.from({ length: 10 }, (_, i) => i))).toBe('0, 1, 2, 3, 4, 5, 6, 7 and 2 more');
  });
});
