/**
 * Parallel-residual decoders as HF transformers (4.31-4.33) writes them and torch 1.13 exports
 * them: GPT-NeoX (fused query_key_value viewed as [b, s, heads, 3d], partial rotary, baddbmm
 * scores, the causal `bias` buffer through Where, two norms, `x + attn(ln1(x)) + mlp(ln2(x))`),
 * GPT-J (one shared ln_1, separate q/k/v, gelu_new) and Falcon-7B (multi-query: a fused
 * query_key_value with (heads + 2) x head-dim outputs, one K/V head broadcast over the heads,
 * one shared norm, an LM head tied to the word embedding).
 */
import { decoderInputs, decoderMask, type BuiltModel } from './llama.js';
import { FLOAT, geluErf, geluTanh, layerNorm, rotary, TorchGraph, unary, type UnaryActivation } from './torch-graph.js';

export interface ParallelOptions {
  layers: number;
  hidden: number;
  heads: number;
  seq: number;
  batch: number;
  vocab: number;
  /** use_parallel_residual (GPT-NeoX's default); false: the sequential residual. */
  parallel?: boolean;
  /** The MLP activation: the model's GELU (default) or another unary nonlinearity. */
  activation?: UnaryActivation;
  /** Falcon's tied LM head: a Transpose of the word table (no constant folding) or the folded copy (default). */
  tiedHead?: 'transpose' | 'copy';
}

/** HF's padding mask as GPT-NeoX / BERT write it: (1 - mask[:, None, None, :]) * min. */
export function paddingMask(g: TorchGraph, mask: string, value: number): string {
  const u = g.op('Unsqueeze', [g.op('Unsqueeze', [mask, g.ints([1], '')], ''), g.ints([2], '')], '');
  const f = g.op('Cast', [u], '', { to: FLOAT });
  return g.op('Mul', [g.op('Sub', [g.scalar(1, ''), f], ''), g.scalar(value, '')], '');
}

/** The per-layer rotary tables (folded buffers) gathered by position ids: [b, 1, s, rot]. */
function rotaryTables(g: TorchGraph, scope: string, s: number, rot: number): [string, string] {
  const path = scope.slice(1).replaceAll('/', '.');
  const table = (name: string): string => g.op('Unsqueeze', [g.op('Gather', [g.weight(`${path}.rotary_emb.${name}`, [s, rot], false), 'position_ids'], scope, { axis: 0 }), g.ints([1], scope)], scope);
  return [table('cos_cached'), table('sin_cached')];
}

/** query[..., :rot] rotated, concatenated with query[..., rot:]. */
function partialRotary(g: TorchGraph, x: string, cos: string, sin: string, rot: number, d: number, scope: string): string {
  if (rot === d) return rotary(g, x, cos, sin, d, scope);
  const head = g.op('Slice', [x, g.ints([0], scope), g.ints([rot], scope), g.ints([3], scope), g.ints([1], scope)], scope);
  const tail = g.op('Slice', [x, g.ints([rot], scope), g.ints([Number.MAX_SAFE_INTEGER], scope), g.ints([3], scope), g.ints([1], scope)], scope);
  return g.op('Concat', [rotary(g, head, cos, sin, rot, scope), tail], scope, { axis: -1 });
}

