/**
 * Megatron-LM's tensor-parallel layout and pipeline cuts on the exports of
 * test/structure/architectures.test.ts. Expected figures follow Megatron-LM's rules: Q/K/V (fused
 * or not), MLP up and gate column-parallel, output and down projections row-parallel (one forward
 * all-reduce each, of tokens x hidden elements), the attention products split by heads, the word
 * embedding vocab-parallel, routers, poolers and classifiers replicated; T must divide the KV
 * heads (num_query_groups % tensor_model_parallel_size == 0); GPT-NeoX's parallel residual
 * all-reduces attn + mlp once; Megatron-core's MoE layer reduces the combined experts once, and
 * each expert runs on top-k / E of the tokens under uniform routing.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { at, InputError } from '../../src/errors.js';
import { buildPlan, type PlanOptions } from '../../src/plan/build.js';
import type { ParallelPlan } from '../../src/plan/types.js';
import { checkCutsClose, pipelineCuts } from '../../src/structure/cuts.js';
import { analyseBuilt, type Analysed } from '../helpers/arch/analyse.js';
import { bertModel } from '../helpers/arch/bert.js';
import { llamaModel, type LlamaOptions } from '../helpers/arch/llama.js';
import { MIXTRAL_FORMS, mixtralModel } from '../helpers/arch/mixtral.js';
import { falconModel, gptjModel, neoxModel } from '../helpers/arch/parallel.js';
import { t5Model } from '../helpers/arch/t5.js';
import { vitModel } from '../helpers/arch/vit.js';

const base = { layers: 2, hidden: 64, heads: 8, seq: 16, batch: 2, vocab: 100 };
const llama: LlamaOptions = { ...base, kvHeads: 2, ffn: 96 };
const tokens = base.seq * base.batch;
const FP16 = 2;
const vit = { image: 32, patch: 8, layers: 2, heads: 4, hidden: 64, mlp: 128, classes: 10 };

function plan(a: Analysed, tp: number, extra: Partial<PlanOptions> = {}): ParallelPlan {
  return buildPlan(a, {
    world: { tp, dp: 1, pp: 1 }, batch: { globalBatch: base.batch, microBatch: base.batch, microBatches: 1 },
    sequenceParallel: false, zero: 0, dtype: 'fp16', dpBucketMiB: 25, layerCycles: (l) => l.layer.gemm.fwd.m * l.layer.gemm.fwd.k * l.layer.gemm.fwd.n * l.layer.gemmCount + 1, ...extra,
  });
}

const roleOf = (p: ParallelPlan, name: string) => p.layers.find((l) => l.layer.name === name)?.role;

/** Per block: forward all-reduces (row outputs) and input-gradient all-reduces (column inputs), in bytes. */
function blockCollectives(a: Analysed, p: ParallelPlan) {
  return a.structure.blocks.map((b) => {
    const layers = p.layers.slice(b.start, b.end + 1);
    const bytes = (where: 'afterFwd' | 'afterIg') => layers.flatMap((l) => l.collectives[where].filter((c) => c.type === 'ALLREDUCE').map((c) => c.bytes));
    return { fwd: bytes('afterFwd'), ig: bytes('afterIg') };
  });
}

const activation = tokens * base.hidden * FP16;

