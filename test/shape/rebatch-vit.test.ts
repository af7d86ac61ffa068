/**
 * torchvision's vit_b_16 exported at batch 1 (nn.MultiheadAttention inside), run at --batch 8:
 * every batch-dependent layer does exactly 8 times its batch-1 work, worked from ViT's formulas
 * (Dosovitskiy et al. 2021; torchvision's VisionTransformer): N = 14 x 14 = 196 patches, L = 197
 * tokens with the class token, E = 768, 12 heads of 64, MLP 3072, 1000 classes. And invariant (b):
 * a layer that does not scale fails the run (exit 2) naming the layer and the pinning constant.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { batchScalingOf } from '../../src/layers/batch-scaling.js';
import { analyseModel } from '../../src/pipeline.js';
import { runCliBatch, runFirstAsProcess } from '../helpers/cli-batch.js';
import { buildModel } from '../helpers/onnx-builder.js';
import { VIT_B_16, vitGraph, type VitDims } from '../helpers/vit-export.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-vit-'));
function vitFile(name: string, opset: number, dims: VitDims = VIT_B_16, options: Parameters<typeof vitGraph>[1] = {}): string {
  const path = join(dir, `${name}.onnx`);
  writeFileSync(path, buildModel(vitGraph(dims, options), opset));
  return path;
}

/** The GEMM layers' MACs of vit_b_16 at batch b, in graph order, from the formulas. */
function vitMacs(b: number): number[] {
  const { patch, hidden: E, heads, mlp, classes, layers } = VIT_B_16;
  const N = 196;
  const L = N + 1;
  const hd = E / heads;
  const block = [
    b * L * E * 3 * E, // in_proj: [b L, E] x [E, 3E]
    b * heads * L * L * hd, // scores Q K^T per sample and head
    b * heads * L * hd * L, // context P V
    b * L * E * E, // out_proj
    b * L * E * mlp, // mlp.0
    b * L * mlp * E, // mlp.3
  ];
  return [b * N * E * 3 * patch * patch, ...Array.from({ length: layers }, () => block).flat(), b * E * classes];
}

describe('re-batching torchvision vit_b_16 (static batch-1 export) to --batch 8', () => {
  it.each([13, 14])('opset %i: every GEMM does 8x its batch-1 MACs, from the ViT formulas', (opset) => {
    const path = vitFile(`vit_b_16_op${opset}`, opset);
    const one = analyseModel(path).layers.filter((l) => l.macs > 0);
    const eight = analyseModel(path, { batch: 8 }).layers.filter((l) => l.macs > 0);
    expect(one.map((l) => l.macs)).toEqual(vitMacs(1));
    expect(eight.map((l) => l.macs)).toEqual(vitMacs(8));
    // Attention runs per sample and head: 8 x 12 products of 197 x 197 x 64.
    const scores = eight.filter((l) => l.kind === 'activation-gemm');
    expect(scores.map((l) => [l.gemmCount, l.gemm.fwd.m, l.gemm.fwd.n, l.gemm.fwd.k])).toEqual(Array.from({ length: 12 }, () => [[96, 197, 197, 64], [96, 197, 64, 197]]).flat());
    // The class token's Expand/Concat carries the batch: the head sees 8 rows.
    expect(eight.at(-1)?.gemm.fwd).toEqual({ m: 8, n: 1000, k: 768 });
  });

  it('the batch-scaling check holds on all 74 GEMM layers, and says so', async () => {
    const path = vitFile('vit_b_16_check', 14);
    const bindings = { batch: 8 };
    const analysed = analyseModel(path, bindings);
    expect(batchScalingOf(analysed, bindings)).toEqual({ batch: 8, referenceBatch: 1, layers: 1 + 12 * 6 + 1 });
    const [translate, memory] = await runCliBatch([
      { args: ['translate', path, '--batch', '8', '-o', join(dir, 'vit.txt')], cwd: dir },
      { args: ['memory', path, '--batch', '8'], cwd: dir },
    ]);
    expect(translate?.status).toBe(0);
    expect(translate?.stderr).toContain('x 8 samples (batch scaling checked: 74 layers x8)');
    expect(memory?.status).toBe(0);
    expect(memory?.stderr).toContain('micro-batch 8 (batch scaling checked: 74 layers x8)');
  });
});

describe('invariant (b): a layer whose MACs do not scale with the batch fails the run', () => {
  // Small dims: 4 patches, L = 5, E = 16, 2 heads of 8.
  const tiny: VitDims = { image: 32, patch: 16, layers: 2, heads: 2, hidden: 16, mlp: 32, classes: 10 };

  it('a hand-written view(1, -1, E) folds the batch into the sequence: attention scales x64, named with its constant', () => {
    const path = vitFile('vit_pinned', 14, tiny, { pinnedBatchReshape: true });
    const bindings = { batch: 8 };
    const analysed = analyseModel(path, bindings);
    expect(() => batchScalingOf(analysed, bindings)).toThrow(InputError);
    // The scores compare all 8 x 5 tokens with each other: 2 heads of [40, 40], 64 x batch 1's 2 of [5, 5].
    expect(() => batchScalingOf(analysed, bindings)).toThrow(
      /batch scaling: layer 'encoder\.layers\.encoder_layer_0\.self_attention\.MatMul_1' \(node '[^']+', MatMul\) does not scale with the batch: its output is \[2,40,40\] at batch 8 and \[2,5,5\] at batch 1 \(x64, not x8\): node '\/pin\/Reshape' \(Reshape\) moves the batch with the constant '[^']+' = \[1,-1,16\]/,
    );
  });

  it('the built bin exits 2 with that one line and writes nothing', async () => {
    const path = vitFile('vit_pinned_bin', 14, tiny, { pinnedBatchReshape: true });
    const out = join(dir, 'pinned.txt');
    const commands = [['translate', path, '--batch', '8', '-o', out], ['inspect', path, '--batch', '8'], ['memory', path, '--batch', '8']];
    for (const [i, r] of (await runFirstAsProcess(commands.map((args) => ({ args, cwd: dir })))).entries()) {
      expect(r.status, commands[i]?.[0]).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/batch scaling: layer '.*' .*\(x64, not x8\): node '\/pin\/Reshape' \(Reshape\) moves the batch/);
    }
    expect(existsSync(out)).toBe(false);
  });

  it('at the exported batch there is nothing to check', () => {
    const path = vitFile('vit_pinned_b1', 14, tiny, { pinnedBatchReshape: true });
    expect(batchScalingOf(analyseModel(path), {})).toBeUndefined();
  });
});