/** GPTNeoXAttention: fused QKV, partial rotary (rotary_pct 0.25), baddbmm scores, causal Where, mask, softmax, dense. */
function neoxAttention(g: TorchGraph, x: string, mask: string, scope: string, o: ParallelOptions): string {
  const { hidden: h, heads, seq: s, batch: b } = o;
  const d = h / heads;
  const rot = d / 4;
  const qkv = g.op('Reshape', [g.linear(x, `${scope}/query_key_value`, h, 3 * h, true), g.shapeOf(x, [0, 1], [b, s], [heads, 3 * d], scope)], scope, { allowzero: 0 });
  const part = (from: number, to: number): string => g.op('Transpose', [g.op('Slice', [qkv, g.ints([from], scope), g.ints([to], scope), g.ints([3], scope), g.ints([1], scope)], scope)], scope, { perm: [0, 2, 1, 3] });
  const [cos, sin] = rotaryTables(g, scope, s, rot);
  const q = partialRotary(g, part(0, d), cos, sin, rot, d, scope);
  const k = partialRotary(g, part(d, 2 * d), cos, sin, rot, d, scope);
  const v = part(2 * d, Number.MAX_SAFE_INTEGER);
  // _attn: baddbmm(zeros, q, k^T, beta=1, alpha=1/sqrt(d)) on [b*heads, s, d] views.
  const q3 = g.op('Reshape', [q, g.ints([b * heads, s, d], scope)], scope, { allowzero: 0 });
  const k3 = g.op('Reshape', [k, g.ints([b * heads, s, d], scope)], scope, { allowzero: 0 });
  const product = g.op('MatMul', [q3, g.op('Transpose', [k3], scope, { perm: [0, 2, 1] })], scope);
  const scores = g.op('Add', [g.op('Mul', [product, g.scalar(1 / Math.sqrt(d), scope)], scope), g.table([b * heads, s, s], scope)], scope);
  const causal = `${scope.slice(1).replaceAll('/', '.')}.bias`;
  g.inits.push({ name: causal, dtype: 9, dims: [1, 1, s, s], external: { location: 'none.bin' } });
  const where = g.op('Where', [causal, g.op('Reshape', [scores, g.ints([b, heads, s, s], scope)], scope, { allowzero: 0 }), g.scalar(-3.4028234663852886e38, scope)], scope);
  const probs = g.softmax(g.op('Add', [where, mask], scope), scope, true);
  const ctx = g.op('MatMul', [probs, v], scope);
  return g.linear(g.mergeHeads(ctx, x, b, s, h, scope), `${scope}/dense`, h, h, true);
}

function denseMlp(g: TorchGraph, x: string, scope: string, h: number, names: [string, string], bias: boolean, act: (v: string) => string): string {
  const up = g.linear(x, `${scope}/${names[0]}`, h, 4 * h, bias);
  return g.linear(act(up), `${scope}/${names[1]}`, 4 * h, h, bias);
}

export function neoxModel(o: ParallelOptions): BuiltModel {
  const g = new TorchGraph(17);
  const { hidden: h, seq: s, batch: b, vocab: V } = o;
  let x = g.op('Gather', [g.weight('gpt_neox.embed_in.weight', [V, h]), 'input_ids'], '/gpt_neox/embed_in');
  const mask = paddingMask(g, 'attention_mask', -3.4028234663852886e38);
  const act = (scope: string) => (v: string): string => (o.activation === undefined ? geluErf(g, v, scope) : unary(g, v, scope, o.activation));
  for (let i = 0; i < o.layers; i++) {
    const p = `/gpt_neox/layers.${i}`;
    const attn = neoxAttention(g, layerNorm(g, x, `${p}/input_layernorm`, h), mask, `${p}/attention`, o);
    if (o.parallel === false) {
      const sum = g.op('Add', [attn, x], p);
      x = g.op('Add', [denseMlp(g, layerNorm(g, sum, `${p}/post_attention_layernorm`, h), `${p}/mlp`, h, ['dense_h_to_4h', 'dense_4h_to_h'], true, act(`${p}/mlp/act`)), sum], p);
    } else {
      const mlp = denseMlp(g, layerNorm(g, x, `${p}/post_attention_layernorm`, h), `${p}/mlp`, h, ['dense_h_to_4h', 'dense_4h_to_h'], true, act(`${p}/mlp/act`));
      x = g.op('Add', [g.op('Add', [mlp, attn], p), x], p);
    }
  }
  const logits = g.linear(layerNorm(g, x, '/gpt_neox/final_layer_norm', h), '/embed_out', h, V, false);
  g.nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  return { bytes: g.build(decoderInputs(b, s), [{ name: 'logits', dtype: FLOAT, dims: [b, s, V] }]), params: g.params, buffers: g.buffers };
}