describe('LLaMA: grouped-query attention over tensor parallelism', () => {
  it('--tp 2 on 2 KV heads: Q/K/V column (K and V split by KV groups), o/down row, two forward all-reduces per block', () => {
    const a = analyseBuilt(llamaModel(llama));
    const p = plan(a, 2);
    for (const i of [0, 1]) {
      const l = `model.layers.${i}`;
      expect(['q_proj', 'k_proj', 'v_proj', 'o_proj'].map((n) => roleOf(p, `${l}.self_attn.${n}`))).toEqual(['column', 'column', 'column', 'row']);
      expect(['gate_proj', 'up_proj', 'down_proj'].map((n) => roleOf(p, `${l}.mlp.${n}`))).toEqual(['column', 'column', 'row']);
      expect([roleOf(p, `${l}.self_attn.MatMul`), roleOf(p, `${l}.self_attn.MatMul_1`)]).toEqual(['heads', 'heads']);
      expect(roleOf(p, `${l}.self_attn.rotary_emb.cos_cached`)).toBe('replicated');
      // K: [64, 2 x 8] split over 2 ranks: one KV head each.
      expect(p.layers[a.index(`${l}.self_attn.k_proj`)]?.weightParamsHeld).toBe((64 * 16) / 2);
    }
    expect([roleOf(p, 'model.embed_tokens'), roleOf(p, 'lm_head')]).toEqual(['vocab', 'column']);
    // Per block: o_proj and down_proj reduce; Q/K/V share one input (one input-gradient reduction), gate/up another.
    expect(blockCollectives(a, p)).toEqual([0, 1].map(() => ({ fwd: [activation, activation], ig: [activation, activation] })));
  });

  it.each([
    [4, 2, '--tp 2 splits', 'expand'],
    [4, 2, '--tp 2 splits', 'interleave'],
    [8, 4, '--tp 2 or 4 split', 'expand'],
  ] as const)('--tp %i on %i KV heads is refused naming the K layer and the valid T (%s; repeat_kv by %s)', (tp, kvHeads, valid, repeatKv) => {
    const a = analyseBuilt(llamaModel({ ...llama, kvHeads, repeatKv }));
    expect(() => plan(a, tp)).toThrow(InputError);
    expect(() => plan(a, tp)).toThrow(new RegExp(`layer model\\.layers\\.0\\.self_attn\\.k_proj: ${kvHeads} K/V heads .* --tp ${tp}.*; ${valid} every layer of this model$`));
  });

  it('a fused GQA qkv_proj at --tp 4 on 2 KV heads is refused naming the fused layer', () => {
    const a = analyseBuilt(llamaModel({ ...llama, fusedQkv: true }));
    expect(() => plan(a, 4)).toThrow(/layer model\.layers\.0\.self_attn\.qkv_proj: 2 K\/V heads .*; --tp 2 splits every layer of this model$/);
    expect(roleOf(plan(a, 2), 'model.layers.0.self_attn.qkv_proj')).toBe('column');
  });

  it('Falcon multi-query: its one K/V head does not split over --tp 2 (no --tp above 1 does)', () => {
    const a = analyseBuilt(falconModel(base));
    expect(() => plan(a, 2)).toThrow(/layer transformer\.h\.0\.self_attention\.query_key_value: multi-query attention: its 1 K\/V head does not split over --tp 2.*; no --tp above 1 splits every layer of this model$/);
    expect(plan(a, 1).layers.length).toBe(a.layers.length);
  });
});

describe('parallel residual: one forward all-reduce of attn + mlp per block (GPT-NeoX)', () => {
  it.each([
    // Two norms: QKV and the MLP read different inputs, two input-gradient reductions.
    ['GPT-NeoX', () => neoxModel(base), 2],
    // One shared ln_1: QKV and fc_in read one input, one input-gradient reduction.
    ['GPT-J', () => gptjModel(base), 1],
  ] as const)('%s at --tp 2', (_, build, igReductions) => {
    const a = analyseBuilt(build());
    const p = plan(a, 2);
    expect(blockCollectives(a, p)).toEqual([0, 1].map(() => ({ fwd: [activation], ig: Array(igReductions).fill(activation) })));
    // The attention output projection is row-parallel but leaves its partial sum to the MLP's reduction.
    for (const b of a.structure.blocks) {
      const out = at(a.structure.attentions, at(b.attentions, 0)).out;
      expect(p.layers[out]?.role).toBe('row');
      expect(p.layers[out]?.collectives.afterFwd).toEqual([]);
    }
  });

  it('GPT-NeoX with the sequential residual reduces attention and MLP separately', () => {
    const a = analyseBuilt(neoxModel({ ...base, parallel: false }));
    expect(blockCollectives(a, plan(a, 2)).map((b) => b.fwd)).toEqual([[activation, activation], [activation, activation]]);
  });
});

