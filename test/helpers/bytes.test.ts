/** The byte-comparison helper the trace and file tests rely on: silent on equal bytes, failing on any difference. */
import { describe, expect, it } from 'vitest';
import { expectSameBytes } from './bytes.js';

describe('expectSameBytes', () => {
  it('passes on the same bytes, views of one buffer at other offsets included', () => {
    const whole = Uint8Array.from([9, 1, 2, 3, 9]);
    expect(() => expectSameBytes(whole.subarray(1, 4), Uint8Array.from([1, 2, 3]))).not.toThrow();
    expect(() => expectSameBytes(new Uint8Array(0), new Uint8Array(0))).not.toThrow();
  });

  it('fails naming the first byte that differs, and the lengths', () => {
    expect(() => expectSameBytes(Uint8Array.from([1, 2, 3]), Uint8Array.from([1, 2, 4]), 'x.et')).toThrow('x.et: expected { bytes: 3, firstDifference: 2 } to deeply equal { bytes: 3, firstDifference: -1 }');
    expect(() => expectSameBytes(Uint8Array.from([1, 2]), Uint8Array.from([1, 2, 3]))).toThrow('expected { bytes: 2, firstDifference: 2 } to deeply equal { bytes: 3, firstDifference: -1 }');
  });
});
