/**
 * Context parallelism in the plan (src/plan/context-parallel.ts): one rank's share of every layer
 * and of the activations under --cp C, from the model's dims: T = b x S / C tokens per rank, the
 * attention products on S/C queries against all S keys (1/C of the TP rank's whole), K/V chunks of
 * b x S/C x (heads / TP) x head dim x 2 (K and V) x dtype; ZeRO sharded over D x C.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gptModel, type GptOptions } from '../../bench/models/gpt-graph.js';
import { buildPlan, type PlanOptions } from '../../src/plan/build.js';
import type { ParallelPlan } from '../../src/plan/types.js';
import { activationBytesPerMicroBatch } from '../../src/memory/activations.js';
import { planMemory } from '../../src/memory/report.js';
import { analyseModel } from '../../src/pipeline.js';

const GPT: GptOptions = { layers: 2, hidden: 64, heads: 4, seq: 16, batch: 2, vocab: 128 };
const file = join(mkdtempSync(join(tmpdir(), 'modtrans-cp-plan-')), 'gpt.onnx');
writeFileSync(file, gptModel(GPT));
const analysed = analyseModel(file, {}, {}, { vectorOps: true });

function plan(world: PlanOptions['world'], extra: Partial<PlanOptions> = {}): ParallelPlan {
  return buildPlan(analysed, { world, batch: { globalBatch: GPT.batch * world.dp, microBatch: GPT.batch, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'fp16', ...extra });
}

describe('--cp 2 with --tp 2: one rank holds b x S / 2 tokens', () => {
  const { hidden: h, heads, seq: S, batch: b } = GPT;
  const d = h / heads;
  const cp = plan({ tp: 2, cp: 2, dp: 1, pp: 1 });
  const byName = (p: ParallelPlan, name: string) => p.layers.find((l) => l.layer.name === name);

  it('every GEMM runs on half the token rows; the attention products on S/2 queries against all S keys', () => {
    expect(byName(cp, 'blocks.0.attn.q')?.passes.fwd).toEqual([{ gemm: { m: (b * S) / 2, n: h / 2, k: h }, count: 1 }]);
    expect(byName(cp, 'blocks.0.mlp.proj')?.passes.fwd).toEqual([{ gemm: { m: (b * S) / 2, n: h, k: (4 * h) / 2 }, count: 1 }]);
    // QK^T per (sample, head): S/2 x S x d, over b x heads / TP products: 1/2 of the TP rank's S x S x d each.
    expect(byName(cp, 'blocks.0.attn.MatMul')?.passes.fwd).toEqual([{ gemm: { m: S / 2, n: S, k: d }, count: (b * heads) / 2 }]);
    // AV: S/2 queries x d, summed over all S keys.
    expect(byName(cp, 'blocks.0.attn.MatMul_1')?.passes.fwd).toEqual([{ gemm: { m: S / 2, n: d, k: S }, count: (b * heads) / 2 }]);
    // The softmax over the rank's b x heads / TP x S/2 x S scores.
    expect(byName(cp, 'blocks.0.attn.Softmax')?.passes.vector?.elements).toBe((b * heads * S * S) / 4);
  });

  it("the TP collectives carry the rank's tokens; the K/V chunk is b x S/2 x heads/TP x d x 2 x 2 bytes", () => {
    expect(byName(cp, 'blocks.0.attn.o')?.collectives.afterFwd).toEqual([{ type: 'ALLREDUCE', bytes: ((b * S) / 2) * h * 2, group: 'tp', label: 'out' }]);
    expect(byName(cp, 'wte')?.collectives.afterFwd).toEqual([{ type: 'ALLREDUCE', bytes: ((b * S) / 2) * h * 2, group: 'tp', label: 'out' }]);
    const a = cp.contextParallel?.attentions ?? [];
    expect(a).toHaveLength(2);
    expect(a[0]?.kvBytes).toBe(b * (S / 2) * (heads / 2) * d * 2 * 2);
    expect(a[0]?.core.map((i) => cp.layers[i]?.layer.name)).toEqual(['blocks.0.attn.MatMul', 'blocks.0.attn.Div', 'blocks.0.attn.Softmax', 'blocks.0.attn.MatMul_1']);
  });

  it('activations per rank are half of the TP rank\'s without CP; ZeRO shards over D x C', () => {
    const tpOnly = plan({ tp: 2, dp: 1, pp: 1 });
    // Every kept tensor here has an even element count: exactly half.
    expect(activationBytesPerMicroBatch(cp, cp.layers)).toBe(activationBytesPerMicroBatch(tpOnly, tpOnly.layers) / 2);
    const zeroCp = planMemory(plan({ tp: 2, cp: 2, dp: 1, pp: 1 }, { zero: 1 }), 'adam').ranks[0];
    const zeroDp = planMemory(plan({ tp: 2, dp: 2, pp: 1 }, { zero: 1 }), 'adam').ranks[0];
    expect(zeroCp?.optimizerBytes).toBe(zeroDp?.optimizerBytes);
    expect(zeroCp?.optimizerBytes).toBeLessThan(planMemory(tpOnly, 'adam').ranks[0]?.optimizerBytes ?? 0);
  });

  it("--overlap-grad-reduce's buckets: max(40 M, 1 M x D x C) elements (Megatron-LM training.py resolve_ddp_bucket_size, over the DP x CP group)", () => {
    // 32 x 2 = 64 ranks reduce together: 64 M elements of fp16 gradients (2 bytes).
    expect(plan({ tp: 1, cp: 2, dp: 32, pp: 1 }, { overlapGradReduce: true }).dpBucketBytes).toBe(64_000_000 * 2);
    expect(plan({ tp: 1, cp: 2, dp: 16, pp: 1 }, { overlapGradReduce: true }).dpBucketBytes).toBe(40_000_000 * 2);
  });

  it('refuses a2a where the heads per TP rank do not divide by C, and a sequence not of 2C chunks', () => {
    expect(() => plan({ tp: 2, cp: 4, dp: 1, pp: 1 }, { cpCommType: 'a2a' })).toThrow(/--cp 4 --cp-comm-type a2a: layer blocks\.0\.attn\.MatMul has 2 attention heads per tensor-parallel rank \(--tp 2\), not divisible by 4/);
    expect(() => plan({ tp: 1, cp: 16, dp: 1, pp: 1 })).toThrow(/--cp 16: the sequence of 16 tokens \(layer blocks\.0\.attn\.MatMul\) does not split into 2 x 16 = 32 chunks/);
  });
});