/** GPT-J: one ln_1 feeding attention (separate q/k/v, no bias) and the MLP (fc_in, gelu_new, fc_out); x + attn + mlp. */
export function gptjModel(o: ParallelOptions): BuiltModel {
  const g = new TorchGraph(14);
  const { hidden: h, heads, seq: s, batch: b, vocab: V } = o;
  const d = h / heads;
  let x = g.op('Gather', [g.weight('transformer.wte.weight', [V, h]), 'input_ids'], '/transformer/wte');
  const mask = paddingMask(g, 'attention_mask', -3.4028234663852886e38);
  for (let i = 0; i < o.layers; i++) {
    const p = `/transformer/h.${i}`;
    const n = layerNorm(g, x, `${p}/ln_1`, h);
    const scope = `${p}/attn`;
    const [cos, sin] = rotaryTables(g, scope, s, d / 2);
    const q = partialRotary(g, g.toHeads(g.linear(n, `${scope}/q_proj`, h, h, false), n, b, s, heads, d, scope), cos, sin, d / 2, d, scope);
    const k = partialRotary(g, g.toHeads(g.linear(n, `${scope}/k_proj`, h, h, false), n, b, s, heads, d, scope), cos, sin, d / 2, d, scope);
    const v = g.toHeads(g.linear(n, `${scope}/v_proj`, h, h, false), n, b, s, heads, d, scope);
    // _attn: scores in fp32, causal Where, / scale_attn, + mask, softmax, back to the value's dtype.
    const product = g.op('MatMul', [g.op('Cast', [q], scope, { to: FLOAT }), g.op('Transpose', [g.op('Cast', [k], scope, { to: FLOAT })], scope, { perm: [0, 1, 3, 2] })], scope);
    const causal = `${scope.slice(1).replaceAll('/', '.')}.bias`;
    g.inits.push({ name: causal, dtype: 9, dims: [1, 1, s, s], external: { location: 'none.bin' } });
    const scaled = g.op('Div', [g.op('Where', [causal, product, g.scalar(-3.4028234663852886e38, scope)], scope), g.scalar(Math.sqrt(d), scope)], scope);
    const probs = g.softmax(g.op('Add', [scaled, mask], scope), scope, true);
    const attn = g.linear(g.mergeHeads(g.op('MatMul', [probs, v], scope), n, b, s, h, scope), `${scope}/out_proj`, h, h, false);
    const act = (v2: string): string => (o.activation === undefined ? geluTanh(g, v2, `${p}/mlp/act`) : unary(g, v2, `${p}/mlp/act`, o.activation));
    const mlp = denseMlp(g, n, `${p}/mlp`, h, ['fc_in', 'fc_out'], true, act);
    x = g.op('Add', [g.op('Add', [attn, mlp], p), x], p);
  }
  const logits = g.linear(layerNorm(g, x, '/transformer/ln_f', h), '/lm_head', h, V, true);
  g.nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  return { bytes: g.build(decoderInputs(b, s), [{ name: 'logits', dtype: FLOAT, dims: [b, s, V] }]), params: g.params, buffers: g.buffers };
}

