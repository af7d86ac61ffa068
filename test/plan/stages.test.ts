/**
 * Pipeline stages: cuts on block boundaries balanced on costed time (not layer counts), the
 * --pp-stages override, parameters per stage, and which layers recompute. Expected cuts follow
 * from the MACs of the test's own model (the ideal cost model's cycles are ceil(MACs / PEs)).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProfile } from '../../src/cli/options.js';
import { planRequestOf } from '../../src/cli/plan-request.js';
import { at, InputError } from '../../src/errors.js';
import { analyseModel, createCostModel, planOf, type AnalysedModel } from '../../src/pipeline.js';
import type { PlanOptions } from '../../src/plan/build.js';
import { heldParams } from '../../src/plan/held-params.js';
import { modelPath, truth } from '../helpers/models.js';
import { BARE_GPT, gptParameterCount, writeGptModel, type GptOptions } from '../../bench/models/gpt-graph.js';

/** These figures are the initializers' own: no Megatron vocabulary padding beyond a multiple of T (its own tests: test/plan/vocab-padding.test.ts). */
const NO_VOCAB_PADDING = 1;

const ideal = await createCostModel(await loadProfile('tpu-256'), 'ideal');
const base = (pp: number, extra: Partial<PlanOptions> = {}): PlanOptions => ({
  world: { tp: 1, dp: 1, pp }, batch: { globalBatch: 4, microBatch: 1, microBatches: 4 }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25, pipelineSplit: 'balanced', vocabDivisibleBy: NO_VOCAB_PADDING, ...extra,
});
const stageNames = (a: AnalysedModel, pp: number, extra: Partial<PlanOptions> = {}): string[][] => {
  const plan = planOf(a, base(pp, extra), ideal);
  return plan.pipeline.stages.map((s) => s.layers.map((i) => at(plan.layers, i).layer.name));
};

// Block 0's MLP (2 x 32 x 64 x 2048 MACs) outweighs the other three blocks together.
const heavy: GptOptions = { ...BARE_GPT, layers: 4, hidden: 64, heads: 4, seq: 32, batch: 1, vocab: 256, ffn: [2048, 64, 64, 64] };
const heavyFile = writeGptModel(heavy);

describe("Megatron-LM's even split (the default)", () => {
  const a = analyseModel(heavyFile, {}, {}, { vectorOps: true });
  it('the same number of blocks per stage whatever their cost: 2 / 2 on 4 blocks, 1 each on --pp 4 (balancing would give 1 / 3)', () => {
    const firstOfStage = (pp: number) => stageNames(a, pp, { pipelineSplit: 'even' }).map((names) => names.find((n) => n.startsWith('blocks.'))?.replace(/^(blocks\.\d+)\..*/, '$1'));
    expect(firstOfStage(2)).toEqual(['blocks.0', 'blocks.2']);
    expect(firstOfStage(4)).toEqual(['blocks.0', 'blocks.1', 'blocks.2', 'blocks.3']);
    expect(stageNames(a, 2)[1]?.[0]).toBe('blocks.1.attn.q');
    // Interleaved: 2 stages x 2 chunks, one block per chunk.
    const plan = planOf(a, base(2, { pipelineSplit: 'even', pipelineSchedule: 'interleaved', virtualStages: 2 }), ideal);
    expect(plan.pipeline.partition).toBe('1 blocks per part, as Megatron-LM splits the layers');
  });

  it('blocks that do not divide are an error naming the sizes that do', () => {
    expect(() => planOf(a, base(3, { pipelineSplit: 'even' }), ideal)).toThrow(new InputError("--pp 3: the model's 4 transformer blocks do not split evenly (Megatron-LM: the layers must divide by the pipeline size); --pp 2, 4 split them evenly, or --pp-split balanced cuts by costed time"));
  });
});

