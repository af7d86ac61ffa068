/**
 * ONNX's own conformance data (932 backend node cases): every case's inferred output dtypes and
 * shapes must equal what the model declares, except the few listed in expected.json.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatConformanceTable, runCase, runConformance } from '../helpers/conformance.js';
import { buildModel, FLOAT, INT64 } from '../helpers/onnx-builder.js';
import { fixturePath } from '../helpers/models.js';

const root = fixturePath('onnx-node');
const expected = JSON.parse(readFileSync(`${root}/expected.json`, 'utf8')) as { notPassing: Record<string, string> };

describe('ONNX backend node cases', () => {
  const results = runConformance(root);
  if (process.env.MODTRANS_CONFORMANCE_REPORT === '1') console.log(formatConformanceTable(results));

  it('covers all 932 cases', () => {
    expect(results.length).toBe(932);
  });

  it('passes every case not listed in expected.json', () => {
    const regressions = results
      .filter((r) => r.status !== 'pass' && !(r.name in expected.notPassing))
      .map((r) => `${r.name} (${r.op}): ${r.status}: ${r.detail ?? ''}`);
    expect(regressions).toEqual([]);
  });

  it('lists only cases that really do not pass', () => {
    const byName = new Map(results.map((r) => [r.name, r]));
    const stale = Object.keys(expected.notPassing).filter((name) => byName.get(name)?.status !== 'fail' && byName.get(name)?.status !== 'unsupported');
    expect(stale).toEqual([]);
  });

  it('excuses at most 5% of the cases in expected.json', () => {
    // The list is the only way a case may stop passing; it must not grow into a blanket waiver.
    expect(Object.keys(expected.notPassing).length).toBeLessThanOrEqual(Math.floor(0.05 * results.length));
  });
});

describe('the case runner', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-conformance-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** A one-node case: Relu of a [2, 3] float tensor, its output declared as given. */
  const reluCase = (name: string, declared: { dtype: number; dims: number[] }): string => {
    mkdirSync(join(dir, name));
    const model = buildModel({ nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }], inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 3] }], outputs: [{ name: 'y', ...declared }] });
    writeFileSync(join(dir, name, 'model.onnx'), model);
    return name;
  };

  it('passes a case whose declaration is right, and fails one whose shape or dtype is wrong', () => {
    expect(runCase(join(dir, reluCase('right', { dtype: FLOAT, dims: [2, 3] })), 'right').status).toBe('pass');
    expect(runCase(join(dir, reluCase('shape', { dtype: FLOAT, dims: [3, 2] })), 'shape')).toMatchObject({ status: 'fail', detail: 'y: shape [2,3] != [3,2]' });
    expect(runCase(join(dir, reluCase('dtype', { dtype: INT64, dims: [2, 3] })), 'dtype')).toMatchObject({ status: 'fail', detail: 'y: dtype FLOAT != INT64' });
  });
});
