/**
 * Files beyond 2 GiB and fields beyond 4 GiB: a ~4.8 GB model with its weight inline, built as a
 * sparse file (headers written, payload seeked over), translates while reading only a few KB.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { writeInlineCopy } from '../../bench/inline-copy.js';
import { readModel } from '../../src/onnx/reader.js';
import { analyseModel, createCostModel, workloadOf } from '../../src/pipeline.js';
import { writeAstraText } from '../../src/writers/astra-text.js';
import { buildModel, FLOAT } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-large-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const K = 32768;
const N = 36864; // K x N fp32 = 4.83 GB: one raw_data field, and the graph, longer than 2^32 bytes

describe('a > 4 GiB model with inline weights (sparse file)', () => {
  it('is read with positional reads of a few KB and translates', async (ctx) => {
    const graphOnly = join(dir, 'big.graph.onnx');
    writeFileSync(graphOnly, buildModel({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, K] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [1, N] }],
      initializers: [{ name: 'fc.weight', dtype: FLOAT, dims: [K, N], external: { location: 'absent.bin' } }],
      nodes: [{ op: 'MatMul', inputs: ['x', 'fc.weight'], outputs: ['y'] }],
    }));
    const path = join(dir, 'big.onnx');
    let written: ReturnType<typeof writeInlineCopy>;
    try {
      written = writeInlineCopy(graphOnly, path, { sparse: true });
    } catch (e) {
      return ctx.skip(`cannot create a ${(K * N * 4) / 1e9} GB sparse file in ${dir}: ${(e as Error).message}`);
    }
    const st = statSync(path);
    // Without sparse-file support the payload would really occupy the disk: skip, clearly.
    if (st.blocks * 512 > 64 * 1024 * 1024) {
      rmSync(path, { force: true });
      return ctx.skip(`${tmpdir()} does not keep files sparse (${st.blocks * 512} bytes allocated)`);
    }
    expect(written.payloadBytes).toBe(K * N * 4);
    expect(st.size).toBeGreaterThan(2 ** 32);

    const loaded = readModel(path);
    const init = present(loaded.model.graph.initializers[0], 'the initializer');
    expect(init.dims).toEqual([K, N]);
    expect(init.data).toMatchObject({ kind: 'inline', encoding: 'raw', byteLength: K * N * 4 });
    expect(loaded.stats.bytesRead).toBeLessThan(256 * 1024); // the first 64 KiB window, then 1 KiB after the skip

    const analysed = analyseModel(path);
    expect(analysed.layers).toHaveLength(1);
    expect(analysed.layers[0]?.macs).toBe(K * N);
    const cost = await createCostModel(await loadHardwareProfile('tpu-256'), 'ideal');
    const text = writeAstraText(workloadOf(analysed, cost, { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' }));
    expect(text).toMatch(new RegExp(`^DATA\\n1\\nfc\\t-1\\t\\d+\\tNONE\\t0\\t\\d+\\tNONE\\t0\\t\\d+\\tALLREDUCE\\t${K * N * 4}\\t\\d+\\n$`));
  });
});
