/** The `gpu` bench suite (bench/gpu.ts): its rows and the roofline it divides by. */
import { describe, expect, it } from 'vitest';
import { A100_MEASURED_GEMMS, GPU_BENCH_PROFILES, runGpuBench } from '../../bench/gpu.js';

describe('gpu bench', () => {
  it('costs every LLMCompass shape on every profile; only the A100 is divided by the measured time', async () => {
    const r = await runGpuBench();
    expect(r.rows).toHaveLength(A100_MEASURED_GEMMS.length * GPU_BENCH_PROFILES.length);
    expect(r.rows.filter((row) => row.vsMeasured !== undefined).map((row) => row.profile)).toEqual(A100_MEASURED_GEMMS.map(() => 'a100-sxm-80gb'));
    // 8192^3 on the A100: compute-bound roofline 2 x 8192^3 / (108 x 4 x 256 x 2 x 1.41 GHz) s.
    const cube = r.rows.find((row) => row.profile === 'a100-sxm-80gb' && row.m === 8192 && row.n === 8192 && row.k === 8192);
    expect(cube?.rooflineMs).toBeCloseTo((1e3 * 2 * 8192 ** 3) / (108 * 4 * 256 * 2 * 1.41e9), 9);
    expect(cube?.measuredA100Ms).toBe(3.9614);
    expect(r.markdown).toContain('| a100-sxm-80gb | 311.9 |');
    // GELU over 2^29 FP16 elements: 4 bytes each over 2039 GB/s of HBM (memory-bound: 8 ops per
    // element on 108 x 64 lanes is far less); measured 2^29 / 390.33 G elements/s.
    const gelu = r.vector.find((row) => row.op === 'gelu' && row.m === 2 ** 29);
    expect(gelu?.modelledUs).toBeCloseTo((4 * 2 ** 29) / 2039e3, 0);
    expect(gelu?.measuredUs).toBeCloseTo(2 ** 29 / 390.33e3, 6);
  });
});
