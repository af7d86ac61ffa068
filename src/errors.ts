/** Longest InputError message: user strings of any size (a 50 MB pattern) never reach the terminal whole. */
export const MAX_MESSAGE_CHARS = 2000;

/**
 * Errors caused by the user's input (a bad model, option or profile). The CLI prints their
 * one-line message and exits with code 2; anything else is a bug and keeps its stack trace.
 */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(message: string) {
    super(boundedLine(message, MAX_MESSAGE_CHARS));
  }
}

/**
 * `text` on one line and at most about `maxChars` long: control characters escaped (names from a
 * file may hold them), the middle cut out and replaced by how many characters were left out.
 */
export function boundedLine(text: string, maxChars: number): string {
  const cut = text.length <= maxChars ? text : `${text.slice(0, Math.ceil(maxChars / 2))}...(${text.length - maxChars} characters left out)...${text.slice(text.length - Math.floor(maxChars / 2))}`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return cut.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Longest user string quoted in a message (a key, a value, a pattern). */
export const MAX_QUOTED_CHARS = 80;

/** A user string for a message: cut to MAX_QUOTED_CHARS, control characters escaped. */
export function shown(text: string): string {
  return boundedLine(text, MAX_QUOTED_CHARS);
}

/** An error about one node of a model's graph: the message names file, node and op. */
export function graphError(file: string, node: { name: string; opType: string }, what: string): InputError {
  const nodeName = node.name === '' ? '(unnamed)' : node.name;
  return new InputError(`${file}: node '${nodeName}' (${node.opType}): ${what}`);
}

/** Words for the file-system errors a user meets, instead of Node's codes (ENOENT, EISDIR, ...). */
const FS_ERROR_WORDS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'is a folder',
  ENOTDIR: 'a part of the path is not a folder',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EEXIST: 'already exists',
  ENOSPC: 'no space left on the device',
  EROFS: 'read-only file system',
  EMFILE: 'too many open files',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many symbolic links',
  EBUSY: 'file is busy',
  EXDEV: 'cannot move across file systems',
  EFBIG: 'file too large for the file-size limit, ulimit -f',
  EDQUOT: 'disk quota exceeded',
  ENOTEMPTY: 'folder not empty',
};

/** A file-system error as words ("no such file", "is a folder"), else its message. */
export function fsErrorWords(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const words = code === undefined ? undefined : FS_ERROR_WORDS[code];
  return words ?? code ?? (e instanceof Error ? e.message : String(e));
}

/**
 * The error of an index outside an array: a bug (a broken invariant), never bad input. Hot loops
 * write `items[i] ?? indexOutOfRange(i)`: a helper function per access (a generic at()) blew V8's
 * inlining budget there and made the memory walk 2.5x slower.
 */
export function indexOutOfRange(i: number): never {
  throw new Error(`internal error: index ${i} is outside the array`);
}

/**
 * Element i of an array or typed array, for indices the code itself computed: one out of range
 * is a bug, reported as such instead of flowing on as undefined or NaN.
 */
export function at<T>(items: ArrayLike<T>, i: number): T {
  const item = items[i];
  if (item === undefined) throw new Error(`internal error: index ${i} is outside 0..${items.length - 1}`);
  return item;
}

/**
 * Throws the error of a broken invariant: a bug, never bad input, so it keeps its stack trace.
 * Inline form for places where a helper call per access would cost: `x ?? internalError('...')`
 * (the message is only built when x is missing).
 */
export function internalError(what: string): never {
  throw new Error(`internal error: ${what}`);
}

/** x, which the code itself guarantees is there; undefined is a bug that names what was missing. */
export function defined<T>(x: T | undefined, what: string): T {
  if (x === undefined) throw new Error(`internal error: ${what} is missing`);
  return x;
}

/** The value of key in a map the code itself filled; a missing key is a bug that names the map. */
export function mapGet<K, V>(map: ReadonlyMap<K, V>, key: K, what: string): V {
  const value = map.get(key);
  if (value === undefined) throw new Error(`internal error: ${what} has no entry for ${String(key)}`);
  return value;
}

/** The last element of an array the code itself keeps non-empty; an empty one is a bug. */
export function last<T>(items: ArrayLike<T>, what: string): T {
  const item = items[items.length - 1];
  if (item === undefined) throw new Error(`internal error: ${what} is empty`);
  return item;
}
