/**
 * Checks on decoded values that well-formed protobuf can still get wrong: dims that are negative or
 * whose product is not exact (names with control characters are refused by `Wire.name`).
 */
import type { Dim } from '../ir/dim.js';
import { WireError } from './wire.js';

/** A well-formed file describing an impossible model: reported without "not a valid ONNX file". */
function modelError(message: string, offset: number): WireError {
  return new WireError(message, offset, false);
}

/**
 * Dims must be exact non-negative integers whose product (the element count) stays exact, so every
 * later count, byte size and MAC product starts from an honest number.
 */
export function checkDims(dims: readonly Dim[], what: string, offset: number): void {
  let product = 1;
  for (const d of dims) {
    if (typeof d !== 'number') continue;
    if (!Number.isSafeInteger(d) || d < 0) throw modelError(`${what}: dim ${d} is ${d < 0 ? 'negative' : 'not an exact integer'}`, offset);
    product *= d;
    if (product > Number.MAX_SAFE_INTEGER) throw modelError(`${what}: dims [${dims.join(', ')}] hold more than 2^53 elements`, offset);
  }
}
