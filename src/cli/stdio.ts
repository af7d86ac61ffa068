/**
 * The CLI's standard output and error. Creating `process.stdout` or `process.stderr` loads node's
 * stream machinery (~14 ms of a ~150 ms command, measured), so neither is touched before it is
 * needed, and, started as a program, output is written with `writeSync` (fd 1 and 2). Callers of
 * `runCli` (tests) keep `process.stdout` and `process.stderr`, which they can intercept.
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

/** Set once the reader of standard output has gone (EPIPE): later output is dropped. */
let stdoutGone = false;
/** Set once output went through `process.stdout` (after EAGAIN): from then on all of it does, in order. */
let stdoutStream = false;

/**
 * Writes to standard output: as a program, with `writeSync(1)` (no stream machinery); a closed
 * pipe (`modtrans ... | head`) is the reader's choice, not an error: the rest of the output is
 * dropped and the command still finishes its files.
 */
export function writeStdout(text: string): void {
  if (stdoutGone) return;
  if (direct && !stdoutStream) {
    const bytes = Buffer.from(text, 'utf8');
    let written = 0;
    try {
      while (written < bytes.length) written += writeSync(1, bytes, written);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') {
        stdoutGone = true;
        return;
      }
      // A full non-blocking stdout (EAGAIN) is left to the stream, which waits; nothing else is expected.
      if (code !== 'EAGAIN') failStdout(code ?? (e as Error).message);
      stdoutStream = true;
      streamStdout(bytes.subarray(written));
      return;
    }
  }
  streamStdout(text);
}

function failStdout(reason: string): never {
  writeStderr(`modtrans: cannot write to standard output (${reason})\n`);
  process.exit(2);
}

function streamStdout(chunk: string | Uint8Array): void {
  if (!stdoutWatched) {
    stdoutWatched = true;
    process.stdout.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') failStdout(e.code ?? e.message);
      stdoutGone = true;
      process.exit(0);
    });
  }
  process.stdout.write(chunk);
}
