/**
 * Invariants (a) parameter conservation and (c) owned norm scales and expert weights
 * (src/plan/invariants.ts), on graphs whose parameters follow from their initializer dims
 * (gptParameterCount, and h per norm scale), with planted defects that must fail loudly.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import type { Layer } from '../../src/layers/types.js';
import { analyseModel, planOf, type AnalysedModel } from '../../src/pipeline.js';
import { checkPlanInvariants } from '../../src/plan/invariants.js';
import type { ParallelPlan } from '../../src/plan/types.js';
import { gptParameterCount, writeGptModel, type GptOptions } from '../../bench/models/gpt-graph.js';
import { buildModel, FLOAT, type TensorSpec } from '../helpers/onnx-builder.js';
import { droppedScaleModel, llamaMlpStack } from '../helpers/invariant-models.js';

/** These figures are the initializers' own: no Megatron vocabulary padding beyond a multiple of T (its own tests: test/plan/vocab-padding.test.ts). */
const NO_VOCAB_PADDING = 1;

const dir = mkdtempSync(join(tmpdir(), 'modtrans-invariants-'));
const gpt: GptOptions = { layers: 4, hidden: 64, heads: 4, seq: 16, batch: 2, vocab: 96 };

function plan(analysed: AnalysedModel, world: { tp: number; pp: number }): ParallelPlan {
  const cycles = (l: { layer: Layer }): number => 1 + l.layer.macs; // balance on MACs: any positive cost will do
  return planOf(analysed, {
    world: { ...world, dp: 1 }, batch: { globalBatch: 2, microBatch: 2, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'fp16', dpBucketMiB: 25, vocabDivisibleBy: NO_VOCAB_PADDING,
    ...(world.pp > 1 ? { layerCycles: cycles } : {}),
  });
}

describe('(a) parameter conservation', () => {
  for (const norm of ['layer', 'rms'] as const) {
    for (const tiedHead of [false, true]) {
      it(`GPT with ${norm} norms${tiedHead ? ', tied head' : ''}: the layers hold gptParameterCount over TP 2 x PP 2, no initializer left over`, () => {
        const o = { ...gpt, norm, tiedHead };
        const analysed = analyseModel(writeGptModel(o), {}, {}, { vectorOps: true });
        const p = plan(analysed, { tp: 2, pp: 2 });
        const report = checkPlanInvariants(p, analysed.inferred, { vectorOps: true });
        expect(report.modelParams).toBe(gptParameterCount(o));
        expect(report.leftOver).toEqual([]);
        expect(p.otherParams).toBe(0);
        // The tied table is on both stages (Megatron-LM's copy): one V x h copy; the LM head's vocabulary divides by T.
        expect(report.stageCopyParams).toBe(tiedHead ? gpt.vocab * gpt.hidden : 0);
        expect(report.planParams).toBe(gptParameterCount(o) + report.stageCopyParams);
        expect(report.summary).toMatch(/^params conserved \(/);
        expect(report.warnings).toEqual([]);
      });
    }
  }

  it("HF LlamaRMSNorm blocks over --pp 2: each norm owns its h scale parameters on its reader's stage, none outside the layers", () => {
    const [h, blocks] = [32, 4];
    const file = join(dir, 'llama-stack.onnx');
    writeFileSync(file, llamaMlpStack(blocks, h));
    const analysed = analyseModel(file, {}, {}, { vectorOps: true });
    const p = plan(analysed, { tp: 1, pp: 2 });
    const norms = p.layers.filter((l) => l.layer.op === 'RMSNormalization');
    expect(norms).toHaveLength(blocks);
    for (const l of norms) {
      expect(l.weightParamsHeld).toBe(h);
      const reader = p.layers.find((r) => r.layer.activationInputs.includes(l.layer.output));
      expect(l.stage).toBe(reader?.stage);
    }
    expect(new Set(norms.map((l) => l.stage))).toEqual(new Set([0, 1]));
    expect(p.otherParams).toBe(0);
    const report = checkPlanInvariants(p, analysed.inferred, { vectorOps: true });
    expect(report.modelParams).toBe(blocks * (h + 2 * h * h));
    expect(report.leftOver).toEqual([]);
  });

  it('a norm shift two norms share (torch merges equal initializers) is counted once per stage', () => {
    const h = 32;
    const w = (name: string): TensorSpec => ({ name, dtype: FLOAT, dims: [h], external: { location: 'w.bin' } });
    const file = join(dir, 'shared-bias.onnx');
    writeFileSync(file, buildModel({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 8, h] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [2, 8, h] }],
      initializers: [w('ln1.weight'), w('ln2.weight'), w('shared.bias'), { name: 'fc.weight', dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } }],
      nodes: [
        { op: 'LayerNormalization', inputs: ['x', 'ln1.weight', 'shared.bias'], outputs: ['a'], attrs: { axis: -1 } },
        { op: 'MatMul', inputs: ['a', 'fc.weight'], outputs: ['b'] },
        { op: 'LayerNormalization', inputs: ['b', 'ln2.weight', 'shared.bias'], outputs: ['y'], attrs: { axis: -1 } },
      ],
    }, 17));
    const analysed = analyseModel(file, {}, {}, { vectorOps: true });
    const p = plan(analysed, { tp: 1, pp: 1 });
    expect(p.layers.reduce((a, l) => a + l.biasParamsHeld, 0)).toBe(h);
    expect(checkPlanInvariants(p, analysed.inferred, { vectorOps: true }).modelParams).toBe(3 * h + h * h);
  });

  it('planted: a layer share counted twice is an error naming the layer', () => {
    const analysed = analyseModel(writeGptModel(gpt), {}, {}, { vectorOps: true });
    const p = plan(analysed, { tp: 2, pp: 1 });
    const i = p.layers.findIndex((l) => l.role === 'row');
    const bad = { ...p, layers: p.layers.map((l, j) => (j === i ? { ...l, weightParamsHeld: 2 * l.weightParamsHeld } : l)) };
    expect(() => checkPlanInvariants(bad, analysed.inferred, { vectorOps: true })).toThrow(new RegExp(`layer ${p.layers[i]?.layer.name} \\(row\\) holds .* counted twice`));
  });

  it('initializers outside every layer are named in a warning (a buffer exported as an initializer)', () => {
    const h = 16;
    const file = join(dir, 'buffer.onnx');
    writeFileSync(file, buildModel({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, h] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [2, h] }],
      initializers: [{ name: 'fc.weight', dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } }, { name: 'unused.buffer', dtype: FLOAT, dims: [4, h], external: { location: 'w.bin' } }],
      nodes: [{ op: 'MatMul', inputs: ['x', 'fc.weight'], outputs: ['y'] }],
    }, 17));
    const analysed = analyseModel(file, {}, {}, { vectorOps: true });
    const report = checkPlanInvariants(plan(analysed, { tp: 1, pp: 1 }), analysed.inferred, { vectorOps: true });
    expect(report.leftOver).toEqual([{ name: 'unused.buffer', elements: 4 * h, use: 'other' }]);
    expect(report.warnings).toEqual([`1 initializer outside every layer, ${4 * h} parameters counted as replicated parameters outside the layers: 'unused.buffer' (${4 * h})`]);
    expect(report.summary).toMatch(/^params conserved but 64 outside layers \(1 initializer\)/);
  });
});

