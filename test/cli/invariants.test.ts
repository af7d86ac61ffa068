/**
 * The plan invariants on every run of translate, inspect and memory: the summary line says when
 * they hold; a planted defect (a norm modtrans cannot fuse, so its scale belongs to no layer)
 * fails the spawned bin with exit 2, naming the scale, and writes nothing.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliBatch, runFirstAsProcess, type CliResult } from '../helpers/cli-batch.js';
import { droppedScaleModel, llamaMlpStack } from '../helpers/invariant-models.js';
import { present } from '../helpers/present.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'dist', 'cli', 'main.cjs');
const dir = mkdtempSync(join(tmpdir(), 'modtrans-invariants-cli-'));
const [h, blocks] = [32, 4];
const good = join(dir, 'good.onnx');
const bad = join(dir, 'bad.onnx');
writeFileSync(good, llamaMlpStack(blocks, h));
writeFileSync(bad, droppedScaleModel(h));
const params = blocks * (h + 2 * h * h); // per block: the norm's scale, up and down

describe('invariants on the command line', () => {
  let runs: CliResult[];
  beforeAll(async () => {
    runs = await runCliBatch([
      { args: ['translate', good, '-o', join(dir, 'good.txt')], cwd: dir },
      // Four micro-batches: a pipeline of one would warn of its bubble.
      { args: ['translate', good, '--pp', '2', '--global-batch', '4', '--micro-batch', '1', '--format', 'chakra', '-o', join(dir, 'good')], cwd: dir },
      { args: ['inspect', good], cwd: dir },
      { args: ['memory', good, '--pp', '2', '--global-batch', '4', '--micro-batch', '1'], cwd: dir },
      { args: ['inspect', good, '--vector-ops', 'off'], cwd: dir },
    ]);
  });

  it('translate, inspect and memory state that parameters are conserved and norm scales owned', () => {
    const [text, chakra, inspect, memory] = runs;
    for (const r of [text, chakra, inspect, memory]) {
      expect(present(r, 'run').status).toBe(0);
      expect(r?.stderr).toContain(`params conserved (${params.toLocaleString('en-US')} over TP ranks and stages); norm scales and expert weights owned`);
      expect(r?.stderr).not.toMatch(/warning/);
    }
    // Invariant (d) on the two --pp 2 runs: their one boundary closes.
    for (const r of [chakra, memory]) expect(r?.stderr).toContain('; pipeline cuts close (1 boundary, one tensor each)');
    for (const r of [text, inspect]) expect(r?.stderr).not.toContain('pipeline cuts close');
  });

  it('--vector-ops off names the norm scales outside every layer in a warning', () => {
    const off = present(runs[4], 'vector-ops off run');
    expect(off.status).toBe(0);
    expect(off.stderr).toContain("modtrans: warning: norm parameters 'blocks.0.norm.weight' (32), 'blocks.1.norm.weight' (32), 'blocks.2.norm.weight' (32), 'blocks.3.norm.weight' (32) are owned by no layer (--vector-ops off): counted as replicated parameters outside the layers");
  });

  it('the planted defect: the bin exits 2 with one line naming the scale, and writes no output', async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm ci does)`);
    const commands = [['translate', bad, '-o', join(dir, 'bad.txt')], ['inspect', bad, '-o', join(dir, 'bad.csv')], ['memory', bad]];
    for (const [i, r] of (await runFirstAsProcess(commands.map((args) => ({ args, cwd: dir })))).entries()) {
      expect(r.status, commands[i]?.[0]).toBe(2);
      expect(r.stderr).toMatch(/^modtrans: .*bad\.onnx: norm parameter 'ln\.weight' \(32\) is owned by no layer: modtrans does not recognise this norm's export form, so its gradient, optimizer state and pipeline stage would be wrong\n$/);
    }
    expect(existsSync(join(dir, 'bad.txt'))).toBe(false);
    expect(existsSync(join(dir, 'bad.csv'))).toBe(false);
  });
});
