/**
 * The text format's vector layers folded into the GEMM-like layer they follow (`translate`'s
 * default; `--text-vector-layers separate` keeps a line each). ASTRA-sim's reference ResNet-50
 * text workload has its 54 GEMM layers and nothing else; every line of ours must carry a real
 * collective, because Chakra's text converter turns `NONE 0` into a 0-byte all-reduce in DATA mode.
 * Folding moves work between lines, never adds or drops it: each column's total is unchanged.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../../helpers/cli-batch.js';
import { checkWriterRules, parseLikeAstra1, parseLikeChakraConverter, type ParsedLayer } from '../../helpers/astra-parsers.js';
import { fixturePath } from '../../helpers/models.js';
import { present } from '../../helpers/present.js';

const reference = parseLikeAstra1(readFileSync(fixturePath('astra-sim/Resnet50_DataParallel.txt'), 'utf8'));
const resnet = ['translate', 'resnet50', '--hardware', 'tpu-256', '--params', 'weights', '--time-unit', 'cycles'];
const gpt = ['translate', 'gpt2_small_like', '--tp', '2', '--dp', '2', '--hardware', 'tpu-256', '--time-unit', 'cycles'];

describe('text format: vector layers folded into the layer before them', () => {
  let r: CliResult[];
  beforeAll(async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'modtrans-fold-'));
    r = await runCliBatch([
      { args: resnet, cwd },
      { args: [...resnet, '--text-vector-layers', 'separate'], cwd },
      { args: gpt, cwd },
      { args: [...gpt, '--text-vector-layers', 'separate'], cwd },
      { args: ['translate', 'resnet50', '--format', 'chakra', '-o', 'x', '--text-vector-layers', 'separate'], cwd },
      { args: ['translate', 'gpt2_small_like', '--hardware', 'tpu-256', '--time-unit', 'cycles'], cwd },
      { args: ['translate', 'gpt2_small_like', '--hardware', 'tpu-256', '--time-unit', 'cycles', '--text-vector-layers', 'separate'], cwd },
      { args: ['translate', 'resnet50', '--hardware', 'tpu-256', '--params', 'weights', '--time-unit', 'us'], cwd },
      { args: ['translate', 'resnet50', '--hardware', 'tpu-256', '--params', 'weights'], cwd },
    ]);
  }, 60_000);
  const out = (i: number) => present(r[i], `run ${i}`);
  const columnTotal = (layers: ParsedLayer[], k: 'fwdCompute' | 'igCompute' | 'wgCompute' | 'update' | 'wgSize' | 'igSize' | 'fwdSize') => layers.reduce((a, l) => a + l[k], 0);

  it("resnet50: ASTRA-sim's 54 layers, the same weight-gradient all-reduces, no NONE row for the converter", () => {
    expect(out(0).status).toBe(0);
    const folded = parseLikeAstra1(out(0).stdout);
    expect(folded.layers).toHaveLength(reference.layers.length);
    expect(folded.layers.map((l) => l.wgSize).sort((a, b) => a - b)).toEqual(reference.layers.map((l) => l.wgSize).sort((a, b) => a - b));
    expect(folded.layers.every((l) => l.wgType === 'ALLREDUCE' && l.wgSize > 0)).toBe(true);
    expect(checkWriterRules(out(0).stdout)).toEqual([]);
    expect(parseLikeChakraConverter(out(0).stdout).count).toBe(54);
  });

  it('resnet50: each line is its layer plus the vector layers up to the next one; column totals are unchanged', () => {
    const folded = parseLikeAstra1(out(0).stdout).layers;
    const separate = parseLikeAstra1(out(1).stdout).layers;
    expect(separate).toHaveLength(121);
    for (const k of ['fwdCompute', 'update', 'wgSize'] as const) expect(columnTotal(folded, k)).toBe(columnTotal(separate, k));
    // The backward of the vector layers after conv1 (no input gradient: its input is the image) goes into its weight-gradient column.
    expect(columnTotal(folded, 'igCompute') + columnTotal(folded, 'wgCompute')).toBe(columnTotal(separate, 'igCompute') + columnTotal(separate, 'wgCompute'));
    const names = new Set(folded.map((l) => l.name));
    let k = -1;
    const fwd = new Array<number>(folded.length).fill(0);
    for (const l of separate) {
      if (names.has(l.name)) k++;
      fwd[k] = (fwd[k] ?? 0) + l.fwdCompute;
    }
    expect(folded.map((l) => l.fwdCompute)).toEqual(fwd);
    const conv1 = present(separate.slice(0, 3), 'conv1, relu, maxpool');
    expect(present(folded[0], 'conv1').wgCompute).toBe(present(conv1[0], 'conv1').wgCompute + present(conv1[1], 'relu').igCompute + present(conv1[2], 'maxpool').igCompute);
  });

  it('gpt2 under TP 2 x DP 2: the norms\' parameter all-reduces join their layer\'s, collectives keep their totals', () => {
    expect(out(2).status).toBe(0);
    const folded = parseLikeAstra1(out(2).stdout).layers;
    const separate = parseLikeAstra1(out(3).stdout).layers;
    expect(separate.length).toBeGreaterThan(folded.length);
    for (const k of ['fwdCompute', 'update', 'wgSize', 'igSize', 'fwdSize'] as const) expect(columnTotal(folded, k)).toBe(columnTotal(separate, k));
  });

  it('gpt2 data-parallel: a line per weight layer (12 blocks x Q, K, V, o, fc, proj + wte, wpe, lm_head = 75), each with a real all-reduce; the attention products join the layer before them', () => {
    expect(out(5).status).toBe(0);
    const folded = parseLikeAstra1(out(5).stdout).layers;
    expect(folded).toHaveLength(12 * 6 + 3);
    // Chakra's converter turns a NONE 0 weight-gradient column into a 0-byte all-reduce in DATA mode: none is left.
    expect(folded.every((l) => l.wgType === 'ALLREDUCE' && l.wgSize > 0)).toBe(true);
    expect(parseLikeChakraConverter(out(5).stdout).count).toBe(75);
    const separate = parseLikeAstra1(out(6).stdout).layers;
    for (const k of ['fwdCompute', 'update', 'wgSize'] as const) expect(columnTotal(folded, k)).toBe(columnTotal(separate, k));
    // 12 blocks x (QK^T, AV), and the vector layers (separate lines less the 99 GEMM-like ones: 75 weight layers and the 24 products).
    expect(out(5).stderr).toContain(`${separate.length - 99} vector layers and 24 attention products that communicate nothing folded into the GEMM-like layers before them (75 lines;`);
  });

  it("--time-unit us, what Chakra's text converter reads: every compute column is the cycles' at tpu-256's 700 MHz, in whole µs; the ns default says so", () => {
    expect(out(7).status).toBe(0);
    const us = parseLikeAstra1(out(7).stdout).layers;
    const cycles = parseLikeAstra1(out(0).stdout).layers;
    expect(us).toHaveLength(cycles.length);
    for (const k of ['fwdCompute', 'igCompute', 'wgCompute', 'update'] as const) expect(us.map((l) => l[k])).toEqual(cycles.map((l) => Math.round(l[k] / 700)));
    expect(out(8).stderr).toContain("text format: compute in ns, as ASTRA-sim 1.0 reads it; Chakra's text converter reads the columns as µs (every layer 1000x slower): give it --time-unit us");
    expect(out(7).stderr).not.toContain('give it --time-unit us');
  });

  it('says on stderr what the converter drops, and how to keep the lines apart', () => {
    expect(out(0).stderr).toContain('67 vector layers folded into the GEMM-like layers before them (54 lines; --text-vector-layers separate writes a line each)');
    expect(out(0).stderr).toMatch(/Chakra's text converter ignores column 12, the update time \([\d,]+ ns of optimizer step here; ASTRA-sim 1\.0 reads it\); --format chakra keeps the optimizer step/);
    expect(out(1).stderr).not.toContain('folded');
  });

  it('--text-vector-layers with another format is an error (exit 2)', () => {
    expect(out(4).status).toBe(2);
    expect(out(4).stderr).toContain('--text-vector-layers applies to --format text');
  });
});
