/**
 * Progress of long costing jobs (USER-mode inspect/translate/compare, scalesim) on modtrans's one
 * bar (src/progress.ts): shown only on a terminal and only once the job has run for a second,
 * erased at the end. Counts steps (costGemm calls, layers) against an expected total.
 */
import { isatty } from 'node:tty';
import type { CostModel } from '../cost/types.js';
import { progressBar, type ProgressBar } from '../progress.js';

const SHOW_AFTER_MS = 1000;

export interface StepProgress {
  /** One more step done. */
  tick(): void;
  /** Erases the bar, if drawn. */
  done(): void;
}

const NO_PROGRESS: StepProgress = { tick: () => {}, done: () => {} };

/** Whether stderr is a terminal, asked without creating `process.stderr` (see stdio.ts). */
const stderrIsTerminal = (): boolean => isatty(2);

/** A bar labelled `label` over `expectedSteps` steps (nothing at all off a terminal). */
export function stepProgress(label: string, expectedSteps: number, stream?: NodeJS.WriteStream): StepProgress {
  if (stream === undefined ? !stderrIsTerminal() : stream.isTTY !== true) return NO_PROGRESS;
  const started = Date.now();
  let steps = 0;
  let bar: ProgressBar | undefined;
  return {
    tick() {
      steps++;
      if (bar === undefined) {
        if (Date.now() - started < SHOW_AFTER_MS) return;
        bar = progressBar(label, { unit: 'items', eraseWhenDone: true, ...(stream === undefined ? {} : { stream }) });
      }
      bar.update(steps, expectedSteps);
    },
    done() {
      bar?.done();
    },
  };
}

export interface CostProgress {
  /** The models, each counting its costGemm calls. */
  models: CostModel[];
  /** Erases the bar, if drawn. */
  done(): void;
}

/** `expectedCalls` may be a function: counted only when a bar can be drawn (a terminal). */
export function withCostProgress(models: readonly CostModel[], expectedCalls: number | (() => number), stream?: NodeJS.WriteStream): CostProgress {
  if (stream === undefined ? !stderrIsTerminal() : stream.isTTY !== true) return { models: [...models], done: () => {} };
  const bar = stepProgress('costing', typeof expectedCalls === 'number' ? expectedCalls : expectedCalls(), stream);
  if (bar === NO_PROGRESS) return { models: [...models], done: () => {} };
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