describe('(c) norm scales and expert weights owned by a layer', () => {
  it('planted: a norm layer that lost its scale fails, naming the scale', () => {
    const analysed = analyseModel(writeGptModel({ ...gpt, norm: 'rms' }), {}, {}, { vectorOps: true });
    const layers = analysed.layers.map((l) => (l.name === 'blocks.0.ln_1' ? { ...l, weightTensors: [], weightParams: 0, tensorParams: new Map() } : l));
    expect(layers.filter((l) => l.weightParams === 0 && l.op === 'RMSNormalization')).toHaveLength(1);
    const dropped = { ...analysed, layers };
    const p = plan(dropped, { tp: 1, pp: 1 });
    expect(p.otherParams).toBe(gpt.hidden);
    expect(() => checkPlanInvariants(p, dropped.inferred, { vectorOps: true })).toThrow(InputError);
    expect(() => checkPlanInvariants(p, dropped.inferred, { vectorOps: true })).toThrow(/norm parameter 'blocks\.0\.ln_1\.weight' \(64\) is owned by no layer/);
  });

  it('a norm whose normalised value is read elsewhere: its scale is owned by no layer, an error naming it', () => {
    const file = join(dir, 'dropped.onnx');
    writeFileSync(file, droppedScaleModel(32));
    const analysed = analyseModel(file, {}, {}, { vectorOps: true });
    expect(() => checkPlanInvariants(plan(analysed, { tp: 1, pp: 1 }), analysed.inferred, { vectorOps: true })).toThrow(/norm parameter 'ln\.weight' \(32\) is owned by no layer: modtrans does not recognise/);
  });

  it('--vector-ops off: norms are no layers by choice, so their parameters are a named warning', () => {
    const analysed = analyseModel(writeGptModel({ ...gpt, norm: 'rms' }), {}, {}, { vectorOps: false });
    const report = checkPlanInvariants(plan(analysed, { tp: 1, pp: 2 }), analysed.inferred, { vectorOps: false });
    expect(report.leftOver.map((t) => t.use)).toEqual(Array(2 * gpt.layers + 1).fill('norm-parameter'));
    expect(report.warnings).toHaveLength(1);
    expect(report.warnings[0]).toMatch(/^norm parameters 'blocks\.0\.ln_1\.weight' \(64\), .* and 5 more are owned by no layer \(--vector-ops off\): held by the last stage \(stage 1\)/);
  });

  it('a stacked expert weight [E, h, f] of which a Gather selects one expert, owned by no layer: an error naming it', () => {
    const [e, h, f] = [4, 16, 32];
    const file = join(dir, 'experts.onnx');
    writeFileSync(file, buildModel({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [8, h] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [8, f] }],
      initializers: [{ name: 'experts.w1', dtype: FLOAT, dims: [e, h, f], external: { location: 'w.bin' } }, { name: 'expert_id', dtype: 7, dims: [], values: [2] }],
      nodes: [
        // Gather is no parameter-preserving view: the MatMul's weight operand is not traced to the initializer.
        { op: 'Gather', inputs: ['experts.w1', 'expert_id'], outputs: ['w'], attrs: { axis: 0 } },
        { op: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] },
      ],
    }, 17));
    const analysed = analyseModel(file, {}, {}, { vectorOps: true });
    expect(() => checkPlanInvariants(plan(analysed, { tp: 1, pp: 1 }), analysed.inferred, { vectorOps: true })).toThrow(/GEMM weight 'experts\.w1' \(2,048\) is selected from a stacked tensor \(an expert weight\) but owned by no layer/);
  });
});
