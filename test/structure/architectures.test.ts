/**
 * The model-structure stage on graph-only exports of each architecture pattern, written as
 * torch 1.13 exports HF transformers' modules (test/helpers/arch). Expected values come from the
 * builders' options and initializer dims (heads, KV heads = K's features / head dim, widths,
 * vocabularies) and from the models' reference code (which norm feeds what, pre/post/parallel
 * residual, which table a head is tied to), never from modtrans's output.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyseModel } from '../../src/pipeline.js';
import { ROOT } from '../helpers/models.js';
import { analyseBuilt, type Analysed } from '../helpers/arch/analyse.js';
import { bertModel } from '../helpers/arch/bert.js';
import { llamaModel, type LlamaOptions } from '../helpers/arch/llama.js';
import { MIXTRAL_FORMS, mixtralModel } from '../helpers/arch/mixtral.js';
import { falconModel, gptjModel, neoxModel } from '../helpers/arch/parallel.js';
import { t5Model } from '../helpers/arch/t5.js';
import { vitModel } from '../helpers/arch/vit.js';
import { present } from '../helpers/present.js';

const base = { layers: 2, hidden: 64, heads: 8, seq: 16, batch: 2, vocab: 100 };
const llama: LlamaOptions = { ...base, kvHeads: 2, ffn: 96 };

/** Each attention's Q/K/V/out layer names, heads, KV heads, head size, projection kind and self/cross. */
function attentions(a: Analysed) {
  return a.structure.attentions.map((x) => ({ q: a.name(x.q), k: a.name(x.k), v: a.name(x.v), out: a.name(x.out), heads: x.heads, kvHeads: x.kvHeads, headDim: x.headDim, projection: x.projection, kind: x.kind }));
}

function mlps(a: Analysed) {
  return a.structure.mlps.filter((m) => m.expertOf === undefined).map((m) => ({ kind: m.kind, up: m.up.map(a.name), gate: m.gate.map(a.name), down: m.down.map(a.name), width: m.width }));
}

function blocks(a: Analysed) {
  return a.structure.blocks.map((b) => ({ stack: b.stack, residual: b.residual, attentions: b.attentions.length, mlp: b.mlp === undefined ? undefined : a.structure.mlps[b.mlp]?.kind }));
}

function heads(a: Analysed) {
  return a.structure.heads.map((h) => ({ layer: a.name(h.layer), role: h.role, tiedTo: a.name(h.tiedTo) }));
}

const llamaAttention = (i: number, kvHeads = 2) => ({
  q: `model.layers.${i}.self_attn.q_proj`, k: `model.layers.${i}.self_attn.k_proj`, v: `model.layers.${i}.self_attn.v_proj`, out: `model.layers.${i}.self_attn.o_proj`,
  heads: 8, kvHeads, headDim: 8, projection: 'separate', kind: 'self',
});

