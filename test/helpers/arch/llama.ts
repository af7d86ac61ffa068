/**
 * HF transformers' LlamaForCausalLM (4.31) as torch 1.13 exports it (opset 14): LlamaRMSNorm op by
 * op, rotary tables gathered by position ids, grouped-query attention with repeat_kv (unsqueeze,
 * expand, reshape) or torch.repeat_interleave (split per KV head, unsqueeze, expand, reshape,
 * concat), the causal mask combined with the padding mask, SwiGLU MLP, untied LM head. The same
 * attention and MLP serve the Mixtral builder (mixtral.ts).
 */
import { FLOAT, INT64, TorchGraph, rmsNorm, rotary, silu, unary, type UnaryActivation } from './torch-graph.js';

export interface LlamaOptions {
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  seq: number;
  batch: number;
  vocab: number;
  ffn: number;
  /** repeat_kv as HF writes it (expand + reshape; default) or torch.repeat_interleave. */
  repeatKv?: 'expand' | 'interleave';
  /** Shapes from Shape -> Gather -> Unsqueeze -> Concat (a dynamic-axes export). */
  dynamic?: boolean;
  /** The fp32 Casts of LlamaRMSNorm and the softmax (an fp16 model's export). */
  casts?: boolean;
  /** rsqrt written as Reciprocal(Sqrt) rather than Div(1, Sqrt). */
  reciprocal?: boolean;
  /** The gate's activation: SiLU (default) or another unary nonlinearity. */
  activation?: UnaryActivation;
  /** Phi-3's fused qkv_proj of (heads + 2 x kvHeads) x d outputs, sliced into Q, K and V. */
  fusedQkv?: boolean;
}

export interface LlamaContext {
  g: TorchGraph;
  o: Pick<LlamaOptions, 'hidden' | 'heads' | 'kvHeads' | 'seq' | 'batch' | 'repeatKv' | 'casts' | 'reciprocal' | 'activation' | 'fusedQkv'>;
  mask: string;
  positions: string;
}

/** repeat_kv: [b, kv, s, d] -> [b, heads, s, d]. */
function repeatKv(c: LlamaContext, x: string, scope: string): string {
  const { g } = c;
  const { batch: b, seq: s, heads, kvHeads: kv } = c.o;
  const d = c.o.hidden / heads;
  const rep = heads / kv;
  if (rep === 1) return x;
  if (c.o.repeatKv !== 'interleave') {
    // hidden_states[:, :, None].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d); the exporter
    // writes expand's shape through ConstantOfShape / Equal / Where on constants.
    const u = g.op('Unsqueeze', [x, g.ints([2], scope)], scope);
    const target = g.ints([b, kv, rep, s, d], scope);
    const ones = g.op('ConstantOfShape', [g.ints([5], scope)], scope, { value: { tensor: { name: 'value', dtype: INT64, dims: [1], values: [1] } } });
    const minusOne = g.op('Mul', [ones, g.intScalar(-1, scope)], scope);
    const shape = g.op('Where', [g.op('Equal', [target, minusOne], scope), ones, target], scope);
    return g.op('Reshape', [g.op('Expand', [u, shape], scope), g.ints([b, heads, s, d], scope)], scope, { allowzero: 0 });
  }
  // torch.repeat_interleave(x, dim=1, repeats=rep) (symbolic_opset13): one chunk per KV head,
  // each unsqueezed, expanded to rep copies and reshaped back, then concatenated.
  const chunks = g.node('Split', [x, g.ints(Array<number>(kv).fill(1), scope)], scope, { axis: 1 }, kv);
  const parts = chunks.map((chunk) => {
    const u = g.op('Unsqueeze', [chunk, g.ints([2], scope)], scope);
    const e = g.op('Expand', [u, g.ints([b, 1, rep, s, d], scope)], scope);
    return g.op('Reshape', [e, g.ints([b, -1, s, d], scope)], scope, { allowzero: 0 });
  });
  return kv === 1 ? (parts[0] as string) : g.op('Concat', parts, scope, { axis: 1 });
}

