/**
 * HF transformers' BertForSequenceClassification as torch 1.13 exports it (opset 14, checked
 * against an export of BertSelfAttention + pooler + classifier): word + token-type + position
 * embeddings, LayerNorm op by op; the additive mask `(1 - mask[:, None, None, :]) * -10000`;
 * post-norm layers with transpose_for_scores (view + permute; K's permute and transpose fused
 * into one Transpose [0, 2, 3, 1]), scores / sqrt(d) + mask, softmax, context; dense + residual
 * -> LayerNorm; intermediate GELU (erf); the pooler (first token: Gather, Gemm, Tanh) and the
 * classifier (Gemm).
 */
import type { BuiltModel } from './llama.js';
import { paddingMask } from './parallel.js';
import { FLOAT, geluErf, INT64, layerNorm, TorchGraph, unary, type UnaryActivation } from './torch-graph.js';

export interface BertOptions {
  layers: number;
  hidden: number;
  heads: number;
  seq: number;
  batch: number;
  vocab: number;
  labels: number;
  /** Shapes from Shape -> Gather -> Unsqueeze -> Concat (a dynamic-axes export). */
  dynamic?: boolean;
  activation?: UnaryActivation;
}

export function bertModel(o: BertOptions): BuiltModel {
  const g = new TorchGraph(14, o.dynamic === true);
  const { hidden: h, heads, seq: s, batch: b, vocab: V } = o;
  const d = h / heads;
  const words = g.op('Gather', [g.weight('bert.embeddings.word_embeddings.weight', [V, h]), 'input_ids'], '/bert/embeddings/word_embeddings');
  const types = g.op('Gather', [g.weight('bert.embeddings.token_type_embeddings.weight', [2, h]), 'token_type_ids'], '/bert/embeddings/token_type_embeddings');
  // position_ids: the registered buffer sliced to the sequence, folded into a constant.
  const positionIds = g.op('Constant', [], '/bert/embeddings', { value: { tensor: { name: 'value', dtype: INT64, dims: [1, s], values: Array.from({ length: s }, (_, i) => i) } } });
  const positions = g.op('Gather', [g.weight('bert.embeddings.position_embeddings.weight', [512, h]), positionIds], '/bert/embeddings/position_embeddings');
  const summed = g.op('Add', [g.op('Add', [words, types], '/bert/embeddings'), positions], '/bert/embeddings');
  let x = layerNorm(g, summed, '/bert/embeddings/LayerNorm', h);
  const mask = paddingMask(g, 'attention_mask', -10000);
  for (let i = 0; i < o.layers; i++) {
    const p = `/bert/encoder/layer.${i}`;
    const scope = `${p}/attention/self`;
    const q = g.toHeads(g.linear(x, `${scope}/query`, h, h, true, `bert.encoder.layer.${i}.attention.self.query.bias`), x, b, s, heads, d, scope);
    const kt = g.toHeads(g.linear(x, `${scope}/key`, h, h, true), x, b, s, heads, d, scope, [0, 2, 3, 1]);
    const v = g.toHeads(g.linear(x, `${scope}/value`, h, h, true), x, b, s, heads, d, scope);
    const scores = g.op('Add', [g.op('Div', [g.op('MatMul', [q, kt], scope), g.scalar(Math.sqrt(d), scope)], scope), mask], scope);
    const ctx = g.mergeHeads(g.op('MatMul', [g.softmax(scores, scope, false), v], scope), x, b, s, h, scope);
    const attnOut = g.linear(ctx, `${p}/attention/output/dense`, h, h, true);
    const a = layerNorm(g, g.op('Add', [attnOut, x], `${p}/attention/output`), `${p}/attention/output/LayerNorm`, h);
    const up = g.linear(a, `${p}/intermediate/dense`, h, 4 * h, true);
    const act = o.activation === undefined ? geluErf(g, up, `${p}/intermediate/intermediate_act_fn`) : unary(g, up, `${p}/intermediate/intermediate_act_fn`, o.activation);
    const down = g.linear(act, `${p}/output/dense`, 4 * h, h, true);
    x = layerNorm(g, g.op('Add', [down, a], `${p}/output`), `${p}/output/LayerNorm`, h);
  }
  const first = g.op('Gather', [x, g.intScalar(0, '/bert/pooler')], '/bert/pooler', { axis: 1 });
  const pooled = g.op('Tanh', [g.gemm(first, '/bert/pooler/dense', h, h)], '/bert/pooler/activation');
  const logits = g.gemm(pooled, '/classifier', h, o.labels);
  g.nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  const inputs = ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({ name, dtype: INT64, dims: [b, s] }));
  return { bytes: g.build(inputs, [{ name: 'logits', dtype: FLOAT, dims: [b, o.labels] }]), params: g.params, buffers: g.buffers };
}
