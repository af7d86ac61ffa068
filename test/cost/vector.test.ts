/** The vector-unit keys of hardware profiles and the roofline cost of one vector pass. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHardwareProfile, parseHardwareProfile, profilesDir } from '../../src/cost/hardware.js';
import type { HardwareProfile } from '../../src/cost/types.js';
import { costVectorPass, vectorUnitOf } from '../../src/cost/vector.js';
import type { VectorWork } from '../../src/layers/types.js';
import { InputError } from '../../src/errors.js';
import { FIXTURES } from '../scalesim/reference.js';

const base = JSON.parse(readFileSync(join(profilesDir(), 'gemmini.json'), 'utf8')) as Record<string, unknown>;
const withoutVector = (): Record<string, unknown> => {
  const { vectorLanes: _l, vectorBytesPerCycle: _b, ...rest } = base;
  return rest;
};

async function error(raw: unknown): Promise<string> {
  const e = await parseHardwareProfile(raw, 'p.json', 'p').then(() => undefined, (x: unknown) => x);
  expect(e).toBeInstanceOf(InputError);
  return (e as Error).message;
}

describe('vector unit keys', () => {
  it('every shipped profile declares its vector unit and says where the figures come from', async () => {
    for (const file of readdirSync(profilesDir()).filter((f) => f.endsWith('.json'))) {
      const p = await loadHardwareProfile(file.replace(/\.json$/, ''));
      expect(p.vectorLanes, file).toBeGreaterThan(0);
      expect(p.vectorBytesPerCycle, file).toBeGreaterThan(0);
      expect(p.source, file).toMatch(/Vector unit/);
    }
    // TPU v2+ TensorCores: 8 sublanes x 128 lanes.
    expect((await loadHardwareProfile('tpu-v4')).vectorLanes).toBe(8 * 128);
  });

  it('are optional: one lane per array column of every array, 12 bytes per lane and cycle', async () => {
    const p = await parseHardwareProfile({ ...withoutVector(), arrays: 2 }, 'p.json', 'p');
    expect(p.vectorLanes).toBeUndefined();
    expect(vectorUnitOf(p)).toMatchObject({ lanes: 16 * 2, bytesPerCycle: 12 * 16 * 2 });
    const cfg = await loadHardwareProfile(`${FIXTURES}configs/scale.cfg`);
    expect([cfg.vectorLanes, cfg.vectorBytesPerCycle]).toEqual([32, 12 * 32]); // scale.cfg: 32 columns
  });

  it('an ops table overrides single passes of single classes; the rest keep the defaults', async () => {
    const p = await parseHardwareProfile({ ...base, vectorOpsPerElement: { gelu: { fwd: 20 } } }, 'p.json', 'p');
    expect(vectorUnitOf(p).opsPerElement.gelu).toEqual({ fwd: 20, bwd: 12, wg: 2 });
    expect(vectorUnitOf(p).opsPerElement.softmax).toEqual({ fwd: 5, bwd: 4, wg: 2 });
  });

  it('rejects bad values with one line naming the key', async () => {
    expect(await error({ ...base, vectorLanes: 0 })).toMatch(/p\.json: key 'vectorLanes' must be positive/);
    expect(await error({ ...base, vectorLanes: 1.5 })).toMatch(/'vectorLanes' must be an integer/);
    expect(await error({ ...base, vectorBytesPerCycle: 'fast' })).toMatch(/'vectorBytesPerCycle' must be a plain integer/);
    expect(await error({ ...base, vectorOpsPerElement: { conv: { fwd: 1 } } })).toMatch(/unknown op class 'conv'/);
    expect(await error({ ...base, vectorOpsPerElement: { gelu: { fwd: -1 } } })).toMatch(/'gelu\.fwd' must be a number from 0 to 1000000/);
    expect(await error({ ...base, vectorOpsPerElement: { gelu: { back: 1 } } })).toMatch(/unknown pass 'back'/);
  });
});

describe('roofline of one vector pass', () => {
  const profile = { arrayCols: 4, arrays: 1, vectorLanes: 100, vectorBytesPerCycle: 1000 } as HardwareProfile;
  const work: VectorWork = { opClass: 'gelu', elements: 1000, bytesIn: 4000, bytesOut: 4000, hasParams: false };

  it('compute-bound: ceil(elements x ops / lanes), no stall', () => {
    expect(costVectorPass(work, 'fwd', profile)).toMatchObject({ cycles: 80, stallCycles: 0 }); // 1000 x 8 / 100; bytes 8000 / 1000 = 8
    expect(costVectorPass(work, 'ig', profile).cycles).toBe(120); // 1000 x 12 / 100
    expect(costVectorPass(work, 'wg', profile).cycles).toBe(0); // no parameters
  });

  it('memory-bound: bytes / bytes per cycle, the excess counted as stall', () => {
    const add: VectorWork = { opClass: 'elementwise', elements: 1000, bytesIn: 8000, bytesOut: 4000, hasParams: false };
    expect(costVectorPass(add, 'fwd', profile)).toMatchObject({ cycles: 12, stallCycles: 2 }); // 12000 B vs 10 compute cycles
    expect(costVectorPass(add, 'ig', profile)).toMatchObject({ cycles: 20, stallCycles: 10 }); // dY 4000 + 2 x 8000
  });

  it('parameters add a weight-gradient pass of 2 ops per element', () => {
    expect(costVectorPass({ ...work, opClass: 'layernorm', hasParams: true }, 'wg', profile).cycles).toBe(20);
  });
});
