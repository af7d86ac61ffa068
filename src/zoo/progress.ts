/** A download progress bar on stderr: redrawn in place on a terminal, a few plain lines otherwise. */
import type { Progress } from './download.js';

const WIDTH = 30;
const REDRAW_MS = 100;

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

/** One bar line: `[#######.......]  45%  12.3 / 27.4 MB`, or bytes only when the size is unknown. */
export function formatBar(doneBytes: number, totalBytes: number | undefined): string {
  if (totalBytes === undefined || totalBytes <= 0) return `${mb(doneBytes)} MB`;
  const ratio = Math.min(1, doneBytes / totalBytes);
  const filled = Math.round(ratio * WIDTH);
  return `[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%  ${mb(doneBytes)} / ${mb(totalBytes)} MB`;
}

export interface ProgressBar {
  update: Progress;
  /** Ends the bar's line. */
  done(): void;
}

export function progressBar(label: string, stream: NodeJS.WriteStream = process.stderr): ProgressBar {
  const tty = stream.isTTY === true;
  let lastDrawMs = 0;
  let lastPercent = -25;
  let drawn = false;
  let last: [number, number | undefined] = [0, undefined];
  const draw = (): void => {
    stream.write(`${tty ? '\r' : ''}${label} ${formatBar(...last)}${tty ? '' : '\n'}`);
    drawn = true;
  };
  return {
    update(doneBytes, totalBytes) {
      last = [doneBytes, totalBytes];
      const now = Date.now();
      if (tty && now - lastDrawMs >= REDRAW_MS) {
        lastDrawMs = now;
        draw();
      } else if (!tty && totalBytes !== undefined && (doneBytes / totalBytes) * 100 >= lastPercent + 25) {
        // Logs and CI: a line per quarter, not a flood.
        lastPercent = Math.floor((doneBytes / totalBytes) * 4) * 25;
        draw();
      }
    },
    done() {
      if (tty) {
        draw();
        stream.write('\n');
      } else if (drawn && lastPercent < 100) draw();
    },
  };
}
