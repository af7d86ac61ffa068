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
 * later count, byte size and MAC product starts from an honest number. `dims[0 .. count)` are
 * checked; the message names `kind 'name'`, built only on failure (a template string per tensor
 * was 36 MB of garbage on the 100k-node chain).
 */
export function checkDims(dims: readonly Dim[], kind: string, name: string, offset: number, count = dims.length): void {
  let product = 1;
  for (let i = 0; i < count; i++) {
    const d = dims[i];
    if (typeof d !== 'number') continue;
    if (!Number.isSafeInteger(d) || d < 0) throw modelError(`${kind} '${name}': dim ${d} is ${d < 0 ? 'negative' : 'not an exact integer'}`, offset);
    product *= d;
    if (product > Number.MAX_SAFE_INTEGER) throw modelError(`${kind} '${name}': dims [${dims.slice(0, count).join(', ')}] hold more than 2^53 elements`, offset);
  }
}
