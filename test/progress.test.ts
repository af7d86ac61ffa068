/** The shared progress bar, on a stream that is not a terminal (logs, CI): a few whole lines. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatAmount, progressBar } from '../src/progress.js';

function captured(): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, next) {
      text += String(chunk);
      next();
    },
  }) as unknown as NodeJS.WriteStream;
  return { stream, lines: () => text.split('\n').map((l) => l.trim()).filter((l) => l !== '') };
}

describe('progress bar', () => {
  it('formats amounts in MB for bytes and as done/total for items', () => {
    expect(formatAmount('bytes', 12_345_678, 27_400_000)).toBe('12.3 / 27.4 MB');
    expect(formatAmount('bytes', 5_000_000, undefined)).toBe('5.0 MB');
    expect(formatAmount('items', 3, 10)).toBe('3/10');
  });

  it('writes a line when it starts and one when it ends, not one per update', () => {
    const out = captured();
    const bar = progressBar('downloading zoo:x', { stream: out.stream });
    for (let done = 0; done <= 20_000_000; done += 1_000_000) bar.update(done, 20_000_000);
    bar.done();
    expect(out.lines()).toEqual([
      `downloading zoo:x [${'.'.repeat(30)}]   0%  0.0 / 20.0 MB`,
      `downloading zoo:x [${'#'.repeat(30)}] 100%  20.0 / 20.0 MB`,
    ]);
  });

  it('shows only the amount when the size is unknown, and carries a detail', () => {
    const out = captured();
    const bar = progressBar('bench', { stream: out.stream, unit: 'items' });
    bar.update(0, undefined, 'starting');
    bar.update(7, undefined);
    bar.done();
    expect(out.lines()).toEqual(['bench 0  starting', 'bench 7  starting']);
  });

  it('draws nothing if never updated', () => {
    const out = captured();
    progressBar('idle', { stream: out.stream }).done();
    expect(out.lines()).toEqual([]);
  });
});