describe('LLaMA (HF LlamaForCausalLM): RMSNorm, rotary, grouped-query attention, SwiGLU', () => {
  it.each([
    ['repeat_kv by expand + reshape, static shapes', {}],
    ['repeat_kv by repeat_interleave', { repeatKv: 'interleave' }],
    ['dynamic shapes (Shape -> Gather -> Unsqueeze -> Concat)', { dynamic: true }],
    ['fp16 export: casts around the norm and softmax, Reciprocal rsqrt', { casts: true, reciprocal: true }],
    ['multi-query (1 KV head) by repeat_interleave', { kvHeads: 1, repeatKv: 'interleave' }],
    ['multi-head (KV heads = heads: no repeat_kv)', { kvHeads: 8 }],
  ] as const)('%s', (_, extra) => {
    const o = { ...llama, ...extra };
    const a = analyseBuilt(llamaModel(o));
    expect(a.structure.transformer).toBe(true);
    // KV heads from K's initializer: [hidden, kvHeads x head dim].
    expect(attentions(a)).toEqual([0, 1].map((i) => llamaAttention(i, o.kvHeads)));
    expect(mlps(a)).toEqual([0, 1].map((i) => ({ kind: 'gated', up: [`model.layers.${i}.mlp.up_proj`], gate: [`model.layers.${i}.mlp.gate_proj`], down: [`model.layers.${i}.mlp.down_proj`], width: 96 })));
    expect(blocks(a)).toEqual([0, 1].map(() => ({ stack: 'decoder', residual: 'pre-norm', attentions: 1, mlp: 'gated' })));
    const e = a.structure.embeddings;
    expect({ word: a.name(e.word), vocab: e.vocab, width: e.width, position: e.position, tokenType: e.tokenType }).toEqual({ word: 'model.embed_tokens', vocab: 100, width: 64, position: [], tokenType: [] });
    // The rotary cos/sin buffers gathered by position ids are tables of no role (multiplied into Q and K, never summed into the stream).
    for (const i of [0, 1]) expect(a.structure.parts[a.index(`model.layers.${i}.self_attn.rotary_emb.cos_cached`)]).toEqual({ kind: 'embedding', role: 'other' });
    expect(heads(a)).toEqual([{ layer: 'lm_head', role: 'lm', tiedTo: '-' }]);
  });

  it("Phi-3's fused qkv_proj with grouped-query attention: KV heads from the fused width", () => {
    const a = analyseBuilt(llamaModel({ ...llama, fusedQkv: true }));
    const qkv = (i: number) => `model.layers.${i}.self_attn.qkv_proj`;
    expect(a.layers[a.index(qkv(0))]?.gemm.fwd.n).toBe((8 + 2 * 2) * 8);
    expect(attentions(a)).toEqual([0, 1].map((i) => ({ ...llamaAttention(i), q: qkv(i), k: qkv(i), v: qkv(i), projection: 'qkv' })));
  });

  it('finds the same structure with GEMM layers only (--vector-ops off)', () => {
    const a = analyseBuilt(llamaModel(llama), false);
    expect(attentions(a)).toEqual([0, 1].map((i) => llamaAttention(i)));
    expect(mlps(a).map((m) => m.kind)).toEqual(['gated', 'gated']);
    expect(blocks(a)).toEqual([0, 1].map(() => ({ stack: 'decoder', residual: 'pre-norm', attentions: 1, mlp: 'gated' })));
    expect(heads(a)).toEqual([{ layer: 'lm_head', role: 'lm', tiedTo: '-' }]);
  });
});

