/**
 * A progress bar on stderr for long costing jobs (USER-mode inspect/translate/compare, scalesim):
 * shown only on a terminal and only once the job has run for a second, redrawn at most every
 * 100 ms, erased at the end. Counts steps (costGemm calls, layers) against an expected total.
 */
import type { CostModel } from '../cost/types.js';

const SHOW_AFTER_MS = 1000;
const REDRAW_MS = 100;
const WIDTH = 30;

export interface StepProgress {
  /** One more step done. */
  tick(): void;
  /** Erases the bar, if drawn. */
  done(): void;
}

/** A bar labelled `label` over `expectedSteps` steps (nothing at all off a terminal). */
export function stepProgress(label: string, expectedSteps: number, stream: NodeJS.WriteStream = process.stderr): StepProgress {
  if (stream.isTTY !== true) return { tick: () => {}, done: () => {} };
  const started = Date.now();
  let steps = 0;
  let lastDrawMs = 0;
  let drawn = false;
  return {
    tick() {
      steps++;
      const now = Date.now();
      if (now - started < SHOW_AFTER_MS || now - lastDrawMs < REDRAW_MS) return;
      lastDrawMs = now;
      const ratio = Math.min(1, steps / Math.max(1, expectedSteps));
      const filled = Math.round(ratio * WIDTH);
      stream.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%`);
      drawn = true;
    },
    done() {
      if (drawn) stream.write('\r\x1b[K');
    },
  };
}

export interface CostProgress {
  /** The models, each counting its costGemm calls. */
  models: CostModel[];
  /** Erases the bar, if drawn. */
  done(): void;
}

export function withCostProgress(models: readonly CostModel[], expectedCalls: number, stream: NodeJS.WriteStream = process.stderr): CostProgress {
  if (stream.isTTY !== true) return { models: [...models], done: () => {} };
  const bar = stepProgress('costing', expectedCalls, stream);
  const wrapped = models.map((m): CostModel => ({
    name: m.name,
    profile: m.profile,
    costGemm: (gemm) => {
      bar.tick();
      return m.costGemm(gemm);
    },
    costWeightUpdate: (bytes) => m.costWeightUpdate(bytes),
  }));
  return { models: wrapped, done: () => bar.done() };
}
