/**
 * A progress bar on stderr for long costing jobs (USER-mode inspect/compare): shown only on a
 * terminal and only once the job has run for a second, redrawn at most every 100 ms, erased at
 * the end. Counts costGemm calls against an expected total (three passes per layer and model).
 */
import type { CostModel } from '../cost/types.js';

const SHOW_AFTER_MS = 1000;
const REDRAW_MS = 100;
const WIDTH = 30;

export interface CostProgress {
  /** The models, each counting its costGemm calls. */
  models: CostModel[];
  /** Erases the bar, if drawn. */
  done(): void;
}

export function withCostProgress(models: readonly CostModel[], expectedCalls: number, stream: NodeJS.WriteStream = process.stderr): CostProgress {
  if (stream.isTTY !== true) return { models: [...models], done: () => {} };
  const started = Date.now();
  let calls = 0;
  let lastDrawMs = 0;
  let drawn = false;
  const tick = (): void => {
    calls++;
    const now = Date.now();
    if (now - started < SHOW_AFTER_MS || now - lastDrawMs < REDRAW_MS) return;
    lastDrawMs = now;
    const ratio = Math.min(1, calls / Math.max(1, expectedCalls));
    const filled = Math.round(ratio * WIDTH);
    stream.write(`\rcosting [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%`);
    drawn = true;
  };
  const wrapped = models.map((m): CostModel => ({
    name: m.name,
    profile: m.profile,
    costGemm: (gemm) => {
      tick();
      return m.costGemm(gemm);
    },
    costWeightUpdate: (bytes) => m.costWeightUpdate(bytes),
  }));
  return {
    models: wrapped,
    done: () => {
      if (drawn) stream.write('\r\x1b[K');
    },
  };
}
