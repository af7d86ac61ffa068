/** A small GPT-like ONNX graph built in the test (graph only): blocks of attention + MLP with residual adds, an LM head. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLOAT, INT64, buildModel, type NodeSpec, type TensorSpec } from '../helpers/onnx-builder.js';

export interface GptSpec {
  seq: number;
  hidden: number;
  vocab: number;
  /** MLP width of each block (one entry per block). */
  mlp: number[];
  /** The LM head multiplies by the word embedding's table (transposed) instead of its own weight. */
  tied?: boolean;
  /** Attention heads (4 by default). */
  heads?: number;
}

/** Parameters the spec's initializers hold, counted from their dims. */
export function gptParams(spec: GptSpec): number {
  const { hidden: h, vocab, mlp } = spec;
  return vocab * h + mlp.reduce((a, f) => a + 4 * h * h + 2 * h * f, 0) + (spec.tied === true ? 0 : h * vocab);
}

export function writeGpt(spec: GptSpec, batch = 1): string {
  const { seq: s, hidden: h, vocab } = spec;
  const nodes: NodeSpec[] = [];
  const heads = spec.heads ?? 4;
  const inits: TensorSpec[] = [
    { name: 'wte', dtype: FLOAT, dims: [vocab, h] },
    { name: 'split.shape', dtype: INT64, dims: [4], values: [batch, s, heads, h / heads] },
    { name: 'merge.shape', dtype: INT64, dims: [3], values: [batch, s, h] },
  ];
  nodes.push({ op: 'Gather', inputs: ['wte', 'ids'], outputs: ['x0'], name: 'embed' });
  let x = 'x0';
  spec.mlp.forEach((f, b) => {
    const p = `b${b}`;
    const w = (name: string, dims: number[]): string => {
      inits.push({ name: `${p}.${name}.weight`, dtype: FLOAT, dims });
      return `${p}.${name}.weight`;
    };
    nodes.push(
      { op: 'MatMul', inputs: [x, w('q', [h, h])], outputs: [`${p}.q`], name: `${p}.q` },
      { op: 'MatMul', inputs: [x, w('k', [h, h])], outputs: [`${p}.k`], name: `${p}.k` },
      { op: 'MatMul', inputs: [x, w('v', [h, h])], outputs: [`${p}.v`], name: `${p}.v` },
      // Heads: [b, s, h] -> [b, H, s, h / H] (K as [b, H, h / H, s]).
      { op: 'Reshape', inputs: [`${p}.q`, 'split.shape'], outputs: [`${p}.q4`], name: `${p}.q.split` },
      { op: 'Transpose', inputs: [`${p}.q4`], outputs: [`${p}.qh`], name: `${p}.q.heads`, attrs: { perm: [0, 2, 1, 3] } },
      { op: 'Reshape', inputs: [`${p}.k`, 'split.shape'], outputs: [`${p}.k4`], name: `${p}.k.split` },
      { op: 'Transpose', inputs: [`${p}.k4`], outputs: [`${p}.kt`], name: `${p}.k.heads`, attrs: { perm: [0, 2, 3, 1] } },
      { op: 'Reshape', inputs: [`${p}.v`, 'split.shape'], outputs: [`${p}.v4`], name: `${p}.v.split` },
      { op: 'Transpose', inputs: [`${p}.v4`], outputs: [`${p}.vh`], name: `${p}.v.heads`, attrs: { perm: [0, 2, 1, 3] } },
      { op: 'MatMul', inputs: [`${p}.qh`, `${p}.kt`], outputs: [`${p}.scores`], name: `${p}.scores` },
      { op: 'Softmax', inputs: [`${p}.scores`], outputs: [`${p}.probs`], name: `${p}.softmax`, attrs: { axis: -1 } },
      { op: 'MatMul', inputs: [`${p}.probs`, `${p}.vh`], outputs: [`${p}.ctxh`], name: `${p}.context` },
      { op: 'Transpose', inputs: [`${p}.ctxh`], outputs: [`${p}.ctx4`], name: `${p}.ctx.merge`, attrs: { perm: [0, 2, 1, 3] } },
      { op: 'Reshape', inputs: [`${p}.ctx4`, 'merge.shape'], outputs: [`${p}.ctx`], name: `${p}.ctx.flat` },
      { op: 'MatMul', inputs: [`${p}.ctx`, w('o', [h, h])], outputs: [`${p}.o`], name: `${p}.o` },
      { op: 'Add', inputs: [x, `${p}.o`], outputs: [`${p}.r1`], name: `${p}.res1` },
      { op: 'MatMul', inputs: [`${p}.r1`, w('up', [h, f])], outputs: [`${p}.u`], name: `${p}.up` },
      { op: 'Relu', inputs: [`${p}.u`], outputs: [`${p}.g`], name: `${p}.relu` },
      { op: 'MatMul', inputs: [`${p}.g`, w('down', [f, h])], outputs: [`${p}.d`], name: `${p}.down` },
      { op: 'Add', inputs: [`${p}.r1`, `${p}.d`], outputs: [`${p}.out`], name: `${p}.res2` },
    );
    x = `${p}.out`;
  });
  if (spec.tied === true) {
    nodes.push({ op: 'Transpose', inputs: ['wte'], outputs: ['wte.t'], name: 'wte.t', attrs: { perm: [1, 0] } });
    nodes.push({ op: 'MatMul', inputs: [x, 'wte.t'], outputs: ['logits'], name: 'lm_head' });
  } else {
    inits.push({ name: 'lm_head.weight', dtype: FLOAT, dims: [h, vocab] });
    nodes.push({ op: 'MatMul', inputs: [x, 'lm_head.weight'], outputs: ['logits'], name: 'lm_head' });
  }
  const bytes = buildModel({
    nodes,
    inputs: [{ name: 'ids', dtype: INT64, dims: [batch, s] }],
    outputs: [{ name: 'logits', dtype: FLOAT, dims: [batch, s, vocab] }],
    initializers: inits,
  });
  const file = join(mkdtempSync(join(tmpdir(), 'modtrans-gpt-')), 'gpt.onnx');
  writeFileSync(file, bytes);
  return file;
}
