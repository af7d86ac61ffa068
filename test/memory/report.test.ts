/**
 * Weights, gradients and optimizer state per rank: bytes per parameter by hand (ZeRO paper,
 * Rajbhandari et al. 2020: mixed-precision Adam keeps fp32 weights, momentum and variance = 12
 * bytes), parameters per rank from gpt2_small_like's initializer dims under Megatron-LM's splits.
 */
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { checkMemoryLimit, memoryReport, optimizerBytesPerParam, type MemoryReport } from '../../src/memory/report.js';
import { analyseModel, planOf } from '../../src/pipeline.js';
import type { TrainingDType, ZeroStage } from '../../src/plan/types.js';
import { modelPath, truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

describe('optimizer bytes per parameter', () => {
  it.each([
    ['adam', 2, 4 + 4 + 4], // fp16/bf16: fp32 master weights, momentum, variance
    ['adam', 4, 4 + 4], // fp32: momentum and variance
    ['momentum', 2, 4 + 4],
    ['momentum', 4, 4],
    ['sgd', 2, 4], // the fp32 master copy alone
    ['sgd', 4, 0],
  ] as const)('%s with %i-byte parameters: %i', (optimizer, paramBytes, expected) => {
    expect(optimizerBytesPerParam(optimizer, paramBytes)).toBe(expected);
  });
});

/** gpt2_small_like's parameters on one of T tensor-parallel ranks, from the initializer dims alone. */
function gpt2ParamsPerRank(tp: number): number {
  // Megatron-LM pads the vocabulary to a multiple of 128 x T (--make-vocab-size-divisible-by 128): each rank holds its 1/T.
  const vocabRows = Math.ceil(50257 / (128 * tp)) * 128;
  let total = 0;
  for (const [name, { dims, numel }] of Object.entries(truth('gpt2_small_like').initializers)) {
    if (name === 'wte.weight') total += vocabRows * present(dims[1], 'wte width'); // vocab-parallel embedding
    else if (name.startsWith('onnx::MatMul')) total += dims[1] === 50257 ? present(dims[0], 'head width') * vocabRows : numel / tp; // LM head; Q K V fc (column) and o proj (row)
    else if (/attn\.[qkv]\.bias|fc\.bias/.test(name)) total += numel / tp; // column biases split with their outputs
    else total += numel; // norms, position embedding, row-parallel biases: replicated
  }
  return total;
}

describe('per-rank memory of gpt2_small_like', () => {
  const analysed = analyseModel(modelPath('gpt2_small_like'), {}, {}, { vectorOps: true });
  const gemmOnly = analyseModel(modelPath('gpt2_small_like'));
  const report = (o: { tp: number; dp: number; zero: ZeroStage; dtype: TrainingDType; vector?: boolean }) => memoryReport(planOf(o.vector === false ? gemmOnly : analysed, {
    world: { tp: o.tp, dp: o.dp, pp: 1 }, batch: { globalBatch: o.dp, microBatch: 1, microBatches: 1 }, sequenceParallel: false, zero: o.zero, dtype: o.dtype, dpBucketMiB: 25,
  }), { optimizer: 'adam' });

  it.each([1, 2, 4])('weights per rank under --tp %i follow the initializer dims', (tp) => {
    const params = gpt2ParamsPerRank(tp);
    for (const vector of [true, false]) {
      const r = report({ tp, dp: 1, zero: 0, dtype: 'fp16', vector });
      expect(r.ranks).toHaveLength(tp);
      for (const rank of r.ranks) {
        expect(rank.weightsBytes).toBe(2 * params);
        expect(rank.gradientsBytes).toBe(2 * params);
        expect(rank.optimizerBytes).toBe(12 * params);
      }
    }
    // Unsplit, they are every initializer of the file, and the 50304 - 50257 rows Megatron pads the embedding and the head with.
    if (tp === 1) expect(params).toBe(Object.values(truth('gpt2_small_like').initializers).reduce((a, i) => a + i.numel, 0) + 2 * (50304 - 50257) * 768);
  });

  it("bf16 with Adam: 2 + 4 + 12 = 18 bytes per parameter, Megatron-LM's figure (fp32 main gradients); 16 with --grad-reduce-in-bf16", () => {
    const params = gpt2ParamsPerRank(2);
    for (const [gradReduce, perParam] of [['megatron', 18], ['param', 16]] as const) {
      const rank = present(memoryReport(planOf(analysed, {
        world: { tp: 2, dp: 1, pp: 1 }, batch: { globalBatch: 1, microBatch: 1, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'bf16', dpBucketMiB: 25, gradReduce,
      }), { optimizer: 'adam' }).ranks[0], 'rank 0');
      expect(rank.weightsBytes + rank.gradientsBytes + rank.optimizerBytes).toBe(perParam * params);
    }
  });

  it.each([
    [0, 1, 1, 1],
    [1, 1, 1, 4],
    [2, 1, 4, 4],
    [3, 4, 4, 4],
  ] as const)('ZeRO-%i shards weights / %i, gradients / %i, optimizer state / %i over D = 4', (zero, weightWays, gradientWays, optimizerWays) => {
    const params = gpt2ParamsPerRank(2);
    for (const dtype of ['fp16', 'fp32'] as const) {
      const bytes = dtype === 'fp16' ? 2 : 4;
      const r = report({ tp: 2, dp: 4, zero, dtype });
      expect(r.ranks).toHaveLength(8);
      const rank = present(r.ranks[5], 'rank 5');
      expect(rank.weightsBytes).toBe(Math.ceil(params / weightWays) * bytes);
      expect(rank.gradientsBytes).toBe(Math.ceil(params / gradientWays) * bytes);
      expect(rank.optimizerBytes).toBe(Math.ceil(params / optimizerWays) * (dtype === 'fp16' ? 12 : 8));
      expect(rank.totalBytes).toBe(rank.weightsBytes + rank.gradientsBytes + rank.optimizerBytes + rank.activationsBytes);
    }
  });

  it('holds activations for the micro-batches in flight', () => {
    const plan = planOf(analysed, { world: { tp: 1, dp: 1, pp: 1 }, batch: { globalBatch: 4, microBatch: 1, microBatches: 4 }, sequenceParallel: false, zero: 0, dtype: 'fp16', dpBucketMiB: 25 });
    const one = present(memoryReport(plan, { optimizer: 'sgd' }).ranks[0], 'rank 0').activationsBytes;
    const three = memoryReport(plan, { optimizer: 'sgd', stages: [{ layers: plan.layers, otherParams: plan.otherParams, microBatchesInFlight: 3 }] }).ranks[0]?.activationsBytes;
    expect(one).toBeGreaterThan(0);
    expect(three).toBe(3 * one);
  });
});

describe('checkMemoryLimit', () => {
  const GIB = 2 ** 30;
  const rank = (r: number, totalBytes: number) => ({ rank: r, stage: r, weightsBytes: totalBytes, gradientsBytes: 0, optimizerBytes: 0, activationsBytes: 0, totalBytes });
  const report: MemoryReport = { ranks: [rank(0, 10 * GIB), rank(1, 30 * GIB), rank(2, 20 * GIB)], peakRank: 1 };

  it('names the peak rank, its total and the limit', () => {
    expect(() => checkMemoryLimit(report, 24)).toThrow(InputError);
    expect(() => checkMemoryLimit(report, 24)).toThrow(/rank 1 \(stage 1\) needs 30\.00 GiB .* over --memory-limit 24 GiB/);
  });

  it('passes at or above the peak', () => {
    expect(() => checkMemoryLimit(report, 30)).not.toThrow();
    expect(() => checkMemoryLimit(report, 80)).not.toThrow();
  });
});

describe('pipeline stages plug in', () => {
  it('each rank takes the layers of its stage and micro-batches in flight (1F1B, P 2, m 4)', async () => {
    const { stageMicroBatchesHeld } = await import('../../src/memory/in-flight.js');
    const { activationBytesPerMicroBatch } = await import('../../src/memory/activations.js');
    const analysed = analyseModel(modelPath('gpt2_small_like'), {}, {}, { vectorOps: true });
    const flat = planOf(analysed, { world: { tp: 1, dp: 1, pp: 1 }, batch: { globalBatch: 4, microBatch: 1, microBatches: 4 }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25 });
    const plan = { ...flat, world: { tp: 1, dp: 2, pp: 2 } };
    const half = flat.layers.length >> 1;
    const parts = [flat.layers.slice(0, half), flat.layers.slice(half)];
    const stages = parts.map((layers, p) => ({ layers, otherParams: 0, microBatchesInFlight: stageMicroBatchesHeld('1f1b', p, 2, 4) }));
    const r = memoryReport(plan, { optimizer: 'sgd', stages });
    expect(r.ranks.map((x) => x.stage)).toEqual([0, 0, 1, 1]); // rank = t + T (d + D p)
    parts.forEach((layers, p) => {
      const params = layers.reduce((a, l) => a + l.weightParamsHeld + l.biasParamsHeld, 0);
      expect(r.ranks[2 * p]?.weightsBytes).toBe(4 * Math.round(params));
      expect(r.ranks[2 * p]?.activationsBytes).toBe((2 - p) * activationBytesPerMicroBatch(plan, layers));
    });
    expect(() => memoryReport(plan, { optimizer: 'sgd' })).toThrow(/1 stage inputs for --pp 2/);
  });
});
