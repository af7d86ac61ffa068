/**
 * Errors caused by the user's input (a bad model, option or profile). The CLI prints their
 * one-line message and exits with code 2; anything else is a bug and keeps its stack trace.
 */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(message: string) {
    // Names from a file may hold control characters; escape them so the message stays one line.
    super(message.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
  }
}

/** An error about one node of a model's graph: the message names file, node and op. */
export function graphError(file: string, node: { name: string; opType: string }, what: string): InputError {
  const nodeName = node.name === '' ? '(unnamed)' : node.name;
  return new InputError(`${file}: node '${nodeName}' (${node.opType}): ${what}`);
}
