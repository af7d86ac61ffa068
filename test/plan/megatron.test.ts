/**
 * Tensor-parallel roles and collectives on GPT- and LLaMA-style graphs the test builds, against
 * Megatron-LM's scheme and AICB's reference sizes: per block and micro-batch, a forward all-reduce
 * of the attention and MLP outputs and a backward all-reduce of their input gradients, each
 * seq x micro-batch x hidden x dtype bytes; with sequence parallelism an all-gather (per-rank
 * shard) and a reduce-scatter (whole buffer) instead.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BARE_GPT, gptModel, gptParameterCount, type GptOptions } from '../../bench/models/gpt-graph.js';
import { buildPlan, parseTpPlan, type PlanOptions } from '../../src/plan/build.js';
import type { ParallelPlan, PlannedCollective } from '../../src/plan/types.js';
import { analyseModel } from '../../src/pipeline.js';
import { present } from '../helpers/present.js';

/** These figures are the initializers' own: no Megatron vocabulary padding beyond a multiple of T (its own tests: test/plan/vocab-padding.test.ts). */
const NO_VOCAB_PADDING = 1;

const dir = mkdtempSync(join(tmpdir(), 'modtrans-megatron-'));
let files = 0;

function analyse(o: GptOptions, vectorOps = false) {
  const file = join(dir, `gpt${files++}.onnx`);
  writeFileSync(file, gptModel(o));
  return analyseModel(file, {}, {}, { vectorOps });
}

function plan(o: GptOptions, opts: Partial<PlanOptions> & { tp: number }, vectorOps = false): ParallelPlan {
  const { tp, ...rest } = opts;
  return buildPlan(analyse(o, vectorOps), {
    world: { tp, dp: 1, pp: 1 },
    batch: { globalBatch: o.batch, microBatch: o.batch, microBatches: 1 },
    sequenceParallel: false,
    zero: 0,
    dtype: 'fp16',
    dpBucketMiB: 25,
    vocabDivisibleBy: NO_VOCAB_PADDING,
    ...rest,
  });
}

const all = (p: ParallelPlan): PlannedCollective[] => p.layers.flatMap((l) => Object.values(l.collectives).flat());
const roleOf = (p: ParallelPlan, name: string) => p.layers.find((l) => l.layer.name === name)?.role;

const small: GptOptions = { layers: 2, hidden: 256, heads: 8, seq: 64, batch: 2, vocab: 1000 };

