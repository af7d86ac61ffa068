/**
 * `inspect --tp T`'s table shows what its CSV and JSON hold: each layer's role, why, its
 * collectives and one rank's parameters, and a footer with one rank's parameter total. Expected
 * figures follow Megatron-LM's split of a GPT block built with known dims (bench/models/gpt-graph.ts):
 * column layers hold N / T (weights and biases), row layers K / T of their weight and the whole bias,
 * the vocab-parallel embedding and head V / T rows, norms and the position embedding all.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gptParameterCount, writeGptModel, type GptOptions } from '../../bench/models/gpt-graph.js';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { present } from '../helpers/present.js';

const o: GptOptions = { layers: 2, hidden: 64, heads: 4, seq: 16, batch: 1, vocab: 256 };
const T = 4;
const { hidden: h, seq: s, vocab: V, layers: L } = o;
/** Megatron-LM's share of one tensor-parallel rank. */
const perBlock = 2 * (2 * h) + 3 * ((h * h) / T + h / T) + ((h * h) / T + h) + ((h * 4 * h) / T + (4 * h) / T) + ((4 * h * h) / T + h);
// The embedding and the head hold their rows of the vocabulary Megatron pads to a multiple of 128 x T.
const vocabRows = Math.ceil(V / (128 * T)) * 128;
const rankParams = vocabRows * h + s * h + L * perBlock + 2 * h + h * vocabRows;

describe('inspect --tp: the table', () => {
  let table: CliResult;
  let json: CliResult;
  beforeAll(async () => {
    const model = writeGptModel(o);
    const cwd = mkdtempSync(join(tmpdir(), 'modtrans-inspect-tp-'));
    [table, json] = await runCliBatch([
      { args: ['inspect', model, '--tp', String(T)], cwd },
      { args: ['inspect', model, '--tp', String(T), '--format', 'json'], cwd },
    ]) as [CliResult, CliResult];
  }, 60_000);

  const rowOf = (name: string): string => present(table.stdout.split('\n').find((l) => l.startsWith(`${name} `)), `table row ${name}`);

  it("shows each layer's role, the reason and its collectives, as the JSON has them", () => {
    expect(table.status).toBe(0);
    const header = present(table.stdout.split('\n')[0], 'header').split(/\s+/);
    expect(header).toEqual(expect.arrayContaining(['role', 'rank_params', 'rank_collectives', 'role_reason']));
    const layers = JSON.parse(json.stdout).layers as { name: string; role: string; roleReason: string; rank: { collectives: { type: string; bytes: number; group: string }[] } }[];
    const activation = s * o.batch * h * 4;
    for (const [name, where] of [['blocks.0.attn.q', 'after ig'], ['blocks.0.attn.o', 'after fwd'], ['blocks.0.mlp.proj', 'after fwd'], ['wte', 'after fwd']] as const) {
      const row = rowOf(name);
      const l = present(layers.find((x) => x.name === name), name);
      expect(row).toContain(l.roleReason);
      expect(row).toContain(`ALLREDUCE ${activation.toLocaleString('en-US')} B tp ${where}`);
    }
    expect(rowOf('blocks.0.attn.MatMul')).toContain('attention scores QK^T (split by heads)');
  });

  it("gives one rank's parameters per layer and in total, Megatron-LM's split", () => {
    expect(rowOf('blocks.0.attn.o')).toMatch(new RegExp(`\\s${(h * h) / T + h}\\s`));
    expect(rowOf('blocks.0.mlp.fc')).toMatch(new RegExp(`\\s${(h * 4 * h) / T + (4 * h) / T}\\s`));
    // The position embedding (a table looked up by fixed position ids) is a replicated embedding layer: nothing is outside every layer.
    expect(table.stdout).toContain(`params one rank holds (TP ${T}): ${rankParams.toLocaleString('en-US')} (its layer shares, a shared tensor once)`);
    expect(JSON.parse(json.stdout).rankParams).toEqual({ tp: T, stages: [{ stage: 0, params: rankParams }], outsideLayers: 0 });
    // At T = 1 the rank holds the whole model.
    expect(gptParameterCount(o)).toBe(V * h + s * h + L * (4 * h + 4 * (h * h + h) + 8 * h * h + 5 * h) + 2 * h + h * V);
  });
});

describe('inspect --seq (the plan flags translate takes)', () => {
  it("binds the token inputs' sequence dim as --dim does; a conflicting --dim, a fixed export and a model without token inputs exit 2", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'modtrans-inspect-seq-'));
    const [bySeq, byDim, conflict, fixed, none] = await runCliBatch([
      { args: ['inspect', 'bert_base_like_dynamic', '--seq', '64', '--batch', '2', '--format', 'json'], cwd },
      { args: ['inspect', 'bert_base_like_dynamic', '--dim', 'sequence=64', '--batch', '2', '--format', 'json'], cwd },
      { args: ['inspect', 'bert_base_like_dynamic', '--seq', '64', '--dim', 'sequence=32'], cwd },
      { args: ['inspect', 'gpt2_small_like', '--seq', '64'], cwd },
      { args: ['inspect', 'resnet50', '--seq', '64'], cwd },
    ]);
    expect(bySeq?.status, bySeq?.stderr).toBe(0);
    expect(bySeq?.stdout).toBe(byDim?.stdout);
    // Batch 2 x sequence 64: the projections run on 128 token rows.
    expect(bySeq?.stdout).toMatch(/"fwd": \{\s*"m": 128,/);
    expect([conflict?.status, fixed?.status, none?.status]).toEqual([2, 2, 2]);
    expect(conflict?.stderr).toBe("modtrans: --seq 64 and --dim sequence=32 conflict: both bind the sequence dim of input 'input_ids'; give one\n");
    expect(fixed?.stderr).toMatch(/--seq 64: input 'input_ids' has its sequence length fixed at 128 by the export\n$/);
  });
});
