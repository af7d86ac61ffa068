/**
 * The one progress bar of modtrans (zoo downloads, bench suites, long costing and SCALE-sim runs),
 * drawn by cli-progress on stderr: redrawn in place at most 10 times a second on a terminal; in
 * logs and CI a plain line when it starts, every 5 s, and when it ends, never a flood.
 */
import { createRequire } from 'node:module';
import type { Params } from 'cli-progress';

/** cli-progress loads node:readline; most commands never draw a bar, so it loads on first use. */
const loadCliProgress = (): typeof import('cli-progress') => createRequire(import.meta.url)('cli-progress');

/** What is counted: bytes are shown in MB, items as `done/total`. */
export type ProgressUnit = 'bytes' | 'items';

export interface ProgressBar {
  /** `totalAmount` undefined: the size is unknown, only the amount done is shown. */
  update(doneAmount: number, totalAmount?: number, detail?: string): void;
  /** Draws the last state and ends the bar's line; the bar is not used after this. */
  done(): void;
}

export interface ProgressOptions {
  unit?: ProgressUnit;
  stream?: NodeJS.WriteStream;
  /** Erase the bar at the end on a terminal (a bar about work whose result follows), rather than leave its last state. */
  eraseWhenDone?: boolean;
}

const BAR_WIDTH = 30;
const PLAIN_LINE_EVERY_MS = 5_000;

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

/** The amount part of a line: `12.3 / 27.4 MB`, `12.3 MB` (size unknown), `3/10`. */
export function formatAmount(unit: ProgressUnit, doneAmount: number, totalAmount: number | undefined): string {
  if (unit === 'items') return totalAmount === undefined ? String(doneAmount) : `${doneAmount}/${totalAmount}`;
  return totalAmount === undefined ? `${mb(doneAmount)} MB` : `${mb(doneAmount)} / ${mb(totalAmount)} MB`;
}

export function progressBar(label: string, options: ProgressOptions = {}): ProgressBar {
  const cliProgress = loadCliProgress();
  const unit = options.unit ?? 'bytes';
  let known: { total: number | undefined; detail: string } = { total: undefined, detail: '' };
  const line = (barOptions: { barsize?: number; barCompleteString?: string; barIncompleteString?: string; barGlue?: string }, params: Params): string => {
    const amount = formatAmount(unit, params.value, known.total);
    const detail = known.detail === '' ? '' : `  ${known.detail}`;
    if (known.total === undefined || known.total <= 0) return `${label} ${amount}${detail}`;
    const ratio = Math.min(1, params.value / known.total);
    const bar = cliProgress.Format.BarFormat(ratio, barOptions as Parameters<typeof cliProgress.Format.BarFormat>[1]);
    return `${label} [${bar}] ${String(Math.floor(ratio * 100)).padStart(3)}%  ${amount}${detail}`;
  };
  const stream = options.stream ?? process.stderr;
  const bar = new cliProgress.SingleBar({
    stream,
    // Off a terminal each draw already ends its line; "clearing" there only adds a blank line.
    clearOnComplete: stream.isTTY !== true || options.eraseWhenDone === true,
    format: (barOptions, params) => line(barOptions, params),
    barsize: BAR_WIDTH,
    barCompleteChar: '#',
    barIncompleteChar: '.',
    hideCursor: false,
    noTTYOutput: true,
    notTTYSchedule: PLAIN_LINE_EVERY_MS,
    fps: 10,
  });
  let started = false;
  return {
    update(doneAmount, totalAmount, detail) {
      known = { total: totalAmount, detail: detail ?? known.detail };
      if (!started) {
        started = true;
        bar.start(totalAmount ?? 0, doneAmount);
      } else {
        if (totalAmount !== undefined) bar.setTotal(totalAmount);
        bar.update(doneAmount);
      }
    },
    done() {
      if (started) bar.stop();
    },
  };
}