describe('balanced stages', () => {
  it('cut after the heavy first block (not after two blocks, as a layer count would): its residual add closes stage 0', () => {
    const stages = stageNames(analyseModel(heavyFile, {}, {}, { vectorOps: true }), 2);
    expect(stages[0]?.[0]).toBe('wte');
    expect(stages[0]?.[stages[0]?.length - 1]).toBe('blocks.0.Add_1');
    expect(stages[1]?.[0]).toBe('blocks.1.attn.q');
    expect(stages[1]?.[stages[1]?.length - 1]).toBe('lm_head');
  });

  it('GEMM-only lowering: the cut follows the MLP down projection', () => {
    const stages = stageNames(analyseModel(heavyFile), 2);
    expect(stages[0]?.slice(-1)).toEqual(['blocks.0.mlp.proj']);
  });

  it('four stages on four blocks: one block each, the embedding with the first, the head with the last', () => {
    const stages = stageNames(analyseModel(heavyFile, {}, {}, { vectorOps: true }), 4);
    expect(stages.map((s) => [s[0], s[s.length - 1]])).toEqual([['wte', 'blocks.0.Add_1'], ['blocks.1.attn.q', 'blocks.1.Add_1'], ['blocks.2.attn.q', 'blocks.2.Add_1'], ['blocks.3.attn.q', 'lm_head']]);
  });

  it('more stages than blocks: one clear error naming the largest P (the four blocks)', () => {
    expect(() => stageNames(analyseModel(heavyFile), 5)).toThrow(InputError);
    expect(() => stageNames(analyseModel(heavyFile), 5)).toThrow(/^--pp 5 stages: the model cuts into at most 4 parts at its block boundaries; the largest --pp is 4$/);
  });

  it('interleaved, V = 2 on 2 stages: stage s holds model chunks s and s + 2', () => {
    const a = analyseModel(heavyFile, {}, {}, { vectorOps: true });
    const plan = planOf(a, base(2, { pipelineSchedule: 'interleaved', virtualStages: 2 }), ideal);
    const first = (c: number[]): string => at(plan.layers, at(c, 0)).layer.name;
    expect(plan.pipeline.stages.map((s) => s.chunks.map(first))).toEqual([['wte', 'blocks.2.attn.q'], ['blocks.1.attn.q', 'blocks.3.attn.q']]);
  });

  it('interleaved needs micro-batches divisible by P (as Megatron-LM)', () => {
    const a = analyseModel(heavyFile);
    expect(() => planOf(a, base(2, { pipelineSchedule: 'interleaved', virtualStages: 2, batch: { globalBatch: 3, microBatch: 1, microBatches: 3 } }), ideal)).toThrow(/3 micro-batches per step is not a multiple of --pp 2/);
  });
});

describe('--pp-stages', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-ppstages-'));
  const a = analyseModel(heavyFile);
  const names = a.layers.map((l) => l.name);
  const cut = names.indexOf('blocks.2.attn.q');

  it('the file overrides the balanced cut', () => {
    const file = join(dir, 'stages.json');
    writeFileSync(file, JSON.stringify([names.slice(0, cut), names.slice(cut)]));
    const request = planRequestOf({ pp: 2, ppStages: file, dtype: 'fp32', params: 'all' });
    const plan = planOf(a, { ...request, batch: { globalBatch: 2, microBatch: 1, microBatches: 2 } }, ideal);
    expect(plan.pipeline.stages.map((s) => s.layers.length)).toEqual([cut, names.length - cut]);
    expect(plan.pipeline.partition).toContain(file);
  });

  it('layers out of order, missing or unknown: one line naming the file', () => {
    const bad = (content: unknown): string => {
      const file = join(dir, `bad${Math.random()}.json`);
      writeFileSync(file, JSON.stringify(content));
      return file;
    };
    const plan = (file: string) => planOf(a, { ...planRequestOf({ pp: 2, ppStages: file, dtype: 'fp32', params: 'all' }), batch: { globalBatch: 2, microBatch: 1, microBatches: 2 } }, ideal);
    expect(() => plan(bad([names.slice(cut), names.slice(0, cut)]))).toThrow(/out of place/);
    expect(() => plan(bad([names.slice(0, cut), names.slice(cut, -1)]))).toThrow(/'lm_head' is in no stage/);
    expect(() => plan(bad([['nope'], names]))).toThrow(/no layer named 'nope'/);
    expect(() => plan(bad([names]))).toThrow(/1 stages listed, the plan has 2/);
  });
});

describe('parameters per stage', () => {
  it('gpt2_small_like on 3 stages: the stages hold every initializer element once', () => {
    const a = analyseModel(modelPath('gpt2_small_like'), {}, {}, { vectorOps: true });
    const plan = planOf(a, base(3), ideal);
    const total = Object.values(truth('gpt2_small_like').initializers).reduce((s, i) => s + i.numel, 0);
    expect([0, 1, 2].reduce((s, p) => s + heldParams(plan, p), 0)).toBe(total);
    expect(plan.pipeline.stages.every((s) => s.layers.length > 0)).toBe(true);
  });

  it('the test model on 4 stages: parameters from its dims', () => {
    const plan = planOf(analyseModel(heavyFile), base(4), ideal);
    expect([0, 1, 2, 3].reduce((s, p) => s + heldParams(plan, p), 0)).toBe(gptParameterCount(heavy));
  });
});