describe('parallel residual: GPT-NeoX, GPT-J, Falcon', () => {
  it('GPT-NeoX: fused query_key_value [b, s, heads, 3d], two norms, x + attn(ln1(x)) + mlp(ln2(x))', () => {
    const a = analyseBuilt(neoxModel(base));
    const qkv = (i: number) => `gpt_neox.layers.${i}.attention.query_key_value`;
    expect(attentions(a)).toEqual([0, 1].map((i) => ({ q: qkv(i), k: qkv(i), v: qkv(i), out: `gpt_neox.layers.${i}.attention.dense`, heads: 8, kvHeads: 8, headDim: 8, projection: 'qkv', kind: 'self' })));
    expect(mlps(a)).toEqual([0, 1].map((i) => ({ kind: 'dense', up: [`gpt_neox.layers.${i}.mlp.dense_h_to_4h`], gate: [], down: [`gpt_neox.layers.${i}.mlp.dense_4h_to_h`], width: 256 })));
    expect(blocks(a)).toEqual([0, 1].map(() => ({ stack: 'decoder', residual: 'parallel', attentions: 1, mlp: 'dense' })));
    expect(a.structure.blocks.map((b) => b.norms.map(a.name))).toEqual([0, 1].map((i) => [`gpt_neox.layers.${i}.input_layernorm`, `gpt_neox.layers.${i}.post_attention_layernorm`]));
    expect(heads(a)).toEqual([{ layer: 'embed_out', role: 'lm', tiedTo: '-' }]);
  });

  it.each([
    ['GPT-NeoX', () => neoxModel(base), 'parallel', 2],
    ['GPT-NeoX, use_parallel_residual=False', () => neoxModel({ ...base, parallel: false }), 'pre-norm', 2],
    ['BERT', () => bertModel({ ...base, labels: 3 }), 'post-norm', 2],
    ['T5 (encoder and decoder blocks)', () => t5Model({ ...base, ffn: 128 }), 'pre-norm', 4],
  ] as const)('%s: the residual topology with --vector-ops off (no residual-add layers) is %s', (_, build, residual, count) => {
    expect(analyseBuilt(build(), false).structure.blocks.map((b) => b.residual)).toEqual(Array(count).fill(residual));
  });

  it('GPT-NeoX with use_parallel_residual=False is pre-norm', () => {
    const a = analyseBuilt(neoxModel({ ...base, parallel: false }));
    expect(blocks(a).map((b) => b.residual)).toEqual(['pre-norm', 'pre-norm']);
  });

  it('GPT-J: separate q/k/v, one shared ln_1 feeding attention and the MLP', () => {
    const a = analyseBuilt(gptjModel(base));
    expect(attentions(a).map((x) => [x.q, x.projection, x.heads, x.kvHeads])).toEqual([0, 1].map((i) => [`transformer.h.${i}.attn.q_proj`, 'separate', 8, 8]));
    expect(blocks(a).map((b) => b.residual)).toEqual(['parallel', 'parallel']);
    expect(a.structure.blocks.map((b) => b.norms.map(a.name))).toEqual([0, 1].map((i) => [`transformer.h.${i}.ln_1`]));
    expect(heads(a)).toEqual([{ layer: 'lm_head', role: 'lm', tiedTo: '-' }]);
  });

  it.each([
    ['the folded copy of the tied table (constant folding on)', 'copy', '-'],
    ['a Transpose of the word table', 'transpose', 'transformer.word_embeddings'],
  ] as const)('Falcon-7B: multi-query fused QKV of (heads + 2) x d outputs, one K/V head; LM head through %s', (_, tiedHead, tiedTo) => {
    const a = analyseBuilt(falconModel({ ...base, tiedHead }));
    const qkv = (i: number) => `transformer.h.${i}.self_attention.query_key_value`;
    expect(a.layers[a.index(qkv(0))]?.gemm.fwd.n).toBe((8 + 2) * 8);
    expect(attentions(a)).toEqual([0, 1].map((i) => ({ q: qkv(i), k: qkv(i), v: qkv(i), out: `transformer.h.${i}.self_attention.dense`, heads: 8, kvHeads: 1, headDim: 8, projection: 'qkv', kind: 'self' })));
    expect(blocks(a).map((b) => b.residual)).toEqual(['parallel', 'parallel']);
    expect(a.structure.blocks.map((b) => b.norms.length)).toEqual([1, 1]);
    expect(heads(a)).toEqual([{ layer: 'lm_head', role: 'lm', tiedTo }]);
  });
});

describe.each(MIXTRAL_FORMS)('Mixtral: sparse MoE block in the %s', (form, dispatch) => {
  it.each([[4, 2], [8, 2], [4, 1]] as const)('%i SwiGLU experts, top-%i: router, experts and k from the TopK constant', (experts, topK) => {
    const a = analyseBuilt(mixtralModel({ ...llama, experts, topK, ...dispatch }));
    expect(attentions(a)).toEqual([0, 1].map((i) => llamaAttention(i)));
    const moes = a.structure.mlps.filter((m) => m.kind === 'moe');
    expect(moes.map((m) => ({ router: a.name(m.router), experts: m.experts?.length, topK: m.topK, width: m.width, dispatch: m.dispatch }))).toEqual(
      [0, 1].map((i) => ({ router: `model.layers.${i}.block_sparse_moe.gate`, experts, topK, width: 96, dispatch: form === 'dense form' ? 'dense' : 'routed' })),
    );
    moes.forEach((m, i) => {
      const prefix = `model.layers.${i}.block_sparse_moe.experts`;
      expect((m.experts ?? []).map((e) => { const x = present(a.structure.mlps[e], 'expert'); return [x.kind, a.name(x.gate[0]), a.name(x.up[0]), a.name(x.down[0])]; }))
        .toEqual(Array.from({ length: experts }, (_, e) => ['gated', `${prefix}.${e}.w1`, `${prefix}.${e}.w3`, `${prefix}.${e}.w2`]));
    });
    expect(blocks(a)).toEqual([0, 1].map(() => ({ stack: 'decoder', residual: 'pre-norm', attentions: 1, mlp: 'moe' })));
    expect(a.structure.parts[a.index('model.layers.0.block_sparse_moe.gate')]?.kind).toBe('router');
    // Each block ends at its residual add, after the experts' combined output (the index form's
    // last index_add_ included), and the next starts at its own norm.
    expect(a.structure.blocks.map((b) => [a.name(b.start), a.layers[b.end]?.vector?.opClass])).toEqual([0, 1].map((i) => [`model.layers.${i}.input_layernorm`, 'elementwise']));
    expect(a.structure.blocks.map((b) => a.layers.slice(b.start, b.end + 1).filter((l) => l.name.includes('experts.')).length)).toEqual([0, 1].map(() => a.layers.filter((l) => l.name.includes('layers.0.block_sparse_moe.experts.')).length));
    // Tokens each expert's GEMMs run on: all of them in the dense form; in the index form the
    // uniform share the graph leaves to run time, T x k / E (T = batch x seq), with no --dim.
    const rows = form === 'dense form' ? llama.batch * llama.seq : (llama.batch * llama.seq * topK) / experts;
    expect(a.layers[a.index('model.layers.1.block_sparse_moe.experts.0.w1')]?.gemm.fwd.m).toBe(rows);
  });
});

