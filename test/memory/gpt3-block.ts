/** A GPT-3-sized transformer block (pre-norm, Megatron-LM's layout) built as a graph-only ONNX file. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildModel, FLOAT, INT64, type NodeSpec, type TensorSpec } from '../helpers/onnx-builder.js';

export interface BlockDims {
  /** Hidden size h, heads a, sequence s, micro-batch b. */
  h: number;
  a: number;
  s: number;
  b: number;
  /** Without Dropout nodes, as inference exports are (default: with). */
  dropout?: boolean;
}

/** Writes the block to a temporary file and returns its path. */
export function writeGpt3Block({ h, a, s, b, dropout = true }: BlockDims): string {
  const d = h / a;
  const weight = (name: string, dims: number[]): TensorSpec => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });
  const shape = (name: string, values: number[]): TensorSpec => ({ name, dtype: INT64, dims: [values.length], values });
  const nodes: NodeSpec[] = [
    { op: 'LayerNormalization', inputs: ['x', 'ln1.w', 'ln1.b'], outputs: ['ln1'], attrs: { axis: -1 } },
    { op: 'MatMul', inputs: ['ln1', 'attn.q.w'], outputs: ['q'] },
    { op: 'MatMul', inputs: ['ln1', 'attn.k.w'], outputs: ['k'] },
    { op: 'MatMul', inputs: ['ln1', 'attn.v.w'], outputs: ['v'] },
    { op: 'Reshape', inputs: ['q', 'heads'], outputs: ['q4'] },
    { op: 'Reshape', inputs: ['k', 'heads'], outputs: ['k4'] },
    { op: 'Reshape', inputs: ['v', 'heads'], outputs: ['v4'] },
    { op: 'Transpose', inputs: ['q4'], outputs: ['qt'], attrs: { perm: [0, 2, 1, 3] } },
    { op: 'Transpose', inputs: ['k4'], outputs: ['kt'], attrs: { perm: [0, 2, 3, 1] } },
    { op: 'Transpose', inputs: ['v4'], outputs: ['vt'], attrs: { perm: [0, 2, 1, 3] } },
    { op: 'MatMul', inputs: ['qt', 'kt'], outputs: ['scores'] },
    { op: 'Softmax', inputs: ['scores'], outputs: ['probs'], attrs: { axis: -1 } },
    { op: 'Dropout', inputs: ['probs'], outputs: ['probs.drop'] },
    { op: 'MatMul', inputs: ['probs.drop', 'vt'], outputs: ['context'] },
    { op: 'Transpose', inputs: ['context'], outputs: ['context.t'], attrs: { perm: [0, 2, 1, 3] } },
    { op: 'Reshape', inputs: ['context.t', 'hidden'], outputs: ['context.h'] },
    { op: 'MatMul', inputs: ['context.h', 'attn.o.w'], outputs: ['attn.out'] },
    { op: 'Dropout', inputs: ['attn.out'], outputs: ['attn.drop'] },
    { op: 'Add', inputs: ['x', 'attn.drop'], outputs: ['h1'] },
    { op: 'LayerNormalization', inputs: ['h1', 'ln2.w', 'ln2.b'], outputs: ['ln2'], attrs: { axis: -1 } },
    { op: 'MatMul', inputs: ['ln2', 'mlp.fc.w'], outputs: ['fc'] },
    { op: 'Gelu', inputs: ['fc'], outputs: ['gelu'] },
    { op: 'MatMul', inputs: ['gelu', 'mlp.proj.w'], outputs: ['proj'] },
    { op: 'Dropout', inputs: ['proj'], outputs: ['mlp.drop'] },
    { op: 'Add', inputs: ['h1', 'mlp.drop'], outputs: ['y'] },
  ];
  // Without dropout each Dropout's output is its input.
  const graph = dropout ? nodes : withoutDropout(nodes);
  const path = join(mkdtempSync(join(tmpdir(), 'modtrans-gpt3-')), 'block.onnx');
  writeFileSync(path, buildModel({
    inputs: [{ name: 'x', dtype: FLOAT, dims: [b, s, h] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [b, s, h] }],
    initializers: [
      weight('ln1.w', [h]), weight('ln1.b', [h]), weight('ln2.w', [h]), weight('ln2.b', [h]),
      weight('attn.q.w', [h, h]), weight('attn.k.w', [h, h]), weight('attn.v.w', [h, h]), weight('attn.o.w', [h, h]),
      weight('mlp.fc.w', [h, 4 * h]), weight('mlp.proj.w', [4 * h, h]),
      shape('heads', [b, s, a, d]), shape('hidden', [b, s, h]),
    ],
    nodes: graph,
  }, 20));
  return path;
}

function withoutDropout(nodes: NodeSpec[]): NodeSpec[] {
  const renamed = new Map(nodes.filter((n) => n.op === 'Dropout').map((n) => [n.outputs[0]!, n.inputs[0]!]));
  return nodes.filter((n) => n.op !== 'Dropout').map((n) => ({ ...n, inputs: n.inputs.map((i) => renamed.get(i) ?? i) }));
}
