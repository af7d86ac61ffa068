/** `translate --format chakra | chakra-json | scalesim` run in-process, with --report alongside. */
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { decodedAttr, decodeEtFile } from '../../src/writers/chakra-encoding.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-formats-'));
const base: TranslateOptions = { parallelism: 'DATA', npus: 4, dtype: 'fp32', params: 'all', hardware: 'tpu-256' };

function captureStderr(): { text: () => string } {
  let out = '';
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
    out += String(s);
    return true;
  });
  return { text: () => out };
}

afterEach(() => vi.restoreAllMocks());

describe('translate output formats', () => {
  it('chakra: PREFIX.<rank>.et per NPU, a rounding summary on stderr, and the report', async () => {
    const err = captureStderr();
    const prefix = join(dir, 'alexnet');
    await runTranslate('alexnet', { ...base, format: 'chakra', output: prefix, passes: 2, report: join(dir, 'alexnet.csv') });
    expect(readdirSync(dir).filter((f) => f.startsWith('alexnet.') && f.endsWith('.et')).sort()).toEqual(['alexnet.0.et', 'alexnet.1.et', 'alexnet.2.et', 'alexnet.3.et']);
    const nodes = decodeEtFile(readFileSync(`${prefix}.2.et`)).nodes;
    // Two passes of 8 layers: forward, input gradient (not the first layer), weight gradient, one optimizer step.
    expect(nodes.filter((n) => n.type === 'COMP_NODE')).toHaveLength(2 * (8 + 7 + 8 + 1));
    // Data-parallel gradient buckets carry every parameter once per pass: AlexNet's 61,100,840, fp32.
    const gradBytes = nodes.filter((n) => n.type === 'COMM_COLL_NODE').reduce((a, n) => a + (decodedAttr(n, 'comm_size')!.value as number), 0);
    expect(gradBytes).toBe(2 * 61_100_840 * 4);
    expect(err.text()).toMatch(/4 files .*alexnet\.<0\.\.3>\.et/);
    expect(err.text()).toMatch(/chakra: 48 compute nodes per file, [\d,]+ ns exact; replayed in whole us: [\d,]+ ns \([+-][\d,]+ ns, [+-]\d+\.\d{3}%\)/);
    expect(readFileSync(join(dir, 'alexnet.csv'), 'utf8').split('\n')[0]).toContain('fwd_cycles');
  });

  it('chakra needs -o PREFIX; scalesim needs -o DIR', async () => {
    await expect(runTranslate('alexnet', { ...base, format: 'chakra' })).rejects.toThrow(/-o PREFIX/);
    await expect(runTranslate('alexnet', { ...base, format: 'scalesim' })).rejects.toThrow(/-o DIR/);
  });

  it('chakra-json: the same nodes as readable JSON, with roofline timing', async () => {
    const err = captureStderr();
    const file = join(dir, 'lstm.json');
    await runTranslate('lstm_lm', { ...base, format: 'chakra-json', output: file, chakraTiming: 'roofline' });
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { timing: string; ranks: { nodes: { attr: Record<string, unknown> }[] }[] };
    expect(doc.timing).toBe('roofline');
    expect(doc.ranks).toHaveLength(4);
    expect(doc.ranks[0]!.nodes[0]!.attr['tensor_size']).toEqual({ uint64_val: 1 });
    expect(err.text()).toMatch(/roofline-enabled 1, peak-perf 1/);
  });

  it('scalesim: three topologies, the mnk forward and the .cfg in DIR', async () => {
    captureStderr();
    const out = join(dir, 'scalesim', 'vgg16');
    await runTranslate('vgg16', { ...base, format: 'scalesim', output: out, hardware: 'eyeriss' });
    expect(readdirSync(out).sort()).toEqual(['eyeriss.cfg', 'vgg16_fwd.csv', 'vgg16_fwd_gemm.csv', 'vgg16_input_grad.csv', 'vgg16_weight_grad.csv']);
    expect(existsSync(join(out, 'eyeriss.cfg'))).toBe(true);
  });
});
