/**
 * ASTRA-sim 2.x's log -> each rank's finish: astra-sim workload/Workload.cc:571 logs, when a rank's
 * trace is done, `sys[R] finished, N cycles, exposed communication M cycles.` (cycles are ns at
 * the default 1 GHz). A pure function of the text, tested on recorded logs (test/fixtures/astra-sim/logs/).
 */

export interface RankFinish {
  rank: number;
  finishedCycles: number;
  exposedCommCycles: number;
}

export interface AstraRunLog {
  /** Ranks that finished, by rank. */
  finished: RankFinish[];
  /** Ranks of 0 .. ranks-1 with no finished line, ascending. */
  missing: number[];
  /** The glibc abort ASTRA-sim master can hit in its teardown (malloc_consolidate ...), if printed. */
  teardownAbort?: string;
}

const FINISHED = /sys\[(\d+)\] finished, (\d+) cycles, exposed communication (\d+) cycles\./g;
const GLIBC_ABORT = /(malloc_consolidate\(\)[^\n]*|free\(\): [^\n]*|double free[^\n]*|corrupted [^\n]*)/;

export function parseAstraLog(text: string, ranks: number): AstraRunLog {
  const byRank = new Map<number, RankFinish>();
  for (const m of text.matchAll(FINISHED)) {
    const rank = Number(m[1]);
    if (rank >= ranks) continue;
    byRank.set(rank, { rank, finishedCycles: Number(m[2]), exposedCommCycles: Number(m[3]) });
  }
  const missing: number[] = [];
  for (let r = 0; r < ranks; r++) if (!byRank.has(r)) missing.push(r);
  const abort = GLIBC_ABORT.exec(text)?.[1]?.trim();
  return { finished: [...byRank.values()].sort((a, b) => a.rank - b.rank), missing, ...(abort === undefined ? {} : { teardownAbort: abort }) };
}

/** "3, 5 and 9 more" for an error line. */
export function rankList(ranks: readonly number[], shown = 8): string {
  const head = ranks.slice(0, shown).join(', ');
  return ranks.length > shown ? `${head} and ${ranks.length - shown} more` : head;
}