describe.each([
  ['DeepSeek-MoE (shared experts added to the routed sum)', { width: 192 }],
  ['Qwen2-MoE (shared expert scaled by sigmoid(shared_expert_gate(x)))', { width: 192, gated: true }],
  ['a shared expert as wide as the routed ones', { width: 96 }],
] as const)('%s', (_, shared) => {
  it.each(MIXTRAL_FORMS)('%s: the routed experts, the router and the shared expert told apart', (_form, dispatch) => {
    const a = analyseBuilt(mixtralModel({ ...llama, experts: 4, topK: 2, shared, ...dispatch }));
    const moes = a.structure.mlps.filter((m) => m.kind === 'moe');
    expect(moes.map((m) => [a.name(m.router), m.experts?.length, (m.shared ?? []).map((e) => a.name(a.structure.mlps[e]?.down[0]))])).toEqual(
      [0, 1].map((i) => [`model.layers.${i}.block_sparse_moe.gate`, 4, [`model.layers.${i}.block_sparse_moe.shared_expert.down_proj`]]),
    );
    const sharedMlp = present(a.structure.mlps[moes[0]?.shared?.[0] ?? -1], 'shared expert');
    expect([sharedMlp.kind, sharedMlp.width, a.name(sharedMlp.gate[0]), a.name(sharedMlp.up[0])]).toEqual(['gated', shared.width, 'model.layers.0.block_sparse_moe.shared_expert.gate_proj', 'model.layers.0.block_sparse_moe.shared_expert.up_proj']);
    // Still two blocks, each holding its shared expert.
    expect(blocks(a)).toEqual([0, 1].map(() => ({ stack: 'decoder', residual: 'pre-norm', attentions: 1, mlp: 'moe' })));
    for (const [i, b] of a.structure.blocks.entries()) expect(b.end).toBeGreaterThan(a.index(`model.layers.${i}.block_sparse_moe.shared_expert.down_proj`));
  });
});

describe('attention traits read from the data flow: rotary on Q/K, and the mask the scores get', () => {
  const vitOptions = { image: 32, patch: 8, layers: 2, heads: 4, hidden: 64, mlp: 128, classes: 10 };
  // Expected from how each builder writes its export: LLaMA, Falcon and T5's decoder add the
  // causal triangle folded by constant folding into a float constant (told only as 'static');
  // GPT-NeoX and GPT-J select with the boolean `bias` buffer (a triangle: causal); BERT and T5's
  // encoder and cross-attention add the inverted attention_mask input (padding); ViT has none.
  it.each([
    ['LLaMA', () => llamaModel(llama), ['self:rotary:static']],
    ['GPT-NeoX (partial rotary)', () => neoxModel(base), ['self:rotary:causal']],
    ['GPT-J', () => gptjModel(base), ['self:rotary:causal']],
    ['Falcon', () => falconModel(base), ['self:rotary:static']],
    ['BERT', () => bertModel({ ...base, labels: 3 }), ['self:-:padding']],
    ['T5', () => t5Model({ ...base, ffn: 128, targetSeq: 8 }), ['self:-:padding', 'self:-:static', 'cross:-:padding']],
    ['ViT', () => vitModel(vitOptions), ['self:-:none']],
  ] as const)('%s', (_, build, expected) => {
    const a = analyseBuilt(build());
    const traits = [...new Set(a.structure.attentions.map((x) => `${x.kind}:${x.rotary ? 'rotary' : '-'}:${x.mask}`))];
    expect(traits).toEqual(expected);
  });

  it('the shipped gpt2_small_like (learned positions, the causal `bias` buffer) and bert_base_like (no mask input)', () => {
    const traits = (m: string) => [...new Set(analyseModel(join(ROOT, 'examples', `${m}.onnx`)).structure.attentions.map((x) => `${x.rotary ? 'rotary' : '-'}:${x.mask}`))];
    expect([traits('gpt2_small_like'), traits('bert_base_like')]).toEqual([['-:causal'], ['-:none']]);
  });
});

