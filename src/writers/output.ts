/**
 * What every output format hands the command: files (text or bytes) by path, or text for
 * standard output, and one-line notes for stderr. A writer takes finished data (a step schedule,
 * a layer table, report rows) and returns this; it never touches the file system, so the command
 * writes all or nothing (cli/output.ts writeFileAtomic).
 */
export interface OutputFile {
  path: string;
  bytes: string | Uint8Array;
}

export interface WriterOutput {
  /** Files written before `stream`, in this order. */
  files: OutputFile[];
  /** Files produced one at a time while they are written (per-rank traces: bounded memory). */
  stream?: Iterable<OutputFile>;
  /** The output when it goes to standard output (no -o, or -o -). */
  stdout?: string;
  /** Lines for stderr (rounding summaries, what the format cannot keep apart). */
  notes: string[];
  /** What was written, for the command's summary line (default: the -o path). */
  what?: string;
}

/** A writer: finished data and where it goes -> what to write. It formats; it decides nothing. */
export type Writer<Input, Options> = (input: Input, options: Options) => WriterOutput | Promise<WriterOutput>;

/** `text` as the file `output`, or on standard output when there is none (or it is '-'). */
export function fileOrStdout(output: string | undefined, text: string, notes: string[] = []): WriterOutput {
  return output === undefined || output === '-' ? { files: [], stdout: text, notes } : { files: [{ path: output, bytes: text }], notes };
}

/** The serializations of a report: JSON, CSV or an aligned text table. */
export type ReportFormat = 'json' | 'csv' | 'table';

/** A report file's format from its name: .csv is CSV, anything else JSON. */
export function reportFormatOfPath(path: string): ReportFormat {
  return path.toLowerCase().endsWith('.csv') ? 'csv' : 'json';
}
