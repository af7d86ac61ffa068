/**
 * Checks on decoded values that well-formed protobuf can still get wrong: names that would break
 * one-line messages, dims that are negative or whose product is not exact.
 */
import type { Dim } from '../ir/dim.js';
import { WireError, type Wire } from './wire.js';

/** A well-formed file describing an impossible model: reported without "not a valid ONNX file". */
function modelError(message: string, offset: number): WireError {
  return new WireError(message, offset, false);
}

/** C0 controls and DEL: never part of a real name, and they would break one-line messages. */
function hasControlChars(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/**
 * A name (of a value, node, tensor, attribute): refused when it holds control characters. One of
 * `known` when it is one (the same string, not a copy).
 */
export function readName(w: Wire, known?: readonly string[]): string {
  const at = w.pos;
  const name = known === undefined || known.length === 0 ? w.string() : w.stringAmong(known);
  if (hasControlChars(name)) throw modelError(`the name ${JSON.stringify(name.slice(0, 40))} holds control characters`, at);
  return name;
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