/** LlamaAttention: q/k/v projections (no bias), rotary, repeat_kv, scaled scores + mask, softmax, context, o_proj. */
export function llamaAttention(c: LlamaContext, x: string, scope: string): string {
  const { g } = c;
  const { hidden: h, heads, kvHeads: kv, seq: s, batch: b } = c.o;
  const d = h / heads;
  let projected: [string, string, string];
  if (c.o.fusedQkv) {
    const qkv = g.linear(x, `${scope}/qkv_proj`, h, (heads + 2 * kv) * d, false);
    const slice = (from: number, to: number): string => g.op('Slice', [qkv, g.ints([from], scope), g.ints([to], scope), g.ints([2], scope), g.ints([1], scope)], scope);
    projected = [slice(0, heads * d), slice(heads * d, (heads + kv) * d), slice((heads + kv) * d, Number.MAX_SAFE_INTEGER)];
  } else projected = [g.linear(x, `${scope}/q_proj`, h, heads * d, false), g.linear(x, `${scope}/k_proj`, h, kv * d, false), g.linear(x, `${scope}/v_proj`, h, kv * d, false)];
  const q = g.toHeads(projected[0], x, b, s, heads, d, scope);
  const k = g.toHeads(projected[1], x, b, s, kv, d, scope);
  const v = g.toHeads(projected[2], x, b, s, kv, d, scope);
  // Each layer's rotary_emb holds its own cos/sin buffers: folded into initializers, gathered by position ids.
  const path = scope.slice(1).replaceAll('/', '.');
  const table = (name: string): string => g.op('Unsqueeze', [g.op('Gather', [g.weight(`${path}.rotary_emb.${name}`, [s, d], false), c.positions], scope, { axis: 0 }), g.ints([1], scope)], scope);
  const cos = table('cos_cached');
  const sin = table('sin_cached');
  const qr = rotary(g, q, cos, sin, d, scope);
  const kr = repeatKv(c, rotary(g, k, cos, sin, d, scope), scope);
  const vr = repeatKv(c, v, scope);
  const scores = g.op('Div', [g.op('MatMul', [qr, g.op('Transpose', [kr], scope, { perm: [0, 1, 3, 2] })], scope), g.scalar(Math.sqrt(d), scope)], scope);
  const masked = g.op('Add', [scores, c.mask], scope);
  const probs = g.softmax(masked, scope, true);
  const ctx = g.op('MatMul', [c.o.casts ? g.op('Cast', [probs], scope, { to: FLOAT }) : probs, vr], scope);
  return g.linear(g.mergeHeads(ctx, x, b, s, h, scope), `${scope}/o_proj`, h, h, false);
}

/** LlamaMLP: down(act(gate(x)) * up(x)). */
export function llamaMlp(c: LlamaContext, x: string, scope: string, h: number, f: number): string {
  const { g } = c;
  const gate = g.linear(x, `${scope}/gate_proj`, h, f, false);
  const act = c.o.activation === undefined ? silu(g, gate, `${scope}/act_fn`) : unary(g, gate, `${scope}/act_fn`, c.o.activation);
  const up = g.linear(x, `${scope}/up_proj`, h, f, false);
  return g.linear(g.op('Mul', [act, up], scope), `${scope}/down_proj`, f, h, false);
}

/**
 * HF's _prepare_decoder_attention_mask: the padding mask [b, s] expanded to [b, 1, s, s],
 * inverted ((1 - m) masked to the dtype's minimum) and added to the folded causal mask.
 */
export function decoderMask(g: TorchGraph, mask: string, b: number, s: number): string {
  const u = g.op('Unsqueeze', [g.op('Unsqueeze', [mask, g.ints([1], '')], ''), g.ints([2], '')], '');
  const expanded = g.op('Cast', [g.op('Expand', [u, g.ints([b, 1, s, s], '')], '')], '', { to: FLOAT });
  const inverted = g.op('Sub', [g.scalar(1, ''), expanded], '');
  const filled = g.op('Where', [g.op('Cast', [inverted], '', { to: 9 }), g.scalar(-3.4028234663852886e38, ''), inverted], '');
  return g.op('Add', [filled, g.table([b, 1, s, s], '')], '');
}

export interface BuiltModel {
  bytes: Uint8Array;
  /** Trainable initializer elements by name. */
  params: Map<string, number>;
  /** Float buffers exported as initializers (rotary tables) by name. */
  buffers: Map<string, number>;
}

/** Decoder inputs of HF causal LMs: input_ids, attention_mask, position_ids. */
export function decoderInputs(b: number, s: number) {
  return [
    { name: 'input_ids', dtype: INT64, dims: [b, s] },
    { name: 'attention_mask', dtype: INT64, dims: [b, s] },
    { name: 'position_ids', dtype: INT64, dims: [b, s] },
  ];
}

export function llamaModel(o: LlamaOptions, mlp?: (c: LlamaContext, x: string, scope: string) => string): BuiltModel {
  const g = new TorchGraph(14, o.dynamic === true);
  const { hidden: h, seq: s, batch: b, vocab: V } = o;
  const wordTable = g.weight('model.embed_tokens.weight', [V, h]);
  let x = g.op('Gather', [wordTable, 'input_ids'], '/model/embed_tokens');
  const c: LlamaContext = { g, o, mask: decoderMask(g, 'attention_mask', b, s), positions: 'position_ids' };
  const norm = (v: string, scope: string): string => rmsNorm(g, v, scope, h, { casts: o.casts === true, reciprocal: o.reciprocal === true });
  for (let i = 0; i < o.layers; i++) {
    const p = `/model/layers.${i}`;
    x = g.op('Add', [x, llamaAttention(c, norm(x, `${p}/input_layernorm`), `${p}/self_attn`)], p);
    const n2 = norm(x, `${p}/post_attention_layernorm`);
    x = g.op('Add', [x, mlp === undefined ? llamaMlp(c, n2, `${p}/mlp`, h, o.ffn) : mlp(c, n2, `${p}/block_sparse_moe`)], p);
  }
  const logits = g.linear(norm(x, '/model/norm'), '/lm_head', h, V, false);
  g.nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  return { bytes: g.build(decoderInputs(b, s), [{ name: 'logits', dtype: FLOAT, dims: [b, s, V] }]), params: g.params, buffers: g.buffers };
}
