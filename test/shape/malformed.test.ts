/**
 * Malformed nodes (too few inputs, a rank too small for the op, a short attribute list) fail with
 * one line naming the file, node and op: the user's error, never an internal one.
 */
import { describe, expect, it } from 'vitest';
import { DType } from '../../src/ir/dtype.js';
import { InputError } from '../../src/errors.js';
import { inferGraph, int, ints, node, type InputSpec } from './graph.js';

const F = DType.FLOAT;

/** The error inferring `nodes` throws (undefined when none). */
function errorOf(nodes: Parameters<typeof inferGraph>[0], inputs: InputSpec[]): unknown {
  try {
    inferGraph(nodes, inputs);
  } catch (e) {
    return e;
  }
  return undefined;
}

/** Checks a one-line InputError naming the node, with no internal error in it. */
function expectNodeError(e: unknown, nodeName: string, opType: string, what: RegExp): void {
  expect(e).toBeInstanceOf(InputError);
  const message = (e as Error).message;
  expect(message).not.toContain('\n');
  expect(message).not.toMatch(/internal error/);
  expect(message.startsWith(`memory.onnx: node '${nodeName}' (${opType}): `)).toBe(true);
  expect(message).toMatch(what);
}

describe('malformed nodes', () => {
  it('MatMul with one input (ONNX MatMul takes A and B) names the missing input 1', () => {
    const e = errorOf([node('MatMul', ['a'], ['y'])], [{ name: 'a', dtype: F, shape: [2, 3] }]);
    expectNodeError(e, 'MatMul_y', 'MatMul', /missing input 1/);
  });

  it('RoiAlign whose rois (input 1, [num_rois, 4]) is a scalar names the too-small rank', () => {
    const inputs: InputSpec[] = [
      { name: 'x', dtype: F, shape: [1, 3, 8, 8] },
      { name: 'rois', dtype: F, shape: [] },
      { name: 'idx', dtype: DType.INT64, shape: [1] },
    ];
    const e = errorOf([node('RoiAlign', ['x', 'rois', 'idx'], ['y'])], inputs);
    expectNodeError(e, 'RoiAlign_y', 'RoiAlign', /input 1 \('rois'\) has rank 0/);
  });

  it('ConvTranspose whose output_padding has fewer entries than its 2 spatial dims', () => {
    const inputs: InputSpec[] = [
      { name: 'x', dtype: F, shape: [1, 4, 5, 5] },
      { name: 'w', dtype: F, shape: [4, 2, 3, 3] },
    ];
    const e = errorOf([node('ConvTranspose', ['x', 'w'], ['y'], { output_padding: ints([1]), group: int(1) })], inputs);
    expectNodeError(e, 'ConvTranspose_y', 'ConvTranspose', /output_padding \[1\] is shorter than the 2 spatial dims/);
  });
});