describe('Megatron-LM roles found in the graph, not by names', () => {
  it.each([
    ['GPT: fused QKV, GELU MLP, tied head', { ...small, fusedQkv: true, tiedHead: true }, ['attn.qkv'], ['mlp.fc'], 'mlp.proj'],
    ['LLaMA: separate Q/K/V, rotary, RMSNorm, gated MLP, untied head', { ...small, rotary: true, norm: 'rms', mlp: 'swiglu', ffn: 688 }, ['attn.q', 'attn.k', 'attn.v'], ['mlp.gate', 'mlp.up'], 'mlp.down'],
  ] as const)('%s', (_, o, qkv, up, down) => {
    const p = plan(o, { tp: 4 });
    for (let b = 0; b < o.layers; b++) {
      for (const n of qkv) expect(roleOf(p, `blocks.${b}.${n}`)).toBe('column');
      expect(roleOf(p, `blocks.${b}.attn.o`)).toBe('row');
      for (const n of up) expect(roleOf(p, `blocks.${b}.${n}`)).toBe('column');
      expect(roleOf(p, `blocks.${b}.${down}`)).toBe('row');
      expect(roleOf(p, `blocks.${b}.attn.MatMul`)).toBe('heads');
      expect(roleOf(p, `blocks.${b}.attn.MatMul_1`)).toBe('heads');
    }
    expect(roleOf(p, 'wte')).toBe('vocab');
    const head = present(p.layers.find((l) => l.layer.name === 'lm_head'), 'lm_head');
    expect(head.role).toBe('column');
    // Per micro-batch and rank: the embedding's forward sum, per block two forward and two
    // backward all-reduces (Q/K/V and gate/up each share one input: one reduction each), the
    // head's input gradient, and the vocab-parallel loss's max, target and sum reductions.
    const tokens = o.seq * o.batch;
    const activation = tokens * o.hidden * 2;
    const expected = [activation, ...Array(4 * o.layers).fill(activation), activation, tokens * 4, tokens * 4, tokens * 4].sort((a, b) => a - b);
    expect(all(p).map((c) => c.type)).toEqual(Array(expected.length).fill('ALLREDUCE'));
    expect(all(p).map((c) => c.bytes).sort((a, b) => a - b)).toEqual(expected);
    // Parameters held per rank: split layers hold 1/4, norms and row biases all of theirs.
    expect(head.weightParamsHeld).toBe(o.tiedHead ? 0 : (Math.ceil(o.vocab / 4) * o.hidden));
  });

  it('holds every parameter of the model once over the tensor-parallel group (T = 1)', () => {
    const variants = [
      { ...small, fusedQkv: true, tiedHead: true },
      { ...small, rotary: true, norm: 'rms', mlp: 'swiglu', ffn: 688 },
      { ...small, ...BARE_GPT, ffn: [64, 512] },
      { ...small, mlp: 'gelu', linearBias: false, scaledScores: false, dropout: true },
      { ...small, blockOnly: true, vocab: 0 },
    ] satisfies GptOptions[];
    for (const o of variants) {
      const p = plan(o, { tp: 1 }, true);
      const held = p.layers.reduce((a, l) => a + l.weightParamsHeld + l.biasParamsHeld, 0) + p.otherParams;
      expect(held).toBe(gptParameterCount(o));
    }
  });

  it('AICB reference: h 12288, seq 2048, micro-batch 1, 2-byte dtype, T 8 -> 50,331,648-byte all-reduces', () => {
    const p = plan({ layers: 1, hidden: 12288, heads: 96, seq: 2048, batch: 1, vocab: 51200, fusedQkv: true }, { tp: 8 });
    const block = p.layers.filter((l) => l.layer.name.startsWith('blocks.0.'));
    const sizes = block.flatMap((l) => Object.values(l.collectives).flat()).map((c) => [c.type, c.bytes]);
    expect(sizes).toEqual(Array(4).fill(['ALLREDUCE', 50_331_648]));
  });

  it('AICB reference with --sp: h 5120 -> reduce-scatter of the 20,971,520-byte whole buffer, all-gather of its 1/T shard', () => {
    const p = plan({ layers: 1, hidden: 5120, heads: 40, seq: 2048, batch: 1, vocab: 51200, fusedQkv: true }, { tp: 8, sequenceParallel: true });
    const out = present(p.layers.find((l) => l.layer.name === 'blocks.0.attn.o'), 'blocks.0.attn.o').collectives;
    expect(out.afterFwd).toEqual([{ type: 'REDUCESCATTER', bytes: 20_971_520, group: 'tp', label: 'out' }]);
    expect(out.beforeBwd).toEqual([{ type: 'ALLGATHER', bytes: 20_971_520 / 8, group: 'tp', label: 'outgrad' }]);
    const qkv = present(p.layers.find((l) => l.layer.name === 'blocks.0.attn.qkv'), 'blocks.0.attn.qkv').collectives;
    expect(qkv.beforeFwd).toEqual([{ type: 'ALLGATHER', bytes: 20_971_520 / 8, group: 'tp', label: 'input' }]);
    expect(qkv.afterIg.map((c) => [c.type, c.bytes])).toEqual([['REDUCESCATTER', 20_971_520]]);
    expect(qkv.beforeBwd.map((c) => [c.type, c.bytes])).toEqual([['ALLGATHER', 20_971_520 / 8]]);
    // Learned positions: the word embedding all-reduces its lookup, adds them, scatters to the
    // sequence shard, and all-gathers the gradient's shards in backward (language_model_embedding.py).
    const wte = present(p.layers.find((l) => l.role === 'vocab'), 'the word embedding').collectives;
    expect([wte.afterFwd, wte.beforeBwd]).toEqual([[{ type: 'ALLREDUCE', bytes: 20_971_520, group: 'tp', label: 'out' }], [{ type: 'ALLGATHER', bytes: 20_971_520 / 8, group: 'tp', label: 'outgrad' }]]);
    expect(p.layers.filter((l) => l.role !== 'vocab').flatMap((l) => Object.values(l.collectives).flat()).some((c) => c.type === 'ALLREDUCE' && !c.label.startsWith('loss'))).toBe(false);
    // Rotary (no position table): reduce-scatter of the lookup, the same all-gather backward.
    const rope = plan({ layers: 1, hidden: 5120, heads: 40, seq: 2048, batch: 1, vocab: 51200, fusedQkv: true, rotary: true }, { tp: 8, sequenceParallel: true });
    const ropeWte = present(rope.layers.find((l) => l.role === 'vocab'), 'the word embedding').collectives;
    expect([ropeWte.afterFwd, ropeWte.beforeBwd]).toEqual([[{ type: 'REDUCESCATTER', bytes: 20_971_520, group: 'tp', label: 'out' }], [{ type: 'ALLGATHER', bytes: 20_971_520 / 8, group: 'tp', label: 'outgrad' }]]);
  });

  it('sequence parallelism splits the norms T ways; split activations (softmax, GELU) are 1/T with or without it', () => {
    const o = { ...small, fusedQkv: true };
    const plain = plan(o, { tp: 4 }, true);
    const sp = plan(o, { tp: 4, sequenceParallel: true }, true);
    const elements = (p: ParallelPlan, name: string): number => present(p.layers.find((l) => l.layer.name === name)?.passes.vector, `vector work of ${name}`).elements;
    const full = (name: string): number => present(plain.layers.find((l) => l.layer.name === name)?.layer.vector, `vector work of ${name}`).elements;
    expect(elements(plain, 'blocks.0.ln_1')).toBe(full('blocks.0.ln_1'));
    expect(elements(sp, 'blocks.0.ln_1')).toBe(full('blocks.0.ln_1') / 4);
    expect(elements(plain, 'blocks.0.attn.Softmax')).toBe(full('blocks.0.attn.Softmax') / 4);
    expect(elements(sp, 'blocks.0.attn.Softmax')).toBe(full('blocks.0.attn.Softmax') / 4);
  });

  it('refuses heads that do not split, naming the layer; --tp-plan overrides a role', () => {
    expect(() => plan({ ...small, heads: 6, hidden: 240 }, { tp: 4 })).toThrow(/layer blocks\.0\.attn\.MatMul: attention heads 6 do not split over --tp 4/);
    const p = plan(small, { tp: 4, tpOverrides: parseTpPlan('plan.json', '{ "*mlp.fc": "replicated" }') });
    expect(roleOf(p, 'blocks.0.mlp.fc')).toBe('replicated');
  });
});
