/**
 * Errors caused by the user's input (a bad model, option or profile). The CLI prints their
 * one-line message and exits with code 2; anything else is a bug and keeps its stack trace.
 */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(message: string) {
    super(message);
  }
}

/** An error about one node of a model's graph: the message names file, node and op. */
export function graphError(file: string, node: { name: string; opType: string }, what: string): InputError {
  const nodeName = node.name === '' ? '(unnamed)' : node.name;
  return new InputError(`${file}: node '${nodeName}' (${node.opType}): ${what}`);
}
