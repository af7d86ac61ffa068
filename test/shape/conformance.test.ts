/**
 * ONNX's own conformance data (932 backend node cases): every case's inferred output dtypes and
 * shapes must equal what the model declares, except the few listed in expected.json.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatConformanceTable, runConformance } from '../helpers/conformance.js';
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

  it('passes at least 95% of the cases', () => {
    const passed = results.filter((r) => r.status === 'pass').length;
    expect(passed / results.length).toBeGreaterThanOrEqual(0.95);
  });
});
