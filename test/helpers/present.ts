/** Narrowing for tests: a missing value fails the test with a message naming it, instead of a `!`. */
import { assert } from 'vitest';

/** x, or a failed test naming `what` when x is undefined or null. */
export function present<T>(x: T | null | undefined, what: string): T {
  if (x === undefined || x === null) assert.fail(`${what} is missing`);
  return x;
}