describe('HF BERT for sequence classification', () => {
  it.each([['static shapes', false], ['dynamic shapes', true]] as const)('%s: post-norm encoder, three embeddings, pooler and classifier', (_, dynamic) => {
    const a = analyseBuilt(bertModel({ ...base, labels: 3, dynamic }));
    const self = (i: number, p: string) => `bert.encoder.layer.${i}.attention.self.${p}`;
    expect(attentions(a)).toEqual([0, 1].map((i) => ({ q: self(i, 'query'), k: self(i, 'key'), v: self(i, 'value'), out: `bert.encoder.layer.${i}.attention.output.dense`, heads: 8, kvHeads: 8, headDim: 8, projection: 'separate', kind: 'self' })));
    expect(mlps(a)).toEqual([0, 1].map((i) => ({ kind: 'dense', up: [`bert.encoder.layer.${i}.intermediate.dense`], gate: [], down: [`bert.encoder.layer.${i}.output.dense`], width: 256 })));
    expect(blocks(a)).toEqual([0, 1].map(() => ({ stack: 'encoder', residual: 'post-norm', attentions: 1, mlp: 'dense' })));
    // Post-norm: each layer ends with its output LayerNorm.
    expect(a.structure.blocks.map((b) => b.norms.map(a.name))).toEqual([0, 1].map((i) => [`bert.encoder.layer.${i}.attention.output.LayerNorm`, `bert.encoder.layer.${i}.output.LayerNorm`]));
    const e = a.structure.embeddings;
    expect([a.name(e.word), e.position.map(a.name), e.tokenType.map(a.name), e.vocab]).toEqual(['bert.embeddings.word_embeddings', ['bert.embeddings.position_embeddings'], ['bert.embeddings.token_type_embeddings'], 100]);
    expect(heads(a)).toEqual([{ layer: 'bert.pooler.dense', role: 'pooler', tiedTo: '-' }, { layer: 'classifier', role: 'classifier', tiedTo: '-' }]);
  });
});

