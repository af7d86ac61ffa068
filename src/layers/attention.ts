/**
 * Fused attention ops as GEMM layers. One node becomes up to three layers: the QKV projection
 * (com.microsoft Attention only: it carries the weights), the scores QK^T and the context AV,
 * both batched over batch x heads and weightless. Softmax and masking are not GEMMs.
 */
import { graphError } from '../errors.js';
import { dimOf, type LayerDraft, type LoweringContext } from './draft.js';

interface HeadGeometry {
  batch: number;
  heads: number;
  querySeq: number;
  keySeq: number;
  headSize: number;
  valueHeadSize: number;
}

/** QK^T (seq x keySeq, reduced over the head size) and AV (seq x valueHead, reduced over keySeq). */
function scoreAndContext(c: LoweringContext, g: HeadGeometry, activations: string[]): LayerDraft[] {
  const output = c.output();
  const batches = g.batch * g.heads;
  const scoresShape = [g.batch, g.heads, g.querySeq, g.keySeq];
  const elementBytes = c.elementBytes(output);
  return [
    {
      kind: 'activation-gemm', suffix: 'scores', gemm: { m: g.querySeq, n: g.keySeq, k: g.headSize }, count: batches,
      weightTensors: [], biasTensors: [], activationInputs: activations, output, outputShape: scoresShape,
    },
    {
      kind: 'activation-gemm', suffix: 'context', gemm: { m: g.querySeq, n: g.valueHeadSize, k: g.keySeq }, count: batches,
      weightTensors: [], biasTensors: [], activationInputs: [], output,
      // Its inputs are the softmaxed scores (no graph value holds them) and V.
      extraInputBytes: batches * g.querySeq * g.keySeq * elementBytes,
    },
  ];
}

/** com.microsoft Attention: input [B, S, D] . weights [D, q + k + v] (+ bias), then per-head attention. */
export function lowerMsAttention(c: LoweringContext): LayerDraft[] {
  const input = c.input(0);
  const weights = c.input(1);
  const bias = c.node.inputs[2];
  const batch = c.dim(input, 0);
  const seq = c.dim(input, 1);
  const hidden = c.dim(input, 2);
  const qkv = c.dim(weights, 1);
  const heads = c.intAttr('num_heads', 1);
  const sizes = c.intsAttr('qkv_hidden_sizes') ?? [qkv / 3, qkv / 3, qkv / 3];
  const [querySize, , valueSize] = sizes;
  if (querySize === undefined || valueSize === undefined) throw graphError(c.inferred.model.path, c.node, `qkv_hidden_sizes has ${sizes.length} values; expected 3`);
  const output = c.output();
  const projection: LayerDraft = {
    kind: 'gemm', suffix: 'qkv', gemm: { m: batch * seq, n: qkv, k: hidden }, count: 1,
    weightTensors: c.isWeight(weights) ? [weights] : [], biasTensors: bias && c.isWeight(bias) ? [bias] : [],
    activationInputs: [input], output, outputShape: [batch, seq, qkv],
  };
  const geometry = { batch, heads, querySeq: seq, keySeq: seq, headSize: querySize / heads, valueHeadSize: valueSize / heads };
  return [projection, ...scoreAndContext(c, geometry, [])];
}

/** com.microsoft MultiHeadAttention: projected query [B, S, D], key [B, L, D], value [B, L, Dv]. */
export function lowerMsMultiHeadAttention(c: LoweringContext): LayerDraft[] | undefined {
  const query = c.input(0);
  const [, key, value] = c.node.inputs;
  const q = c.shape(query);
  if (q.length !== 3 || !key || !value) return undefined; // packed QKV layouts are not lowered
  const k = c.shape(key);
  const v = c.shape(value);
  if (k.length !== 3 || v.length !== 3) return undefined;
  const heads = c.intAttr('num_heads', 1);
  const [batch, querySeq, querySize] = q as [number, number, number];
  const geometry = { batch, heads, querySeq, keySeq: dimOf(c, k, 1, key), headSize: querySize / heads, valueHeadSize: dimOf(c, v, 2, value) / heads };
  return scoreAndContext(c, geometry, [query, key]);
}

/** ONNX Attention (opset 23): Q, K, V as [B, heads, seq, head] or [B, seq, heads x head]. */
export function lowerOnnxAttention(c: LoweringContext): LayerDraft[] {
  const query = c.input(0);
  const key = c.input(1);
  const value = c.input(2);
  /** [batch, heads, seq, head size] of a 4-D operand, or of a 3-D one split into heads. */
  const view = (name: string, headsAttr: string): [number, number, number, number] => {
    const s = c.shape(name);
    const dim = (axis: number): number => dimOf(c, s, axis, name);
    if (s.length === 4) return [dim(0), dim(1), dim(2), dim(3)];
    const heads = c.intAttr(headsAttr, 1);
    return [dim(0), heads, dim(1), dim(2) / heads];
  };
  const [batch, heads, querySeq, headSize] = view(query, 'q_num_heads');
  const [, , keySeq] = view(key, 'kv_num_heads');
  const [, , , valueHeadSize] = view(value, 'kv_num_heads');
  const pastKey = c.node.inputs[4];
  const past = pastKey ? c.dim(pastKey, 2) : 0;
  // Grouped-query attention shares K and V between query heads; the products run per query head.
  return scoreAndContext(c, { batch, heads, querySeq, keySeq: past + keySeq, headSize, valueHeadSize }, [query, key]);
}
