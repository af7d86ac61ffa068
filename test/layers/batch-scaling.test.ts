/**
 * Invariant (b) on small graphs: a re-batched run (a static export at --batch N, or a dynamic
 * export's batch dim bound) fails naming the layer and the constant when a layer the batch flows
 * into does not do N times its batch-1 work; it holds, and counts the layers, when every one does.
 * Expected shapes are worked from the graphs: x is [b, 4, 8], W is [8, 8].
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchScalingOf } from '../../src/layers/batch-scaling.js';
import { analyseModel } from '../../src/pipeline.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { buildModel, FLOAT, INT64, type GraphSpec, type NodeSpec } from '../helpers/onnx-builder.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-batch-scaling-'));
const ints = (name: string, values: number[]) => ({ name, dtype: INT64, dims: [values.length], values });

/** x -> (a pinning node) -> MatMul by W -> scores MatMul(h, h^T). */
function model(name: string, batchDim: number | string, pin: NodeSpec[], pinned: string): string {
  const g: GraphSpec = {
    inputs: [{ name: 'x', dtype: FLOAT, dims: [batchDim, 4, 8] }],
    outputs: [{ name: 'scores', dtype: FLOAT, dims: [] }],
    initializers: [{ name: 'W', dtype: FLOAT, dims: [8, 8], external: { location: 'w.bin' } }, ints('target', [1, -1, 8]), ints('zero', [0]), ints('one', [1])],
    nodes: [
      ...pin,
      { op: 'MatMul', inputs: [pinned, 'W'], outputs: ['h'], name: 'proj' },
      { op: 'Transpose', inputs: ['h'], outputs: ['hT'], attrs: { perm: [0, 2, 1] } },
      { op: 'MatMul', inputs: ['h', 'hT'], outputs: ['scores'], name: 'scores' },
    ],
  };
  const path = join(dir, `${name}.onnx`);
  writeFileSync(path, buildModel(g, 14));
  return path;
}

const viewPin: NodeSpec[] = [{ op: 'Reshape', inputs: ['x', 'target'], outputs: ['v'], name: 'view_1' }];
const slicePin: NodeSpec[] = [{ op: 'Slice', inputs: ['x', 'zero', 'one', 'zero'], outputs: ['v'], name: 'first_sample' }];

describe('batch scaling', () => {
  it('holds on a graph without pins: 2 layers x8', () => {
    const path = model('clean', 1, [], 'x');
    const analysed = analyseModel(path, { batch: 8 });
    expect(batchScalingOf(analysed, { batch: 8 })).toEqual({ batch: 8, referenceBatch: 1, layers: 2 });
  });

  it('a static export: Slice bounds that keep sample 0 drop the batch (the projection stays at [1,4,8])', () => {
    const path = model('slice', 1, slicePin, 'v');
    const analysed = analyseModel(path, { batch: 8 });
    expect(() => batchScalingOf(analysed, { batch: 8 })).toThrow(
      /layer 'W' \(node 'proj', MatMul\) does not scale with the batch: its output is \[1,4,8\] at batch 8 and \[1,4,8\] at batch 1 \(x1, not x8\): node 'first_sample' \(Slice\) drops the batch with the constant 'one' = \[1\]; export the model with a dynamic batch dim/,
    );
  });

  it('a dynamic export with its batch bound (--dim or --batch): a view(1, -1, 8) folds the batch into the rows, scores x64', () => {
    const path = model('dynamic', 'batch', viewPin, 'v');
    for (const bindings of [{ dims: new Map([['batch', 8]]) }, { batch: 8 }]) {
      const analysed = analyseModel(path, bindings);
      // [1, 32, 32] scores at batch 8 against [1, 4, 4] at batch 1.
      expect(() => batchScalingOf(analysed, bindings)).toThrow(/layer 'scores\.MatMul' \(node 'scores', MatMul\) .* its output is \[1,32,32\] at batch 8 and \[1,4,4\] at batch 1 \(x64, not x8\): node 'view_1' \(Reshape\) moves the batch with the constant 'target' = \[1,-1,8\]; the graph spells the batch as a constant there/);
    }
    // Unbound or bound to 1, there is nothing to compare.
    expect(batchScalingOf(analyseModel(path, { dims: new Map([['batch', 1]]) }), { dims: new Map([['batch', 1]]) })).toBeUndefined();
  });

  it('translate and memory exit 2 on it; at the exported batch they run', async () => {
    const path = model('cli', 1, slicePin, 'v');
    const [translate, memory, exported] = await runCliBatch([
      { args: ['translate', path, '--batch', '8', '-o', join(dir, 'out.txt')], cwd: dir },
      { args: ['memory', path, '--micro-batch', '4', '--global-batch', '32'], cwd: dir },
      { args: ['translate', path, '-o', join(dir, 'out1.txt')], cwd: dir },
    ]);
    expect([translate?.status, memory?.status, exported?.status]).toEqual([2, 2, 0]);
    expect(translate?.stderr).toMatch(/^modtrans: [^\n]*batch scaling: layer 'W' .*\(x1, not x8\): node 'first_sample' \(Slice\) drops the batch[^\n]*\n$/);
    expect(memory?.stderr).toMatch(/\(x1, not x4\)/);
    expect(exported?.stderr).not.toContain('batch scaling');
  });
});
