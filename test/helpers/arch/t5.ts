/**
 * HF transformers' T5ForConditionalGeneration (t5-small's layout) as torch 1.13 exports it
 * (opset 14, checked against an export of T5's relative position bias): one `shared` table looked
 * up by the encoder and the decoder; T5LayerNorm (RMS-style, op by op); the relative position
 * bias computed once per stack in its first layer (the bucket indices fold into a constant:
 * Gather(relative_attention_bias, idx) -> Transpose -> Unsqueeze, plus the mask) and added to
 * every layer's unscaled scores; decoder layers with self-attention, cross-attention whose K and V
 * read the encoder's final output, and the ReLU MLP (wi, wo); the decoder output scaled by
 * d_model^-0.5 and projected by the LM head tied to `shared` (a Transpose of it, or the copy
 * constant folding writes).
 */
import type { BuiltModel } from './llama.js';
import { paddingMask } from './parallel.js';
import { FLOAT, geluTanh, INT64, rmsNorm, TorchGraph } from './torch-graph.js';

export interface T5Options {
  layers: number;
  hidden: number;
  heads: number;
  seq: number;
  /** Decoder length (default: seq). */
  targetSeq?: number;
  batch: number;
  vocab: number;
  ffn: number;
  /** The LM head: tied through a Transpose of `shared` (default), the folded 'copy', or 'untied' (flan-t5: its own weight, no d_model^-0.5 scale). */
  tiedHead?: 'transpose' | 'copy' | 'untied';
  /** T5 v1.1 / flan-t5's T5DenseGatedActDense: wo(gelu_new(wi_0(x)) * wi_1(x)). */
  gated?: boolean;
}

interface Stack {
  g: TorchGraph;
  o: T5Options;
  b: number;
}

/** Relative position bias of a stack: [1, heads, q, k] from the bucket table, plus `mask`. */
function positionBias(c: Stack, scope: string, q: number, k: number, mask: string): string {
  const { g } = c;
  const path = scope.slice(1).replaceAll('/', '.');
  const buckets = g.op('Constant', [], scope, { value: { tensor: { name: 'value', dtype: INT64, dims: [q, k], values: new Array<number>(q * k).fill(0) } } });
  const values = g.op('Gather', [g.weight(`${path}.relative_attention_bias.weight`, [32, c.o.heads]), buckets], `${scope}/relative_attention_bias`);
  const bias = g.op('Unsqueeze', [g.op('Transpose', [values], scope, { perm: [2, 0, 1] }), g.ints([0], scope)], scope);
  return g.op('Add', [bias, mask], scope);
}

/** T5Attention: q from `x`, k and v from `kv` (x itself, or the encoder output), scores + bias, softmax, o. */
function attention(c: Stack, x: string, kv: string, bias: string, scope: string): string {
  const { g, b } = c;
  const { hidden: h, heads } = c.o;
  const d = h / heads;
  const shape = (v: string): string => g.op('Transpose', [g.op('Reshape', [v, g.ints([b, -1, heads, d], scope)], scope, { allowzero: 0 })], scope, { perm: [0, 2, 1, 3] });
  const q = shape(g.linear(x, `${scope}/q`, h, h, false));
  const k = shape(g.linear(kv, `${scope}/k`, h, h, false));
  const v = shape(g.linear(kv, `${scope}/v`, h, h, false));
  const scores = g.op('Add', [g.op('MatMul', [q, g.op('Transpose', [k], scope, { perm: [0, 1, 3, 2] })], scope), bias], scope);
  const probs = g.op('Cast', [g.softmax(scores, scope, true)], scope, { to: FLOAT });
  const ctx = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [probs, v], scope)], scope, { perm: [0, 2, 1, 3] }), g.ints([b, -1, h], scope)], scope, { allowzero: 0 });
  return g.linear(ctx, `${scope}/o`, h, h, false);
}

