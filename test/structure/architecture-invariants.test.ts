/**
 * On the architecture exports of test/helpers/arch: the roles do not depend on which unary
 * nonlinearity an MLP uses; every initializer is held once (parameter conservation against the
 * builders' initializer dims); the encoder-decoder's pipeline cut falls between the stacks; and
 * the command's exit codes (2 for the refused plans, one line naming the layer or value).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundaryBytes, partsOf } from '../../src/schedule/pipeline-transfers.js';
import { describe, expect, it } from 'vitest';
import { at } from '../../src/errors.js';
import { buildPlan, type PlanOptions } from '../../src/plan/build.js';
import type { ParallelPlan } from '../../src/plan/types.js';
import { analyseBuilt, type Analysed } from '../helpers/arch/analyse.js';
import { bertModel } from '../helpers/arch/bert.js';
import { llamaModel, type BuiltModel, type LlamaOptions } from '../helpers/arch/llama.js';
import { mixtralModel } from '../helpers/arch/mixtral.js';
import { falconModel, gptjModel, neoxModel } from '../helpers/arch/parallel.js';
import { t5Model } from '../helpers/arch/t5.js';
import type { UnaryActivation } from '../helpers/arch/torch-graph.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { ROOT } from '../helpers/models.js';

/** These figures are the initializers' own: no Megatron vocabulary padding beyond a multiple of T (its own tests: test/plan/vocab-padding.test.ts). */
const NO_VOCAB_PADDING = 1;

const base = { layers: 2, hidden: 64, heads: 8, seq: 16, batch: 2, vocab: 100 };
const llama: LlamaOptions = { ...base, kvHeads: 2, ffn: 96 };

function plan(a: Analysed, tp: number, extra: Partial<PlanOptions> = {}): ParallelPlan {
  return buildPlan(a, {
    world: { tp, dp: 1, pp: 1 }, batch: { globalBatch: base.batch, microBatch: base.batch, microBatches: 1 },
    sequenceParallel: false, zero: 0, dtype: 'fp16', dpBucketMiB: 25, vocabDivisibleBy: NO_VOCAB_PADDING, layerCycles: (l) => l.layer.gemm.fwd.m * l.layer.gemm.fwd.k * l.layer.gemm.fwd.n * l.layer.gemmCount + 1, ...extra,
  });
}

/** Roles of the GEMM and embedding layers by name (vector layers differ with the activation's op count). */
const gemmRoles = (p: ParallelPlan) => p.layers.filter((l) => l.layer.kind !== 'vector').map((l) => `${l.layer.name}:${l.role}`);

const ACTIVATIONS: readonly UnaryActivation[] = ['Selu', 'Elu', 'Softplus', 'Mish', 'Tanh', 'Sigmoid', 'LeakyRelu'];

describe('the MLP activation is any unary nonlinearity: the roles stay', () => {
  it.each([
    ['GPT-NeoX (dense MLP)', (activation?: UnaryActivation) => neoxModel({ ...base, ...(activation ? { activation } : {}) })],
    ['LLaMA (gated MLP)', (activation?: UnaryActivation) => llamaModel({ ...llama, ...(activation ? { activation } : {}) })],
    ['BERT (post-norm)', (activation?: UnaryActivation) => bertModel({ ...base, labels: 3, ...(activation ? { activation } : {}) })],
    ['Mixtral (experts)', (activation?: UnaryActivation) => mixtralModel({ ...llama, experts: 4, topK: 2, ...(activation ? { activation } : {}) })],
  ] as const)('%s', (_, build) => {
    const reference = gemmRoles(plan(analyseBuilt(build()), 2));
    expect(reference.filter((r) => r.endsWith(':row')).length).toBeGreaterThan(0);
    for (const activation of ACTIVATIONS) expect(gemmRoles(plan(analyseBuilt(build(activation)), 2)), activation).toEqual(reference);
  });
});

