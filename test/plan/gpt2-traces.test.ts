/**
 * The acceptance run: gpt2_small_like --tp 4 --dp 2 --global-batch 8 --micro-batch 2 as
 * Chakra traces. Expected figures follow from Megatron-LM's scheme and the model's own
 * initializer dims (test/fixtures/models/gpt2_small_like.shapes.json), never from our output.
 */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkTraceSet, findTraceFiles } from '../../src/check/check-traces.js';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { decodeEtFile, decodedAttr, type DecodedNode } from '../../src/writers/chakra-encoding.js';
import { truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-gpt2-'));
const prefix = join(dir, 'gpt2');
const base: TranslateOptions = { tp: 4, dp: 2, globalBatch: 8, microBatch: 2, dtype: 'fp32', params: 'all', hardware: 'tpu-256', format: 'chakra', output: prefix };

afterEach(() => vi.restoreAllMocks());

/**
 * Parameters one tensor-parallel rank holds, from the initializer dims: square and MLP weights
 * are split 4 ways, the vocabulary matrices (embedding, LM head) by rows of the vocabulary padded
 * to a multiple of 128 x 4 (Megatron-LM), the position table and row-parallel biases (attention and MLP outputs,
 * [768]-sized after their projection) and norms whole, column biases ([768] of q/k/v, [3072]) split.
 */
function paramsPerRank(): number {
  const t = truth('gpt2_small_like');
  let total = 0;
  for (const [name, { dims, numel }] of Object.entries(t.initializers)) {
    // Megatron-LM pads the vocabulary to a multiple of 128 x T = 512: 50257 -> 50688 rows, 12,672 per rank.
    if (dims.length === 2 && (dims[0] === 50257 || dims[1] === 50257)) total += (Math.ceil(50257 / 512) * 512 / 4) * 768;
    else if (name === 'wpe.weight' || /ln|\.o\.bias|proj\.bias/.test(name)) total += numel;
    else total += numel / 4;
  }
  return total;
}

describe('gpt2_small_like --tp 4 --dp 2 --global-batch 8 --micro-batch 2', () => {
  let ranks: DecodedNode[][];
  beforeAll(async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await runTranslate('gpt2_small_like', base);
    ranks = Array.from({ length: 8 }, (_, r) => decodeEtFile(readFileSync(`${prefix}.${r}.et`)).nodes);
  });

  it('writes 8 traces and the groups file: 2 tensor-parallel groups of 4, 4 data-parallel pairs', () => {
    expect(readdirSync(dir).sort()).toEqual([...Array.from({ length: 8 }, (_, r) => `gpt2.${r}.et`), 'gpt2.comm-groups.json', 'gpt2.manifest.json'].sort());
    // rank = t + T x d: TP groups are consecutive ranks, DP groups stride T.
    expect(JSON.parse(readFileSync(`${prefix}.comm-groups.json`, 'utf8'))).toEqual({ 1: [0, 1, 2, 3], 2: [4, 5, 6, 7], 3: [0, 4], 4: [1, 5], 5: [2, 6], 6: [3, 7] });
  });

  it('each rank all-reduces over its TP group 2 x (1 + 12 x 4 + 1 + 3) + 1 times, with Megatron sizes', () => {
    const tokens = 2 * 128; // micro-batch x sequence
    for (let r = 0; r < 8; r++) {
      const tp = present(ranks[r], `rank ${r}`).filter((n) => n.type === 'COMM_COLL_NODE' && decodedAttr(n, 'pg_name')?.value === String(1 + Math.floor(r / 4)));
      expect(tp.every((n) => decodedAttr(n, 'comm_type')?.value === 0)).toBe(true);
      const sizes = tp.map((n) => decodedAttr(n, 'comm_size')?.value as number).sort((a, b) => a - b);
      const perMicroBatch = [...Array(3).fill(tokens * 4), ...Array(1 + 12 * 4 + 1).fill(tokens * 768 * 4)];
      // And once per step Megatron's gradient norm, one fp32 over the model-parallel group (here the TP group: no pipeline).
      expect(sizes).toEqual([...perMicroBatch, ...perMicroBatch, 4].sort((a, b) => a - b));
    }
  });

  it('the data-parallel gradient collectives carry the parameters a rank holds x 4 bytes, once', () => {
    for (let r = 0; r < 8; r++) {
      const dpGroup = String(3 + (r % 4));
      const dp = present(ranks[r], `rank ${r}`).filter((n) => n.type === 'COMM_COLL_NODE' && decodedAttr(n, 'pg_name')?.value === dpGroup);
      expect(dp.every((n) => decodedAttr(n, 'comm_type')?.value === 0)).toBe(true);
      expect(dp.reduce((a, n) => a + (decodedAttr(n, 'comm_size')?.value as number), 0)).toBe(paramsPerRank() * 4);
    }
  });

  it('obeys ASTRA-sim 2.x reading rules on a 1-D network: check-trace finds nothing', () => {
    const groups = JSON.parse(readFileSync(`${prefix}.comm-groups.json`, 'utf8'));
    expect(checkTraceSet(findTraceFiles(prefix), groups, { networkDims: 1 }).findings).toEqual([]);
  });

  it('ZeRO-1 replaces each bucket all-reduce by a reduce-scatter and an all-gather of the 1/D shard', async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const zero = join(dir, 'zero1', 'gpt2');
    await runTranslate('gpt2_small_like', { ...base, zero: '1', output: zero });
    const nodes = decodeEtFile(readFileSync(`${zero}.0.et`)).nodes.filter((n) => n.type === 'COMM_COLL_NODE' && decodedAttr(n, 'pg_name')?.value === '3');
    const byType = (t: number) => nodes.filter((n) => decodedAttr(n, 'comm_type')?.value === t).map((n) => decodedAttr(n, 'comm_size')?.value as number);
    expect(byType(0)).toEqual([]);
    expect(byType(7).reduce((a, b) => a + b, 0)).toBe(paramsPerRank() * 4);
    expect(byType(2)).toEqual(byType(7).map((bytes) => Math.ceil(bytes / 2)));
  });
});