/** Falcon-7B: multi-query fused query_key_value, one input_layernorm, mlp(ln(x)) + attn(ln(x)) + x, tied head. */
export function falconModel(o: ParallelOptions): BuiltModel {
  const g = new TorchGraph(14);
  const { hidden: h, heads, seq: s, batch: b, vocab: V } = o;
  const d = h / heads;
  const table = g.weight('transformer.word_embeddings.weight', [V, h]);
  let x = g.op('Gather', [table, 'input_ids'], '/transformer/word_embeddings');
  const mask = decoderMask(g, 'attention_mask', b, s);
  for (let i = 0; i < o.layers; i++) {
    const p = `/transformer/h.${i}`;
    const n = layerNorm(g, x, `${p}/input_layernorm`, h);
    const scope = `${p}/self_attention`;
    // _split_heads (multi_query): view(b, s, heads + 2, d); q = [..., :-2, :], k = [..., [-2], :], v = [..., [-1], :].
    const fused = g.op('Reshape', [g.linear(n, `${scope}/query_key_value`, h, (heads + 2) * d, false), g.ints([b, s, heads + 2, d], scope)], scope, { allowzero: 0 });
    const q = g.op('Slice', [fused, g.ints([0], scope), g.ints([-2], scope), g.ints([2], scope), g.ints([1], scope)], scope);
    const k = g.op('Gather', [fused, g.ints([-2], scope)], scope, { axis: 2 });
    const v = g.op('Gather', [fused, g.ints([-1], scope)], scope, { axis: 2 });
    const flat = (t: string, n2: number): string => g.op('Reshape', [g.op('Transpose', [t], scope, { perm: [0, 2, 1, 3] }), g.ints([b * n2, s, d], scope)], scope, { allowzero: 0 });
    // FalconRotaryEmbedding on [b * heads, s, d]: cos/sin from the folded cache.
    const cos = g.table([s, d], scope);
    const sin = g.table([s, d], scope);
    const rot = (t: string): string => {
      const t1 = g.op('Slice', [t, g.ints([0], scope), g.ints([d / 2], scope), g.ints([2], scope), g.ints([1], scope)], scope);
      const t2 = g.op('Slice', [t, g.ints([d / 2], scope), g.ints([Number.MAX_SAFE_INTEGER], scope), g.ints([2], scope), g.ints([1], scope)], scope);
      return g.op('Add', [g.op('Mul', [t, cos], scope), g.op('Mul', [g.op('Concat', [g.op('Neg', [t2], scope), t1], scope, { axis: -1 }), sin], scope)], scope);
    };
    const q4 = g.op('Reshape', [rot(flat(q, heads)), g.ints([b, heads, -1, d], scope)], scope, { allowzero: 0 });
    const k4 = g.op('Reshape', [rot(flat(k, 1)), g.ints([b, 1, -1, d], scope)], scope, { allowzero: 0 });
    const v4 = g.op('Reshape', [flat(v, 1), g.ints([b, 1, -1, d], scope)], scope, { allowzero: 0 });
    const scores = g.op('Div', [g.op('MatMul', [q4, g.op('Transpose', [k4], scope, { perm: [0, 1, 3, 2] })], scope), g.scalar(Math.sqrt(d), scope)], scope);
    const probs = g.softmax(g.op('Add', [scores, mask], scope), scope, false);
    const ctx = g.op('MatMul', [probs, v4], scope);
    const merged = g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [ctx, g.ints([b, heads, s, d], scope)], scope, { allowzero: 0 })], scope, { perm: [0, 2, 1, 3] }), g.ints([b, s, h], scope)], scope, { allowzero: 0 });
    const attn = g.linear(merged, `${scope}/dense`, h, h, false);
    const act = (v2: string): string => (o.activation === undefined ? geluErf(g, v2, `${p}/mlp/act`) : unary(g, v2, `${p}/mlp/act`, o.activation));
    const mlp = denseMlp(g, n, `${p}/mlp`, h, ['dense_h_to_4h', 'dense_4h_to_h'], false, act);
    x = g.op('Add', [g.op('Add', [mlp, attn], p), x], p);
  }
  const nf = layerNorm(g, x, '/transformer/ln_f', h);
  const logits = o.tiedHead === 'transpose'
    ? g.op('MatMul', [nf, g.op('Transpose', [table], '/lm_head', { perm: [1, 0] })], '/lm_head')
    : g.op('MatMul', [nf, g.matmulWeight(h, V)], '/lm_head');
  g.nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  return { bytes: g.build(decoderInputs(b, s), [{ name: 'logits', dtype: FLOAT, dims: [b, s, V] }]), params: g.params, buffers: g.buffers };
}