function feedForward(c: Stack, x: string, scope: string): string {
  const { g } = c;
  const { hidden: h, ffn } = c.o;
  const n = rmsNorm(g, x, `${scope}/layer_norm`, h, { casts: true });
  if (c.o.gated) {
    const ff = `${scope}/DenseReluDense`;
    const hidden = g.op('Mul', [geluTanh(g, g.linear(n, `${ff}/wi_0`, h, ffn, false), `${ff}/act`), g.linear(n, `${ff}/wi_1`, h, ffn, false)], ff);
    return g.op('Add', [x, g.linear(hidden, `${ff}/wo`, ffn, h, false)], scope);
  }
  const relu = g.op('Relu', [g.linear(n, `${scope}/DenseReluDense/wi`, h, ffn, false)], `${scope}/DenseReluDense/act`);
  return g.op('Add', [x, g.linear(relu, `${scope}/DenseReluDense/wo`, ffn, h, false)], scope);
}

export function t5Model(o: T5Options): BuiltModel {
  const g = new TorchGraph(14);
  const { hidden: h, seq: s, batch: b, vocab: V } = o;
  const t = o.targetSeq ?? s;
  const c: Stack = { g, o, b };
  const shared = g.weight('shared.weight', [V, h]);
  // Encoder.
  let x = g.op('Gather', [shared, 'input_ids'], '/encoder/embed_tokens');
  const encoderMask = paddingMask(g, 'attention_mask', -3.4028234663852886e38);
  const encoderBias = positionBias(c, '/encoder/block.0/layer.0/SelfAttention', s, s, encoderMask);
  for (let i = 0; i < o.layers; i++) {
    const p = `/encoder/block.${i}`;
    const n = rmsNorm(g, x, `${p}/layer.0/layer_norm`, h, { casts: true });
    x = feedForward(c, g.op('Add', [x, attention(c, n, n, encoderBias, `${p}/layer.0/SelfAttention`)], `${p}/layer.0`), `${p}/layer.1`);
  }
  const encoderOut = rmsNorm(g, x, '/encoder/final_layer_norm', h, { casts: true });
  // Decoder: the causal mask (decoder_attention_mask defaults to ones: folded) and the cross bias (zeros + the encoder mask).
  let y = g.op('Gather', [shared, 'decoder_input_ids'], '/decoder/embed_tokens');
  const decoderBias = positionBias(c, '/decoder/block.0/layer.0/SelfAttention', t, t, g.table([b, 1, t, t], '/decoder'));
  const crossBias = g.op('Add', [g.table([1, o.heads, t, s], '/decoder/block.0/layer.1/EncDecAttention'), encoderMask], '/decoder/block.0/layer.1/EncDecAttention');
  for (let i = 0; i < o.layers; i++) {
    const p = `/decoder/block.${i}`;
    const n = rmsNorm(g, y, `${p}/layer.0/layer_norm`, h, { casts: true });
    y = g.op('Add', [y, attention(c, n, n, decoderBias, `${p}/layer.0/SelfAttention`)], `${p}/layer.0`);
    const m = rmsNorm(g, y, `${p}/layer.1/layer_norm`, h, { casts: true });
    y = g.op('Add', [y, attention(c, m, encoderOut, crossBias, `${p}/layer.1/EncDecAttention`)], `${p}/layer.1`);
    y = feedForward(c, y, `${p}/layer.2`);
  }
  const normed = rmsNorm(g, y, '/decoder/final_layer_norm', h, { casts: true });
  const scaled = o.tiedHead === 'untied' ? normed : g.op('Mul', [normed, g.scalar(h ** -0.5, '')], '');
  const logits = o.tiedHead === 'copy' || o.tiedHead === 'untied'
    ? g.op('MatMul', [scaled, g.matmulWeight(h, V)], '/lm_head')
    : g.op('MatMul', [scaled, g.op('Transpose', [shared], '/lm_head', { perm: [1, 0] })], '/lm_head');
  g.nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  const inputs = [
    { name: 'input_ids', dtype: INT64, dims: [b, s] },
    { name: 'attention_mask', dtype: INT64, dims: [b, s] },
    { name: 'decoder_input_ids', dtype: INT64, dims: [b, t] },
  ];
  return { bytes: g.build(inputs, [{ name: 'logits', dtype: FLOAT, dims: [b, t, V] }]), params: g.params, buffers: g.buffers };
}
