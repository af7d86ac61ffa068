/** `translate --format chakra | chakra-json | scalesim` run in-process, with --report alongside. */
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { decodedAttr, decodeEtFile } from '../../src/writers/chakra-encoding.js';
import { truth, type ShapesTruth } from '../helpers/models.js';
import { present } from '../helpers/present.js';

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

/**
 * The --report CSV of alexnet on tpu-256 (256 x 256, weight-stationary), row by row, against
 * the exported graph: one row per Conv/Gemm node, named after its weight, with the exporter's
 * MAC count, the weight and bias sizes and output shape of the model, and forward cycles from
 * SCALE-sim's ws formula folds x (2R + C + T - 2) - 1 (docs/scalesim-model.md §4-5).
 */
function expectAlexnetReport(csv: string): void {
  const t = truth('alexnet');
  const nodes = t.nodes as (ShapesTruth['nodes'][number] & { inputs: string[]; outputs: string[] })[];
  const [header, ...rows] = csv.trim().split('\n').map((line) => line.split(','));
  const columns = present(header, 'CSV header');
  const column = (row: string[], name: string): string => present(row[columns.indexOf(name)], `column ${name}`);
  const gemmNodes = nodes.filter((n) => n.op_type === 'Conv' || n.op_type === 'Gemm');
  expect(rows).toHaveLength(gemmNodes.length);
  const R = 256;
  const C = 256;
  gemmNodes.forEach((node, i) => {
    const row = present(rows[i], `row ${i}`);
    const weightName = present(node.inputs[1], `weight input of ${node.name}`);
    const weight = present(t.initializers[weightName], weightName);
    const outName = present(node.outputs[0], `output of ${node.name}`);
    const outDims = present(t.values[outName], outName).dims as number[];
    const biasName = present(node.inputs[2], `bias input of ${node.name}`);
    const n = present(weight.dims[0], `dim 0 of ${weightName}`); // output channels / features (Gemm with transB = 1)
    const k = weight.numel / n;
    const m = outDims.reduce((a, d) => a * d, 1) / n;
    const folds = Math.ceil(k / R) * Math.ceil(n / C);
    expect({
      name: column(row, 'name'), op: column(row, 'op'), outputShape: column(row, 'output_shape'), macs: Number(column(row, 'macs')),
      weights: Number(column(row, 'weight_params')), biases: Number(column(row, 'bias_params')), fwdCycles: Number(column(row, 'fwd_cycles')),
    }).toEqual({
      name: weightName.replace(/\.weight$/, ''), op: node.op_type, outputShape: outDims.join('x'), macs: node.macs,
      weights: weight.numel, biases: present(t.initializers[biasName], biasName).numel, fwdCycles: folds * (2 * R + C + m - 2) - 1,
    });
  });
}

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
    const gradBytes = nodes.filter((n) => n.type === 'COMM_COLL_NODE').reduce((a, n) => a + (present(decodedAttr(n, 'comm_size'), `comm_size of ${n.name}`).value as number), 0);
    expect(gradBytes).toBe(2 * 61_100_840 * 4);
    expect(err.text()).toMatch(/4 files .*alexnet\.<0\.\.3>\.et/);
    expect(err.text()).toMatch(/chakra: 48 compute nodes per file, \d+\.\d+ ms exact; replayed in whole µs: \d+\.\d+ ms \([+-][\d.]+ (ns|µs), [+-]\d+\.\d{3}%\)/);
    expectAlexnetReport(readFileSync(join(dir, 'alexnet.csv'), 'utf8'));
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
    expect(doc.ranks[0]?.nodes[0]?.attr['tensor_size']).toEqual({ uint64_val: 1 });
    expect(err.text()).toMatch(/roofline-enabled 1, peak-perf 1/);
  });

  it('scalesim: three topologies, the mnk forward and the .cfg in DIR', async () => {
    captureStderr();
    const out = join(dir, 'scalesim', 'vgg16');
    await runTranslate('vgg16', { ...base, format: 'scalesim', output: out, hardware: 'eyeriss' });
    expect(readdirSync(out).sort()).toEqual(['eyeriss.cfg', 'vgg16.manifest.json', 'vgg16_fwd.csv', 'vgg16_fwd_gemm.csv', 'vgg16_input_grad.csv', 'vgg16_weight_grad.csv']);
    expect(existsSync(join(out, 'eyeriss.cfg'))).toBe(true);
  });
});
