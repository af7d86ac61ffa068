/**
 * Progress of long costing jobs (USER-mode inspect/translate/compare, scalesim) on modtrans's one
 * bar (src/progress.ts): shown only on a terminal and only once the job has run for a second,
 * erased at the end. Counts steps (costGemm calls, layers) against an expected total.
 */
import { fstatSync } from 'node:fs';
import { createRequire } from 'node:module';
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

/**
 * Whether stderr may be a terminal: a character device (a terminal, or /dev/null). Asked with one
 * fstat, without creating `process.stderr` (see stdio.ts) or loading node:tty, which pulls in
 * net and streams (~8 ms of every start); `stderrIsTerminal` asks for sure, when a bar is due.
 */
function stderrMayBeTerminal(): boolean {
  try {
    return fstatSync(2).isCharacterDevice();
  } catch {
    return false;
  }
}

const stderrIsTerminal = (): boolean => (createRequire(import.meta.url)('node:tty') as typeof import('node:tty')).isatty(2);

/** A bar labelled `label` over `expectedSteps` steps (nothing at all off a terminal). */
export function stepProgress(label: string, expectedSteps: number, stream?: NodeJS.WriteStream): StepProgress {
  if (stream === undefined ? !stderrMayBeTerminal() : stream.isTTY !== true) return NO_PROGRESS;
  const started = Date.now();
  let steps = 0;
  let bar: ProgressBar | undefined;
  let off = false;
  return {
    tick() {
      steps++;
      if (bar === undefined) {
        if (off || Date.now() - started < SHOW_AFTER_MS) return;
        off = stream === undefined && !stderrIsTerminal();
        if (off) return;
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

/** `expectedCalls` may be a function: counted only when a bar may be drawn (stderr may be a terminal). */
export function withCostProgress(models: readonly CostModel[], expectedCalls: number | (() => number), stream?: NodeJS.WriteStream): CostProgress {
  if (stream === undefined ? !stderrMayBeTerminal() : stream.isTTY !== true) return { models: [...models], done: () => {} };
  const bar = stepProgress('costing', typeof expectedCalls === 'number' ? expectedCalls : expectedCalls(), stream);
  if (bar === NO_PROGRESS) return { models: [...models], done: () => {} };
  // A costed plan costs some figures on first read, maybe after the bar is done: no tick then.
  let counting = true;
  const wrapped = models.map((m): CostModel => ({
    name: m.name,
    profile: m.profile,
    costGemm: (gemm) => {
      if (counting) bar.tick();
      return m.costGemm(gemm);
    },
    costWeightUpdate: (bytes) => m.costWeightUpdate(bytes),
  }));
  return {
    models: wrapped,
    done: () => {
      counting = false;
      bar.done();
    },
  };
}
