/**
 * The CLI's standard output and error. Creating `process.stdout` or `process.stderr` loads node's
 * stream machinery (~14 ms of a ~150 ms command, measured), so neither is touched before it is
 * needed, and, started as a program, messages to stderr are one `writeSync(2)` each. Callers of
 * `runCli` (tests) keep `process.stderr`, which they can intercept.
 */
import { writeSync } from 'node:fs';

let direct = false;
let stdoutWatched = false;

/** Called once by the program's entry point. */
export function writeStderrDirectly(): void {
  direct = true;
}

export function writeStderr(text: string): void {
  if (direct) {
    try {
      writeSync(2, text);
      return;
    } catch (e) {
      // A closed stderr (EPIPE) swallows the message, as process.stderr would; a full
      // non-blocking one (EAGAIN) goes through the stream, which waits.
      if ((e as NodeJS.ErrnoException).code === 'EPIPE') return;
    }
  }
  process.stderr.write(text);
}

export function writeStdout(text: string): void {
  if (!stdoutWatched) {
    stdoutWatched = true;
    // `modtrans ... | head` closes the pipe early: that is the reader's choice, not an error.
    process.stdout.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') writeStderr(`modtrans: cannot write to standard output (${e.code ?? e.message})\n`);
      process.exit(e.code === 'EPIPE' ? 0 : 2);
    });
  }
  process.stdout.write(text);
}