describe('--recompute', () => {
  const a = analyseModel(heavyFile, {}, {}, { vectorOps: true });
  it('full: the transformer layers, as Megatron-LM checkpoints them (not the embeddings, ln_f, the head); selective: the attention core (both attention products and the softmax between them)', () => {
    const full = planOf(a, base(1, { recompute: 'full' }));
    expect(full.layers.filter((l) => !l.recompute).map((l) => l.layer.name.replace(/\..*/, ''))).toEqual(expect.arrayContaining(['lm_head']));
    expect(full.layers.filter((l) => !l.recompute).every((l) => !l.layer.name.startsWith('blocks.'))).toBe(true);
    expect(full.layers.filter((l) => l.layer.name.startsWith('blocks.')).every((l) => l.recompute)).toBe(true);
    const selective = planOf(a, base(1, { recompute: 'selective' }));
    expect(selective.layers.filter((l) => l.recompute).map((l) => l.layer.name)).toEqual(
      [0, 1, 2, 3].flatMap((b) => [`blocks.${b}.attn.MatMul`, `blocks.${b}.attn.Softmax`, `blocks.${b}.attn.MatMul_1`]),
    );
    expect(planOf(a, base(1)).layers.some((l) => l.recompute)).toBe(false);
  });
});

describe('pipeline options', () => {
  it('--vpp needs the interleaved schedule; the text format has no transfers', async () => {
    expect(() => planRequestOf({ pp: 2, vpp: 2, dtype: 'fp32', params: 'all' })).toThrow(/--vpp 2 needs --pp-schedule interleaved/);
    expect(() => planRequestOf({ pp: 1, ppSchedule: 'gpipe', dtype: 'fp32', params: 'all' })).toThrow(/needs --pp 2 or more/);
    const { runTranslate } = await import('../../src/cli/translate.js');
    await expect(runTranslate(heavyFile, { pp: 2, dtype: 'fp32', params: 'all', hardware: 'tpu-256', format: 'text' })).rejects.toThrow(/--pp 2: pipeline stages need --format chakra/);
  });
});

describe("Megatron-LM's uneven pipeline split: --decoder-first/last-pipeline-num-layers", () => {
  // Eight blocks; Megatron's get_transformer_layer_offset gives the first / last stage the blocks
  // asked for and the other stages the rest evenly.
  const eight = analyseModel(writeGptModel({ ...BARE_GPT, layers: 8, hidden: 32, heads: 4, seq: 8, batch: 1, vocab: 64 }));
  const blocksPerStage = (pp: number, extra: Partial<PlanOptions>): number[] => {
    const plan = planOf(eight, base(pp, { pipelineSplit: 'even', ...extra }), ideal);
    return plan.pipeline.stages.map((s) => new Set(s.layers.map((i) => /^blocks\.(\d+)\./.exec(at(plan.layers, i).layer.name)?.[1]).filter((b) => b !== undefined)).size);
  };

  it('first 2 of 3 stages: 2 / 3 / 3; first and last 1 of 4: 1 / 3 / 3 / 1; last 4 of 2: 4 / 4', () => {
    expect(blocksPerStage(3, { firstStageBlocks: 2 })).toEqual([2, 3, 3]);
    expect(blocksPerStage(4, { firstStageBlocks: 1, lastStageBlocks: 1 })).toEqual([1, 3, 3, 1]);
    expect(blocksPerStage(2, { lastStageBlocks: 4 })).toEqual([4, 4]);
  });

  it('refuses blocks the other stages cannot split evenly, and the flags with a balanced split, in one line (exit 2)', async () => {
    expect(() => planOf(eight, base(3, { pipelineSplit: 'even', firstStageBlocks: 3 }), ideal)).toThrow(new InputError("--decoder-first-pipeline-num-layers 3 with --pp 3: the model's 8 transformer blocks leave 5 for 2 other stages, which must split them evenly (Megatron-LM)"));
    expect(() => planOf(eight, base(2, { pipelineSplit: 'balanced', firstStageBlocks: 2 }), ideal)).toThrow(/apply to a transformer with --pp-split even/);
    const { runCliBatch } = await import('../helpers/cli-batch.js');
    const [ok, bad] = await runCliBatch([
      { args: ['inspect', 'gpt2_small_like', '--pp', '3', '--decoder-first-pipeline-num-layers', '2', '--decoder-last-pipeline-num-layers', '2'], cwd: process.cwd() },
      { args: ['inspect', 'gpt2_small_like', '--pp', '3', '--decoder-first-pipeline-num-layers', '5'], cwd: process.cwd() },
    ]);
    expect([ok?.status, bad?.status]).toEqual([0, 2]);
    expect(bad?.stderr).toBe("modtrans: --decoder-first-pipeline-num-layers 5 with --pp 3: the model's 12 transformer blocks leave 7 for 2 other stages, which must split them evenly (Megatron-LM)\n");
  });
});