describe.each(MIXTRAL_FORMS)('Mixtral MoE (%s) at --tp 2: router replicated, one all-reduce per MoE layer, active MACs', (_, dispatch) => {
  it.each([[4, 2], [8, 2], [4, 1]] as const)('E = %i, top-%i', (experts, topK) => {
    const a = analyseBuilt(mixtralModel({ ...llama, experts, topK, ...dispatch }));
    const p = plan(a, 2);
    for (const i of [0, 1]) {
      const moe = `model.layers.${i}.block_sparse_moe`;
      expect(roleOf(p, `${moe}.gate`)).toBe('replicated');
      for (let e = 0; e < experts; e++) expect(['w1', 'w3', 'w2'].map((w) => roleOf(p, `${moe}.experts.${e}.${w}`))).toEqual(['column', 'column', 'row']);
    }
    // Attention output, then the experts' combined output: one reduction each.
    expect(blockCollectives(a, p).map((b) => b.fwd)).toEqual([[activation, activation], [activation, activation]]);
    // Forward MACs of the expert GEMMs (T = 1): top-k / E of every expert on every token.
    const one = plan(a, 1);
    const expertLayers = a.structure.mlps.filter((m) => m.expertOf !== undefined).flatMap((m) => [...m.gate, ...m.up, ...m.down]);
    const macs = expertLayers.reduce((s, i) => s + at(one.layers, i).passes.fwd.reduce((t, w) => t + w.gemm.m * w.gemm.k * w.gemm.n * w.count, 0), 0);
    const dense = 2 * experts * 3 * tokens * 64 * 96;
    expect(macs).toBe((dense * topK) / experts);
  });

  it('--moe-topk overrides the graph and is checked against the experts', () => {
    const a = analyseBuilt(mixtralModel({ ...llama, experts: 4, topK: 2, ...dispatch }));
    const w1 = a.index('model.layers.0.block_sparse_moe.experts.0.w1');
    expect(plan(a, 1, { moe: { topK: 1 } }).layers[w1]?.passes.fwd[0]?.gemm.m).toBe(tokens / 4);
    expect(() => plan(a, 1, { moe: { topK: 5 } })).toThrow(/--moe-topk 5: the MoE layer at 'model\.layers\.0\.block_sparse_moe\.gate' has 4 experts/);
  });

  it('--moe-capacity-factor: each expert runs on capacity x T x k / E tokens, at most T', () => {
    const a = analyseBuilt(mixtralModel({ ...llama, experts: 4, topK: 2, ...dispatch }));
    const w2 = a.index('model.layers.1.block_sparse_moe.experts.3.w2');
    // Megatron-core: capacity = ceil(T x k / E x capacity factor) tokens per expert.
    expect(plan(a, 1, { moe: { capacityFactor: 1.5 } }).layers[w2]?.passes.fwd[0]?.gemm.m).toBe(Math.ceil(((tokens * 2) / 4) * 1.5));
    expect(plan(a, 1, { moe: { capacityFactor: 4 } }).layers[w2]?.passes.fwd[0]?.gemm.m).toBe(tokens);
  });
});

describe('shared experts (Megatron-core SharedExpertMLP: a dense MLP on every token, reduced on its own)', () => {
  it.each(MIXTRAL_FORMS)('%s at --tp 2: shared expert column/column/row on all tokens, its own all-reduce; the gate replicated', (_, dispatch) => {
    const width = 192;
    const a = analyseBuilt(mixtralModel({ ...llama, experts: 4, topK: 2, shared: { width, gated: true }, ...dispatch }));
    const p = plan(a, 2);
    const moe = 'model.layers.0.block_sparse_moe';
    expect(['gate_proj', 'up_proj', 'down_proj'].map((w) => roleOf(p, `${moe}.shared_expert.${w}`))).toEqual(['column', 'column', 'row']);
    expect(roleOf(p, `${moe}.shared_expert_gate`)).toBe('replicated');
    // megatron/core/transformer/moe/shared_experts.py: SharedExpertMLP.forward is MLP.forward (its
    // row-parallel fc2 reduces), added to the routed experts' combined (and reduced) output:
    // attention, routed experts, shared expert.
    expect(blockCollectives(a, p).map((b) => b.fwd)).toEqual([[activation, activation, activation], [activation, activation, activation]]);
    // All tokens through the shared expert, half its width per rank.
    const down = at(p.layers, a.index(`${moe}.shared_expert.down_proj`)).passes.fwd[0]?.gemm;
    expect([down?.m, down?.k, down?.n]).toEqual([tokens, width / 2, 64]);
  });
});

describe('BERT and T5 roles', () => {
  it('BERT: word vocab-parallel; position, token-type, pooler and classifier replicated; two reductions per post-norm layer', () => {
    const a = analyseBuilt(bertModel({ ...base, labels: 3 }));
    const p = plan(a, 2);
    expect(['word_embeddings', 'position_embeddings', 'token_type_embeddings'].map((e) => roleOf(p, `bert.embeddings.${e}`))).toEqual(['vocab', 'replicated', 'replicated']);
    expect([roleOf(p, 'bert.pooler.dense'), roleOf(p, 'classifier')]).toEqual(['replicated', 'replicated']);
    expect(blockCollectives(a, p).map((b) => b.fwd)).toEqual([[activation, activation], [activation, activation]]);
  });

  it('T5: shared table vocab-parallel in both stacks; each cross-attention reduces its own K/V input gradient', () => {
    const a = analyseBuilt(t5Model({ ...base, ffn: 128, targetSeq: 8 }));
    const p = plan(a, 2);
    expect([roleOf(p, 'shared'), roleOf(p, 'decoder.embed_tokens'), roleOf(p, 'lm_head')]).toEqual(['vocab', 'vocab', 'column']);
    expect(roleOf(p, 'encoder.block.0.layer.0.SelfAttention.relative_attention_bias')).toBe('replicated');
    // Megatron's T5: each decoder layer's cross-attention key_value projection is its own
    // column-parallel layer reading the encoder output: one input-gradient all-reduce per layer
    // (encoder tokens x hidden).
    const encoderGrad = base.batch * base.seq * base.hidden * FP16;
    for (const i of [0, 1]) {
      const kv = ['k', 'v'].map((n) => at(p.layers, a.index(`decoder.block.${i}.layer.1.EncDecAttention.${n}`)));
      expect(kv.map((l) => l.role)).toEqual(['column', 'column']);
      expect(kv.flatMap((l) => l.collectives.afterIg.map((c) => c.bytes))).toEqual([encoderGrad]);
    }
  });
});

