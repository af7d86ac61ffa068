/**
 * Fused attention ops as GEMM layers. One node becomes up to three layers: the QKV projection
 * (com.microsoft Attention only: it carries the weights), the scores QK^T and the context AV,
 * both batched over batch x heads and weightless. Softmax and masking are not GEMMs.
 */
import type { LayerDraft, LoweringContext } from './draft.js';

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
  const output = c.node.outputs[0]!;
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
  const [input, weights, bias] = c.node.inputs;
  const [batch, seq, hidden] = c.shape(input!);
  const qkv = c.shape(weights!)[1]!;
  const heads = c.intAttr('num_heads', 1);
  const sizes = c.intsAttr('qkv_hidden_sizes') ?? [qkv / 3, qkv / 3, qkv / 3];
  const output = c.node.outputs[0]!;
  const projection: LayerDraft = {
    kind: 'gemm', suffix: 'qkv', gemm: { m: batch! * seq!, n: qkv, k: hidden! }, count: 1,
    weightTensors: c.isWeight(weights!) ? [weights!] : [], biasTensors: bias && c.isWeight(bias) ? [bias] : [],
    activationInputs: [input!], output, outputShape: [batch!, seq!, qkv],
  };
  const geometry = { batch: batch!, heads, querySeq: seq!, keySeq: seq!, headSize: sizes[0]! / heads, valueHeadSize: sizes[2]! / heads };
  return [projection, ...scoreAndContext(c, geometry, [])];
}

/** com.microsoft MultiHeadAttention: projected query [B, S, D], key [B, L, D], value [B, L, Dv]. */
export function lowerMsMultiHeadAttention(c: LoweringContext): LayerDraft[] | undefined {
  const [query, key, value] = c.node.inputs;
  const q = c.shape(query!);
  if (q.length !== 3 || !key || !value) return undefined; // packed QKV layouts are not lowered
  const k = c.shape(key);
  const v = c.shape(value);
  if (k.length !== 3 || v.length !== 3) return undefined;
  const heads = c.intAttr('num_heads', 1);
  return scoreAndContext(c, { batch: q[0]!, heads, querySeq: q[1]!, keySeq: k[1]!, headSize: q[2]! / heads, valueHeadSize: v[2]! / heads }, [query!, key]);
}

/** ONNX Attention (opset 23): Q, K, V as [B, heads, seq, head] or [B, seq, heads x head]. */
export function lowerOnnxAttention(c: LoweringContext): LayerDraft[] {
  const [query, key, value] = c.node.inputs;
  const view = (name: string, headsAttr: string): number[] => {
    const s = c.shape(name);
    if (s.length === 4) return s;
    const heads = c.intAttr(headsAttr, 1);
    return [s[0]!, heads, s[1]!, s[2]! / heads];
  };
  const q = view(query!, 'q_num_heads');
  const k = view(key!, 'kv_num_heads');
  const v = view(value!, 'kv_num_heads');
  const past = c.node.inputs[4] ? c.shape(c.node.inputs[4])[2]! : 0;
  // Grouped-query attention shares K and V between query heads; the products run per query head.
  return scoreAndContext(c, { batch: q[0]!, heads: q[1]!, querySeq: q[2]!, keySeq: past + k[2]!, headSize: q[3]!, valueHeadSize: v[3]! }, [query!, key!]);
}
