import { describe, expect, it } from 'vitest';
import { SharedPasses } from '../../src/layers/shared-passes.js';
import type { VectorWork } from '../../src/layers/types.js';

const NO_GEMM = { m: 0, n: 0, k: 0 };

describe('SharedPasses', () => {
  it('vector layers of equal work share one passes object holding that work; any differing field gets its own', () => {
    const shared = new SharedPasses();
    const work: VectorWork = { opClass: 'elementwise', elements: 512, bytesIn: 2048, bytesOut: 2048, hasParams: false };
    const a = shared.noGemm(NO_GEMM, work);
    const b = shared.noGemm(NO_GEMM, { ...work });
    expect(b.passes).toBe(a.passes);
    expect(a.passes.vector).toEqual(work);
    expect(a.passes.fwd).toEqual([]);
    const variants: VectorWork[] = [
      { ...work, opClass: 'softmax' },
      { ...work, elements: 513 },
      { ...work, bytesIn: 4096 },
      { ...work, bytesOut: 4096 },
      { ...work, hasParams: true },
    ];
    for (const v of variants) {
      const passes = shared.noGemm(NO_GEMM, v).passes;
      expect(passes).not.toBe(a.passes);
      expect(passes.vector).toEqual(v);
    }
  });

  it('runs and alternations of works get the passes of their own work', () => {
    const shared = new SharedPasses();
    const a: VectorWork = { opClass: 'elementwise', elements: 512, bytesIn: 2048, bytesOut: 2048, hasParams: false };
    const b: VectorWork = { ...a, elements: 1024 };
    const sequence = [a, a, b, a, b, b].map((w) => shared.noGemm(NO_GEMM, { ...w }).passes);
    expect(sequence.map((p) => p.vector?.elements)).toEqual([512, 512, 1024, 512, 1024, 1024]);
    expect(new Set(sequence).size).toBe(2);
  });

  it('GEMM passes are shared per geometry and count', () => {
    const shared = new SharedPasses();
    const one = shared.gemm({ m: 8, n: 64, k: 64 }, 1);
    expect(shared.gemm({ m: 8, n: 64, k: 64 }, 1)).toBe(one);
    expect(shared.gemm({ m: 8, n: 64, k: 64 }, 2)).not.toBe(one);
  });
});
