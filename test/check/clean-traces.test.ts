/**
 * Traces that ASTRA-sim runs: its own microbenchmarks, and what `translate --format chakra`
 * writes today. Expected counts come from docs/astra-sim-formats.md (E.2, E.4, D.3) and from decoding the files
 * with the writers' protobufjs decoder, not from the checker.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkTraceSet, findTraceFiles } from '../../src/check/check-traces.js';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { decodeEtFile, decodedAttr, type DecodedNode } from '../../src/writers/chakra-encoding.js';
import { fixturePath, truth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-check-clean-'));
const base: TranslateOptions = { parallelism: 'DATA', npus: 8, dtype: 'fp32', params: 'all', hardware: 'tpu-256', format: 'chakra' };

afterEach(() => vi.restoreAllMocks());

async function translate(model: string, options: Partial<TranslateOptions>): Promise<string> {
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  const prefix = join(dir, `${model}-${options.parallelism ?? 'DATA'}-${options.chakraDims ?? 0}`, model);
  await runTranslate(model, { ...base, ...options, output: prefix });
  return prefix;
}

const decodedNodes = (prefix: string): DecodedNode[][] => findTraceFiles(prefix).map((f) => decodeEtFile(readFileSync('path' in f ? f.path : '')).nodes);

describe("ASTRA-sim's microbenchmark traces (E.4)", () => {
  for (const coll of ['all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all']) {
    it(`${coll}/8npus_1MB is clean: 8 files of one collective each`, () => {
      const files = findTraceFiles(fixturePath(`astra-sim/et_examples/microbenchmarks/${coll}/8npus_1MB/${coll}`));
      const { findings, stats } = checkTraceSet(files, undefined, { networkDims: 1 });
      expect(findings).toEqual([]);
      expect(stats).toEqual({ files: 8, nodes: 8, collectives: 8, sends: 0, recvs: 0 });
    });
  }
});

const groupsOf = (prefix: string): unknown => JSON.parse(readFileSync(`${prefix}.comm-groups.json`, 'utf8'));
const paramsOf = (model: string): number => Object.values(truth(model).initializers).reduce((a, i) => a + i.numel, 0);

describe('translate --format chakra', () => {
  it('resnet50, DATA on 8 NPUs: clean on a 1-D ring; gradient buckets carry every parameter once', async () => {
    const prefix = await translate('resnet50', {});
    const { findings, stats } = checkTraceSet(findTraceFiles(prefix), groupsOf(prefix), { networkDims: 1 });
    expect(findings).toEqual([]);
    // 54 forward, 53 input-gradient (not conv1), 54 weight-gradient nodes and one optimizer step per file.
    const ranks = decodedNodes(prefix);
    expect(ranks.map((nodes) => nodes.filter((n) => n.type === 'COMP_NODE').length)).toEqual(Array(8).fill(54 + 53 + 54 + 1));
    const bytes = present(ranks[0], 'rank 0 nodes').filter((n) => n.type === 'COMM_COLL_NODE').reduce((a, n) => a + (present(decodedAttr(n, 'comm_size'), 'comm_size').value as number), 0);
    expect(bytes).toBe(4 * paramsOf('resnet50'));
    expect(stats.files).toBe(8);
  });

  it('gpt2_small_like, HYBRID_DATA_MODEL on 16 NPUs: communicator groups run on a 1-D ring, no idle compute', async () => {
    const prefix = await translate('gpt2_small_like', { parallelism: 'HYBRID_DATA_MODEL', npus: 16, mpGroup: 4 });
    const { findings, stats } = checkTraceSet(findTraceFiles(prefix), groupsOf(prefix), { networkDims: 1 });
    expect(findings).toEqual([]);
    expect(stats.collectives).toBe(decodedNodes(prefix).flat().filter((n) => n.type === 'COMM_COLL_NODE').length);
  });

  it('gpt2_small_like with --chakra-dims 2 (the converter graph): masks fit a 2-D network; on a 1-D one every masked collective hangs (F.1)', async () => {
    const prefix = await translate('gpt2_small_like', { parallelism: 'HYBRID_DATA_MODEL', npus: 16, mpGroup: 4, chakraDims: 2 });
    const ranks = decodedNodes(prefix);
    const files = findTraceFiles(prefix);
    expect(checkTraceSet(files, undefined, { networkDims: 2 }).findings).toEqual([]);
    const one = checkTraceSet(files, undefined, { networkDims: 1 });
    const masked = ranks.flatMap((nodes, rank) => nodes.filter((n) => decodedAttr(n, 'involved_dim') !== undefined).map((n) => `${rank}:${n.id}`));
    expect(masked.length).toBeGreaterThan(0);
    expect(one.findings.map((f) => `${f.rank}:${f.node?.id}`)).toEqual(masked);
    expect(one.findings.every((f) => f.kind === 'involved-dim' && f.effect === 'hang')).toBe(true);
  });

  it('lstm_lm with --chakra-timing roofline: no compute node lasts 0 ns at the documented peak-perf 1 (F.1)', async () => {
    const prefix = await translate('lstm_lm', { npus: 4, chakraTiming: 'roofline' });
    const files = findTraceFiles(prefix);
    // B.7: tensor_size 1 and 1 TFLOPS give num_ops / 1000 ns; every node has at least 1000 ops.
    const ops = decodedNodes(prefix).flatMap((nodes) => nodes.filter((n) => n.type === 'COMP_NODE').map((n) => Number(present(decodedAttr(n, 'num_ops'), 'num_ops').value)));
    expect(Math.min(...ops)).toBeGreaterThanOrEqual(1000);
    expect(checkTraceSet(files, groupsOf(prefix), { roofline: { peakTflops: 1, localMemGBps: 1600 } }).findings).toEqual([]);
  });
});