describe('T5: encoder-decoder with relative position bias and cross-attention', () => {
  it.each([
    ['tied LM head through a Transpose of shared', 'transpose', 'shared'],
    ['tied LM head folded into a copy', 'copy', '-'],
  ] as const)('%s', (_, tiedHead, tiedTo) => {
    const a = analyseBuilt(t5Model({ ...base, ffn: 128, targetSeq: 8, tiedHead }));
    const att = (stack: string, i: number, layer: number, kind: string) => {
      const p = `${stack}.block.${i}.layer.${layer}.${kind === 'cross' ? 'EncDecAttention' : 'SelfAttention'}`;
      return { q: `${p}.q`, k: `${p}.k`, v: `${p}.v`, out: `${p}.o`, heads: 8, kvHeads: 8, headDim: 8, projection: 'separate', kind };
    };
    expect(attentions(a)).toEqual([att('encoder', 0, 0, 'self'), att('encoder', 1, 0, 'self'), att('decoder', 0, 0, 'self'), att('decoder', 0, 1, 'cross'), att('decoder', 1, 0, 'self'), att('decoder', 1, 1, 'cross')]);
    // Cross-attention K and V read the encoder's final (normed) output.
    const cross = a.structure.attentions.filter((x) => x.kind === 'cross');
    for (const x of cross) expect(x.source).toBe(a.structure.encoderOutput);
    expect(a.structure.encoderOutput).toMatch(/^\/encoder\/final_layer_norm\//);
    expect(blocks(a)).toEqual([
      { stack: 'encoder', residual: 'pre-norm', attentions: 1, mlp: 'dense' }, { stack: 'encoder', residual: 'pre-norm', attentions: 1, mlp: 'dense' },
      { stack: 'decoder', residual: 'pre-norm', attentions: 2, mlp: 'dense' }, { stack: 'decoder', residual: 'pre-norm', attentions: 2, mlp: 'dense' },
    ]);
    // Each block runs from its own first norm to its residual add; the encoder's final norm and the
    // decoder's embedding lie between the stacks (the cross-attention K/V read that norm, not the block's stream).
    expect(a.structure.blocks.map((b) => [a.name(b.start), a.name(b.end)])).toEqual([
      ['encoder.block.0.layer.0.layer_norm', 'encoder.block.0.layer.1.Add'], ['encoder.block.1.layer.0.layer_norm', 'encoder.block.1.layer.1.Add'],
      ['decoder.block.0.layer.0.layer_norm', 'decoder.block.0.layer.2.Add'], ['decoder.block.1.layer.0.layer_norm', 'decoder.block.1.layer.2.Add'],
    ]);
    // One `shared` table, looked up by both stacks; the relative position bias tables have no embedding role.
    expect(a.name(a.structure.embeddings.word)).toBe('shared');
    expect(a.structure.parts[a.index('decoder.embed_tokens')]).toEqual({ kind: 'embedding', role: 'word' });
    for (const t of ['encoder', 'decoder']) expect(a.structure.parts[a.index(`${t}.block.0.layer.0.SelfAttention.relative_attention_bias`)]).toEqual({ kind: 'embedding', role: 'other' });
    expect(heads(a)).toEqual([{ layer: 'lm_head', role: 'lm', tiedTo }]);
  });

  it('flan-t5: gated-GELU MLP (wi_0, wi_1, wo) and an untied LM head', () => {
    const a = analyseBuilt(t5Model({ ...base, ffn: 128, gated: true, tiedHead: 'untied' }));
    const ff = (stack: string, i: number) => `${stack}.block.${i}.layer.${stack === 'encoder' ? 1 : 2}.DenseReluDense`;
    expect(mlps(a)).toEqual(['encoder', 'decoder'].flatMap((stack) => [0, 1].map((i) => ({ kind: 'gated', up: [`${ff(stack, i)}.wi_1`], gate: [`${ff(stack, i)}.wi_0`], down: [`${ff(stack, i)}.wo`], width: 128 }))));
    expect(blocks(a).map((b) => [b.stack, b.attentions])).toEqual([['encoder', 1], ['encoder', 1], ['decoder', 2], ['decoder', 2]]);
    expect(heads(a)).toEqual([{ layer: 'lm_head', role: 'lm', tiedTo: '-' }]);
  });
});

describe('torchvision ViT (nn.MultiheadAttention, batch 1)', () => {
  it('packed in_proj chunked in three, 3-D products over batch x heads, pre-norm encoder, classifier on the class token', () => {
    const a = analyseBuilt(vitModel({ image: 32, patch: 8, layers: 2, heads: 4, hidden: 64, mlp: 128, classes: 10 }));
    const sa = (i: number) => `encoder.layers.encoder_layer_${i}.self_attention`;
    expect(attentions(a)).toEqual([0, 1].map((i) => ({ q: sa(i), k: sa(i), v: sa(i), out: `${sa(i)}.out_proj`, heads: 4, kvHeads: 4, headDim: 16, projection: 'qkv', kind: 'self' })));
    expect(mlps(a)).toEqual([0, 1].map((i) => ({ kind: 'dense', up: [`encoder.layers.encoder_layer_${i}.mlp.0`], gate: [], down: [`encoder.layers.encoder_layer_${i}.mlp.3`], width: 128 })));
    expect(blocks(a)).toEqual([0, 1].map(() => ({ stack: 'encoder', residual: 'pre-norm', attentions: 1, mlp: 'dense' })));
    expect(a.structure.blocks.map((b) => b.norms.map(a.name))).toEqual([0, 1].map((i) => [`encoder.layers.encoder_layer_${i}.ln_1`, `encoder.layers.encoder_layer_${i}.ln_2`]));
    expect(a.structure.embeddings.word).toBe(-1);
    expect(a.structure.parts[a.index('conv_proj')]).toEqual({ kind: 'other' });
    expect(heads(a)).toEqual([{ layer: 'heads.head', role: 'classifier', tiedTo: '-' }]);
  });
});
