/**
 * Traces that ASTRA-sim runs: its own microbenchmarks, and what `translate --format chakra`
 * writes today. Expected counts come from FORMAT.md (E.2, E.4, D.3) and from decoding the files
 * with the writers' protobufjs decoder, not from the checker.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkTraceSet, findTraceFiles } from '../../src/check/check-traces.js';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { decodeEtFile, decodedAttr, type DecodedNode } from '../../src/writers/chakra-encoding.js';
import { fixturePath } from '../helpers/models.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-check-clean-'));
const base: TranslateOptions = { parallelism: 'DATA', npus: 8, dtype: 'fp32', params: 'all', hardware: 'tpu-256', timeUnit: 'ns', format: 'chakra' };

afterEach(() => vi.restoreAllMocks());

async function translate(model: string, options: Partial<TranslateOptions>): Promise<string> {
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  const prefix = join(dir, `${model}-${options.parallelism ?? 'DATA'}`, model);
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

describe('translate --format chakra', () => {
  it('resnet50, DATA on 8 NPUs: clean, 54 weight-gradient all-reduces per rank', async () => {
    const prefix = await translate('resnet50', {});
    const { findings, stats } = checkTraceSet(findTraceFiles(prefix), undefined, { networkDims: 1 });
    expect(findings).toEqual([]);
    // E.2: 54 layers, each with a weight-gradient all-reduce; D.3: 4n - 1 nodes per pass.
    expect(stats).toEqual({ files: 8, nodes: 8 * (4 * 54 - 1), collectives: 8 * 54, sends: 0, recvs: 0 });
  });

  it('gpt2_small_like, HYBRID_DATA_MODEL: masks fit a 2-D network; on a 1-D one every masked collective hangs (F.1)', async () => {
    const prefix = await translate('gpt2_small_like', { parallelism: 'HYBRID_DATA_MODEL', npus: 16, mpGroup: 4 });
    const ranks = decodedNodes(prefix);
    const files = findTraceFiles(prefix);
    const two = checkTraceSet(files, undefined, { networkDims: 2 });
    expect(two.stats.collectives).toBe(ranks.flat().filter((n) => n.type === 'COMM_COLL_NODE').length);
    // The only other findings: compute nodes the writer gives no work (the embedding lookups,
    // which have no GEMM). They are real F.1 defects of the writer; the checker must name exactly them.
    const idle = (n: DecodedNode): boolean => n.type === 'COMP_NODE' && (decodedAttr(n, 'num_ops')?.value === 0 || decodedAttr(n, 'tensor_size')?.value === 0);
    const idleNodes = ranks.flatMap((nodes, rank) => nodes.filter(idle).map((n) => `${rank}:${n.id}`));
    expect(two.findings.filter((f) => f.kind !== 'no-work')).toEqual([]);
    expect(two.findings.map((f) => `${f.rank}:${f.node?.id}`)).toEqual(idleNodes);

    const one = checkTraceSet(files, undefined, { networkDims: 1 });
    const masked = ranks.flatMap((nodes, rank) => nodes.filter((n) => decodedAttr(n, 'involved_dim') !== undefined).map((n) => `${rank}:${n.id}`));
    expect(masked.length).toBeGreaterThan(0);
    expect(one.findings.filter((f) => f.kind === 'involved-dim').map((f) => `${f.rank}:${f.node?.id}`)).toEqual(masked);
    expect(one.findings.filter((f) => f.kind === 'involved-dim').every((f) => f.effect === 'hang')).toBe(true);
  });

  it('lstm_lm with --chakra-timing roofline: at the documented peak-perf 1, nodes under 1000 ops last 0 ns (F.1)', async () => {
    const prefix = await translate('lstm_lm', { npus: 4, chakraTiming: 'roofline' });
    const files = findTraceFiles(prefix);
    expect(checkTraceSet(files, undefined).findings).toEqual([]);
    // B.7: 1 TFLOPS and tensor_size 1 (compute-bound) give num_ops / 1000 ns, truncated.
    const zeroNs = decodedNodes(prefix).flatMap((nodes, rank) =>
      nodes.filter((n) => n.type === 'COMP_NODE' && Number(decodedAttr(n, 'num_ops')?.value) < 1000).map((n) => `${rank}:${n.id}`),
    );
    const findings = checkTraceSet(files, undefined, { roofline: { peakTflops: 1, localMemGBps: 1600 } }).findings;
    expect(findings.every((f) => f.kind === 'no-work')).toBe(true);
    expect(findings.map((f) => `${f.rank}:${f.node?.id}`)).toEqual(zeroNs);
  });
});