describe('parameter conservation against the initializers', () => {
  const total = (m: Map<string, number>) => [...m.values()].reduce((s, x) => s + x, 0);
  it.each([
    ['GPT-NeoX', () => neoxModel(base), true],
    ['GPT-J', () => gptjModel(base), true],
    ['Falcon', () => falconModel(base), true],
    ['BERT', () => bertModel({ ...base, labels: 3 }), true],
    // HF RMSNorm (Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul, Mul) fuses with its scale (layers/fusions.ts).
    ['LLaMA', () => llamaModel(llama), true],
    ['Mixtral', () => mixtralModel({ ...llama, experts: 4, topK: 2 }), true],
    ['Mixtral (index form, shared expert)', () => mixtralModel({ ...llama, experts: 4, topK: 2, dispatch: 'index', shared: { width: 192, gated: true } }), true],
    ['T5', () => t5Model({ ...base, ffn: 128, targetSeq: 8 }), true],
  ] as const)('%s: the layers (T = 1) hold every float initializer once', (_, build: () => BuiltModel, normsOwned) => {
    const built = build();
    const p = plan(analyseBuilt(built), 1);
    const held = p.layers.reduce((s, l) => s + l.weightParamsHeld + l.biasParamsHeld, 0);
    expect(held + p.otherParams).toBe(total(built.params) + total(built.buffers));
    if (normsOwned) expect(p.otherParams).toBe(0);
  });

  it('at --tp 2 the ranks hold the split layers in halves and the replicated ones whole', () => {
    const built = llamaModel(llama);
    const a = analyseBuilt(built);
    const one = plan(a, 1);
    const two = plan(a, 2);
    two.layers.forEach((l, i) => {
      const whole = at(one.layers, i).weightParamsHeld;
      expect(l.weightParamsHeld, l.layer.name).toBe(['column', 'row', 'vocab'].includes(l.role) ? whole / 2 : whole);
    });
  });
});

describe('encoder-decoder pipeline (T5)', () => {
  it('--pp 2 puts the encoder on stage 0 and the decoder on stage 1; the cut sends the encoder stream', () => {
    const a = analyseBuilt(t5Model({ ...base, ffn: 128, targetSeq: 8 }));
    const p = plan(a, 1, { world: { tp: 1, dp: 1, pp: 2 } });
    const stageOf = (name: string) => at(p.layers, a.index(name)).stage;
    for (const i of [0, 1]) {
      expect(stageOf(`encoder.block.${i}.layer.1.DenseReluDense.wo`)).toBe(0);
      expect(stageOf(`decoder.block.${i}.layer.0.SelfAttention.q`)).toBe(1);
      expect(stageOf(`decoder.block.${i}.layer.1.EncDecAttention.k`)).toBe(1);
    }
  });

  it('--pp 4 cuts between every block, and the stages carry what later blocks read: the relative position bias, the encoder output', () => {
    const a = analyseBuilt(t5Model({ ...base, ffn: 128, targetSeq: 8 }));
    const p = plan(a, 1, { world: { tp: 1, dp: 1, pp: 4 } });
    // base: batch 2, hidden 64, 8 heads, encoder seq 16, decoder seq 8 (the bias is [batch, heads, q, k] once the mask is added).
    const [b, h, heads, s, t] = [2, 64, 8, 16, 8];
    const sends = (p.pipeline.sends ?? []).map((x) => x.values.map((v) => [v.elements, v.carried]));
    expect(sends).toEqual([
      [[b * s * h, false], [b * heads * s * s, true]], // encoder block 0 | 1: the stream and the encoder's bias
      [[b * s * h, false]], // encoder | decoder: the encoder's last stream (the decoder embeds its own tokens after it)
      [[b * t * h, false], [b * heads * t * t, true], [b * s * h, true]], // decoder block 0 | 1: the stream, the decoder's bias, the encoder output
    ]);
    const parts = partsOf(p);
    const e = p.elementBytes;
    expect([0, 1, 2].map((g) => boundaryBytes(p, parts, g))).toEqual([(b * s * h + b * heads * s * s) * e, b * s * h * e, (b * t * h + b * heads * t * t + b * s * h) * e]);
  });

  it('--sp splits the carried hidden states by sequence like the stream (Megatron-LM sends the sequence shard); the position bias goes whole', () => {
    const a = analyseBuilt(t5Model({ ...base, ffn: 128, targetSeq: 8 }));
    const p = plan(a, 2, { world: { tp: 2, dp: 1, pp: 4 }, sequenceParallel: true });
    const [b, h, heads, s, t, tp] = [2, 64, 8, 16, 8, 2];
    expect((p.pipeline.sends ?? []).map((x) => x.values.map((v) => [v.carried, v.hidden]))).toEqual([
      [[false, true], [true, false]],
      [[false, true]],
      [[false, true], [true, false], [true, true]],
    ]);
    const parts = partsOf(p);
    const e = p.elementBytes;
    expect([0, 1, 2].map((g) => boundaryBytes(p, parts, g))).toEqual([(b * s * h / tp + b * heads * s * s) * e, (b * s * h / tp) * e, (b * t * h / tp + b * heads * t * t + b * s * h / tp) * e]);
  });

  it('a cut inside a block is refused: the MLP hidden state crosses it besides the stream', () => {
    const a = analyseBuilt(t5Model({ ...base, ffn: 128, targetSeq: 8 }));
    const cut = a.index('encoder.block.0.layer.1.DenseReluDense.wo');
    const text = JSON.stringify([a.layers.slice(0, cut).map((l) => l.name), a.layers.slice(cut).map((l) => l.name)]);
    expect(() => plan(a, 1, { world: { tp: 1, dp: 1, pp: 2 }, stagesFile: { file: 'stages.json', text } })).toThrow(/stages\.json: the pipeline cut before layer 'encoder\.block\.0\.layer\.1\.DenseReluDense\.wo' does not close/);
  });
});