describe('ViT roles', () => {
  it('--tp 2: packed in_proj column, out_proj and mlp.3 row, the patch Conv and the classifier replicated', () => {
    const a = analyseBuilt(vitModel(vit));
    const p = plan(a, 2, { batch: { globalBatch: 1, microBatch: 1, microBatches: 1 } });
    const sa = 'encoder.layers.encoder_layer_0.self_attention';
    expect([sa, `${sa}.out_proj`, 'encoder.layers.encoder_layer_0.mlp.0', 'encoder.layers.encoder_layer_0.mlp.3'].map((n) => roleOf(p, n))).toEqual(['column', 'row', 'column', 'row']);
    // Megatron-LM's ViT keeps its patch embedding a plain (replicated) layer.
    expect([roleOf(p, 'conv_proj'), roleOf(p, 'heads.head')]).toEqual(['replicated', 'replicated']);
    const tokens17 = 17 * 64 * FP16;
    expect(blockCollectives(a, p).map((b) => b.fwd)).toEqual([[tokens17, tokens17], [tokens17, tokens17]]);
  });
});

describe('pipeline cuts close on the residual stream', () => {
  const cases = [
    ['LLaMA', () => llamaModel(llama)],
    ['GPT-NeoX', () => neoxModel(base)],
    ['Falcon', () => falconModel(base)],
    ['Mixtral', () => mixtralModel({ ...llama, experts: 4, topK: 2 })],
    ['Mixtral (index form)', () => mixtralModel({ ...llama, experts: 4, topK: 2, dispatch: 'index' })],
    ['BERT', () => bertModel({ ...base, labels: 3 })],
    ['ViT', () => vitModel(vit)],
  ] as const;
  it.each(cases)('%s: --pp 2 cuts on a block boundary, and the cut closes', (_, build) => {
    const a = analyseBuilt(build());
    const p = plan(a, 1, { world: { tp: 1, dp: 1, pp: 2 } });
    const cut = at(p.pipeline.stages, 1).layers[0] as number;
    expect(a.structure.blocks.slice(0, -1).map((b) => b.end + 1)).toContain(cut);
    expect(pipelineCuts(a.structure, a.inferred, a.layers)).toContain(cut);
    expect(() => checkCutsClose(a.inferred, a.layers, [0, cut], 'test')).not.toThrow();
  });

  it('a --pp-stages file cutting between two experts of a MoE layer is refused naming the value', () => {
    const a = analyseBuilt(mixtralModel({ ...llama, experts: 4, topK: 2 }));
    const cut = a.index('model.layers.1.block_sparse_moe.experts.2.w1');
    const text = JSON.stringify([a.layers.slice(0, cut).map((l) => l.name), a.layers.slice(cut).map((l) => l.name)]);
    // The flattened tokens, the routing weights, the partial sum of experts 0-1 and the residual all cross it.
    expect(() => plan(a, 1, { world: { tp: 1, dp: 1, pp: 2 }, stagesFile: { file: 'moe.json', text } })).toThrow(/moe\.json: the pipeline cut before layer 'model\.layers\.1\.block_sparse_moe\.experts\.2\.w1' does not close/);
  });

  it('a --pp-stages file cutting between the attention and the MLP of a parallel-residual block is refused naming the value', () => {
    const a = analyseBuilt(neoxModel(base));
    const cut = a.index('gpt_neox.layers.1.post_attention_layernorm');
    const file = join(a.file, '..', 'stages.json');
    const text = JSON.stringify([a.layers.slice(0, cut).map((l) => l.name), a.layers.slice(cut).map((l) => l.name)]);
    writeFileSync(file, text);
    const run = () => plan(a, 1, { world: { tp: 1, dp: 1, pp: 2 }, stagesFile: { file, text } });
    expect(run).toThrow(InputError);
    // The block's input (the residual) and the attention output both cross the cut.
    expect(run).toThrow(/stages\.json: the pipeline cut before layer 'gpt_neox\.layers\.1\.post_attention_layernorm' does not close: besides '[^']+' .*value '[^']+'/);
  });
});
