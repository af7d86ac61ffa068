/**
 * The structure stage on the shipped PyTorch exports. Expected values: the initializer dims of
 * their ground-truth fixtures (vocabulary, widths), GPT-2 small's and BERT-base's published
 * configurations (12 layers, 12 heads of 64), the shared README (gpt2_small_like: pre-norm blocks;
 * bert_base_like: nn.TransformerEncoder, post-norm, fused in_proj), and Megatron-LM's layout rules.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyseModel } from '../../src/pipeline.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { modelPath, truth } from '../helpers/models.js';

describe('structure of the shipped exports', () => {
  it('gpt2_small_like: 12 pre-norm decoder blocks, 12 heads of 64, dense MLPs, word and position embeddings, an untied LM head', () => {
    const dims = truth('gpt2_small_like').initializers;
    const a = analyseModel(modelPath('gpt2_small_like'), {}, {}, { vectorOps: true });
    const s = a.structure;
    expect(s.transformer).toBe(true);
    expect(s.blocks.map((b) => [b.stack, b.residual])).toEqual(Array(12).fill(['decoder', 'pre-norm']));
    for (const at of s.attentions) expect([at.heads, at.kvHeads, at.headDim, at.projection, at.kind]).toEqual([12, 12, 64, 'separate', 'self']);
    const [vocab, width] = dims['wte.weight']?.dims ?? [];
    expect([s.embeddings.vocab, s.embeddings.width]).toEqual([vocab, width]);
    expect(s.mlps.map((m) => [m.kind, m.width])).toEqual(Array(12).fill(['dense', dims['blocks.0.fc.bias']?.dims[0]]));
    expect(s.heads.map((h) => [a.layers[h.layer]?.name, h.role])).toEqual([['lm_head', 'lm']]);
    // Each block holds its two norms (ln1, ln2), whose scales are the fixture's [768] initializers.
    for (const b of s.blocks) expect(b.norms).toHaveLength(2);
  });

  it('bert_base_like: 12 post-norm encoder blocks with fused QKV; the post-attention norm ends each block', () => {
    const dims = truth('bert_base_like').initializers;
    const a = analyseModel(modelPath('bert_base_like'), {}, {}, { vectorOps: true });
    const s = a.structure;
    expect(s.blocks.map((b) => [b.stack, b.residual])).toEqual(Array(12).fill(['encoder', 'post-norm']));
    // in_proj_bias is [3 x 768]: fused Q, K, V of 12 heads x 64.
    expect(dims['encoder.layers.0.self_attn.in_proj_bias']?.dims).toEqual([3 * 12 * 64]);
    for (const at of s.attentions) expect([at.heads, at.kvHeads, at.headDim, at.projection]).toEqual([12, 12, 64, 'qkv']);
    expect(a.layers[s.blocks[0]?.end ?? -1]?.vector?.opClass).toBe('layernorm');
  });

  it('models without attention have no transformer pattern', () => {
    for (const m of ['resnet50', 'lstm_lm']) expect(analyseModel(modelPath(m), {}, {}, { vectorOps: true }).structure.transformer).toBe(false);
  });
});

// The command lines run once, before the tests that read their results.
const cwd = mkdtempSync(join(tmpdir(), 'modtrans-structure-'));
const names = analyseModel(modelPath('gpt2_small_like'), {}, {}, { vectorOps: true }).layers.map((l) => l.name);
// A cut inside block 1's MLP, before its down projection: the GELU's output (its last op, Mul_5) and the residual stream (the attention's residual add, read again by the block's second add) both cross it.
const inside = names.indexOf('blocks.1.proj');
writeFileSync(join(cwd, 'inside.json'), JSON.stringify([names.slice(0, inside), names.slice(inside)]));
const boundary = names.indexOf('blocks.6.ln1');
writeFileSync(join(cwd, 'boundary.json'), JSON.stringify([names.slice(0, boundary), names.slice(boundary)]));
const [table, json, refused, accepted] = await runCliBatch([
  { args: ['inspect', 'gpt2_small_like', '--structure'], cwd },
  { args: ['inspect', 'gpt2_small_like', '--structure', '--format', 'json'], cwd },
  { args: ['inspect', 'gpt2_small_like', '--pp', '2', '--pp-stages', 'inside.json'], cwd },
  { args: ['inspect', 'gpt2_small_like', '--pp', '2', '--pp-stages', 'boundary.json', '--format', 'csv'], cwd },
]);

describe('inspect --structure and cuts that close, on the command line', () => {

  it('prints one row per block, and the same as JSON', () => {
    expect(table?.status).toBe(0);
    expect(table?.stdout.split('\n').filter((l) => /^\d+\s+decoder\s+pre-norm\s+blocks\.\d+\.ln1\s+blocks\.\d+\.Add_1\s/.test(l))).toHaveLength(12);
    expect(table?.stdout).toContain('word embedding wte: vocabulary 50257 x 768');
    const doc = JSON.parse(json?.stdout ?? '{}') as { blocks: { attentions: { heads: number }[] }[] };
    expect(doc.blocks).toHaveLength(12);
    expect(doc.blocks[0]?.attentions[0]?.heads).toBe(12);
  });

  it('refuses a --pp-stages cut inside a block, naming the second value that would cross; takes a block boundary', () => {
    expect(refused?.status).toBe(2);
    expect(refused?.stderr).toMatch(/^modtrans: inside\.json: the pipeline cut before layer 'blocks\.1\.proj' does not close: besides '[^']+' \(written by layer 'blocks\.1\.act\.Mul_5'\), value '[^']+' \(written by layer 'blocks\.1\.Add'\) and read by layer 'blocks\.1\.Add_1' would cross it/);
    expect(accepted?.status).toBe(0);
  });
});
