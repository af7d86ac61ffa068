/**
 * Byte-for-byte equality of two byte strings (files, encoded traces). vitest's toEqual walks a
 * Buffer element by element through its generic equality, ~1 µs a byte: a few MB of traces took
 * seconds. This compares natively, and on a mismatch fails naming the lengths and the first byte
 * that differs.
 */
import { expect } from 'vitest';

export function expectSameBytes(actual: Uint8Array, expected: Uint8Array, what = 'bytes'): void {
  const a = Buffer.from(actual.buffer, actual.byteOffset, actual.byteLength);
  const b = Buffer.from(expected.buffer, expected.byteOffset, expected.byteLength);
  if (a.equals(b)) return;
  let first = 0;
  while (first < a.length && first < b.length && a[first] === b[first]) first++;
  expect({ bytes: a.length, firstDifference: first }, what).toEqual({ bytes: b.length, firstDifference: -1 });
}