describe('the command refuses the plans Megatron-LM refuses (exit 2, one line)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-arch-cli-'));
  const file = (name: string, built: BuiltModel): string => {
    const path = join(dir, name);
    writeFileSync(path, built.bytes);
    return path;
  };
  const gqa = file('llama-gqa.onnx', llamaModel(llama));
  const falcon = file('falcon.onnx', falconModel(base));

  it('inspect and translate: --tp 4 on 2 KV heads and --tp 2 on multi-query attention exit 2; --tp 2 on 2 KV heads exits 0', async () => {
    const [gqa4, mqa2, gqa2] = await runCliBatch([
      { args: ['inspect', gqa, '--tp', '4'], cwd: dir },
      { args: ['translate', falcon, '--tp', '2', '-o', join(dir, 'falcon.txt')], cwd: dir },
      { args: ['translate', gqa, '--tp', '2', '-o', join(dir, 'gqa.txt')], cwd: dir },
    ]);
    expect(gqa4?.status).toBe(2);
    expect(gqa4?.stderr.trim().split('\n')).toHaveLength(1);
    expect(gqa4?.stderr).toMatch(/model\.layers\.0\.self_attn\.k_proj: 2 K\/V heads .*; --tp 2 splits every layer of this model/);
    expect(mqa2?.status).toBe(2);
    expect(mqa2?.stderr).toMatch(/transformer\.h\.0\.self_attention\.query_key_value: multi-query attention/);
    expect(existsSync(join(dir, 'falcon.txt'))).toBe(false);
    expect(gqa2?.status, gqa2?.stderr).toBe(0);
  });

  it("HF Mixtral's index form needs no --dim: each expert's tokens follow the batch (T x k / E), the structure says routed", async () => {
    const moe = file('mixtral-index.onnx', mixtralModel({ ...llama, experts: 4, topK: 2, dispatch: 'index', shared: { width: 192 } }));
    const report = join(dir, 'moe.csv');
    const [structure, translate] = await runCliBatch([
      { args: ['inspect', moe, '--structure', '--format', 'json'], cwd: dir },
      { args: ['translate', moe, '--tp', '2', '--report', report, '-o', join(dir, 'moe.txt')], cwd: dir },
    ]);
    expect(structure?.status, structure?.stderr).toBe(0);
    const mlps = (JSON.parse(structure?.stdout ?? '{}') as { blocks: { mlp: { kind: string; dispatch?: string; experts?: number; topK?: number; shared?: string[] } }[] }).blocks.map((b) => b.mlp);
    expect(mlps.map((m) => [m.dispatch, m.experts, m.topK, m.shared])).toEqual([0, 1].map((i) => ['routed', 4, 2, [`model.layers.${i}.block_sparse_moe.shared_expert.down_proj`]]));
    expect(translate?.status, translate?.stderr).toBe(0);
    // Uniform routing: batch 2 x seq 16 = 32 tokens, top-2 of 4 experts: 16 rows per expert.
    const rows = readFileSync(report, 'utf8').trim().split('\n').map((l) => l.split(','));
    const header = rows[0] ?? [];
    const w1 = rows.find((r) => r[0] === 'model.layers.1.block_sparse_moe.experts.3.w1') ?? [];
    expect(w1[header.indexOf('fwd_m')]).toBe(String((2 * 16 * 2) / 4));
  });

  it.skipIf(!existsSync(join(ROOT, 'dist', 'cli', 'main.cjs')))('the built bin exits 2 on --tp 4 over 2 KV heads', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'dist', 'cli', 'main.cjs'), 'translate', gqa, '--tp', '4', '-o', join(dir, 'x.txt')], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/k_proj: 2 K\/V heads/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
