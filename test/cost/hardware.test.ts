/** Hardware profiles: the shipped JSON files, SCALE-sim .cfg files, and one-line load errors. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROFILE_NAME, loadHardwareProfile, parseHardwareProfile, profilesDir } from '../../src/cost/hardware.js';
import { parseScaleSimConfig } from '../../src/cost/scalesim-config.js';
import type { HardwareProfile } from '../../src/cost/types.js';
import { InputError } from '../../src/errors.js';
import { FIXTURES } from '../scalesim/reference.js';

const shipped = readdirSync(profilesDir()).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, ''));
const dir = mkdtempSync(join(tmpdir(), 'modtrans-hw-'));
const base = JSON.parse(readFileSync(join(profilesDir(), 'gemmini.json'), 'utf8')) as Record<string, unknown>;

function writeProfile(name: string, content: unknown): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

async function loadError(path: string): Promise<string> {
  const error = await loadHardwareProfile(path).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(InputError);
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

/** A profile without its provenance, to compare configurations. */
const hardwareOf = ({ name: _n, source: _s, ...rest }: HardwareProfile): Omit<HardwareProfile, 'name' | 'source'> => rest;

describe('hardware profiles', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('ships the SCALE-sim, TPU, Edge-TPU and Gemmini profiles, all valid', async () => {
    for (const name of ['tpu-256', 'scale', 'google', 'eyeriss', 'tpu-v2', 'tpu-v3', 'tpu-v4', 'tpu-v5e', 'edge-tpu', 'gemmini']) {
      expect(shipped).toContain(name);
    }
    for (const name of shipped) {
      const p = await loadHardwareProfile(name);
      expect(p.name).toBe(name);
      expect(p.source.length).toBeGreaterThan(40);
      for (const v of [p.arrayRows, p.arrayCols, p.arrays, p.ifmapSramBytes, p.dramBandwidthWordsPerCycle, p.clockMHz, p.elementBytes]) {
        expect(v).toBeGreaterThan(0);
      }
    }
  });

  it('the default profile is a training accelerator: one TPU v4 TensorCore, figures as its source states them', async () => {
    expect(DEFAULT_PROFILE_NAME).toBe('tpu-v4');
    const p = await loadHardwareProfile(DEFAULT_PROFILE_NAME);
    // Google's TPU v4 figures per chip (2 TensorCores): 275 TFLOPS bf16, 1,200 GB/s HBM2.
    const chipTflops = (2 * p.arrays * p.arrayRows * p.arrayCols * 2 * p.clockMHz * 1e6) / 1e12;
    expect(chipTflops).toBeCloseTo(275, 0);
    expect(2 * p.dramBandwidthWordsPerCycle * p.elementBytes * p.clockMHz * 1e6).toBeCloseTo(1200e9, -6);
    expect(p.elementBytes).toBe(2); // bf16 operands
    expect(p.source).toMatch(/275 TFLOPS/);
    expect(p.source).toMatch(/1200 GB\/s/);
    // tpu-256 stays shipped: the TPU-v1-like inference chip earlier releases defaulted to.
    expect((await loadHardwareProfile('tpu-256')).dramBandwidthWordsPerCycle * 700e6).toBeCloseTo(34e9, -6);
  });

  it('matches SCALE-sim configs exactly: scale, google and eyeriss JSON = their .cfg', async () => {
    for (const name of ['scale', 'google', 'eyeriss']) {
      const json = await loadHardwareProfile(name);
      const cfg = await loadHardwareProfile(`${FIXTURES}configs/${name}.cfg`);
      expect(hardwareOf(json)).toEqual(hardwareOf(cfg));
      expect(json.dramBandwidthWordsPerCycle).toBe(10); // SCALE-sim's CALC read estimate
    }
    expect(await loadHardwareProfile('eyeriss')).toMatchObject({ arrayRows: 12, arrayCols: 14, ifmapSramBytes: 36 * 1024 });
  });

  it('models TPU cores with several 128x128 MXUs and Gemmini as 16x16 ws', async () => {
    expect(await loadHardwareProfile('tpu-v3')).toMatchObject({ arrayRows: 128, arrays: 2, clockMHz: 940 });
    expect(await loadHardwareProfile('tpu-v4')).toMatchObject({ arrayRows: 128, arrays: 4, clockMHz: 1050 });
    expect(await loadHardwareProfile('gemmini')).toMatchObject({ arrayRows: 16, dataflow: 'ws', ifmapSramBytes: 131072, ofmapSramBytes: 65536 });
  });

  it('reads a SCALE-sim .cfg: USER bandwidth, KiB SRAMs, 1-byte words, 1000 MHz', async () => {
    const p = await loadHardwareProfile(`${FIXTURES}configs/variants/scaleuser_is.cfg`);
    expect(p).toMatchObject({
      name: 'scaleuser_is', arrayRows: 32, arrayCols: 32, arrays: 1, dataflow: 'is', bandwidthMode: 'user',
      dramBandwidthWordsPerCycle: 10, ifmapSramBytes: 65536, elementBytes: 1, clockMHz: 1000,
    });
  });

  it('parses .cfg with configparser rules: case-insensitive keys, ":" or "=", comments, first bandwidth', () => {
    const cfg = parseScaleSimConfig(
      [
        '# comment', '[general]', 'RUN_NAME = r', '', '[architecture_presets]', 'arrayheight: 4', 'ArrayWidth = 8',
        'IfmapSramSzkB: 1', 'FILTERSRAMSZKB: 2', 'OfmapSramSzkB: 3', 'IfmapOffset: 0', 'FilterOffset: 10', 'OfmapOffset: 20',
        'Dataflow : os', '; another comment', 'Bandwidth : 20, 30', '[run_presets]', 'InterfaceBandwidth: USER  ',
      ].join('\n'),
      'x.cfg',
    );
    expect(cfg).toMatchObject({ runName: 'r', arrayHeight: 4, arrayWidth: 8, filterSramKiB: 2, dataflow: 'os', bandwidthMode: 'user', bandwidths: [20, 30] });
  });

  it('rejects bad .cfg files with one line naming file and key', async () => {
    const good = readFileSync(`${FIXTURES}configs/scale.cfg`, 'utf8');
    const cases: [string, RegExp][] = [
      [good.replace(/ArrayHeight:.*\n/, ''), /bad1\.cfg: missing key 'ArrayHeight'/],
      [good.replace('CALC', 'FAST'), /bad2\.cfg: key 'InterfaceBandwidth' must be USER or CALC/],
      [good.replace('Dataflow : os', 'Dataflow : rs'), /bad3\.cfg: key 'Dataflow'/],
      [good.replace('ArrayWidth:     32', 'ArrayWidth: 0'), /bad4\.cfg: key 'ArrayWidth' must be positive/],
      [good.replace('IfmapSramSzkB:   64', 'IfmapSramSzkB: 64kB'), /bad5\.cfg: key 'IfmapSramSzkB' must be an integer/],
      [`${good}\n[general]\nrun_name = again\n`, /bad6\.cfg:\d+: section '\[general\]' appears twice/],
      [good.replace('CALC', 'USER').replace('Bandwidth : 10', 'Bandwidth : ten'), /bad7\.cfg: key 'Bandwidth' must list positive integers, got 'ten'/],
      [good.replace('CALC', 'USER').replace('Bandwidth : 10\n', ''), /bad8\.cfg: missing key 'Bandwidth' in section '\[architecture_presets\]'/],
      [good.replace('ArrayHeight:    32', 'ArrayHeight: 99999999999999999999'), /bad9\.cfg: key 'ArrayHeight' must be at most/],
      [good.replace('OfmapSramSzkB:   64', 'OfmapSramSzkB: 9007199254740993'), /bad10\.cfg: key 'OfmapSramSzkB' must be at most/],
      [good.replace('[general]', 'stray = 1\n[general]'), /bad11\.cfg:1: key outside of any \[section\]/],
    ];
    for (const [i, [text, pattern]] of cases.entries()) {
      expect(text, `case ${i + 1} must change the config`).not.toBe(good);
      const path = join(dir, `bad${i + 1}.cfg`);
      writeFileSync(path, text);
      expect(await loadError(path)).toMatch(pattern);
    }
  });

  it('rejects unknown keys, missing keys and non-positive sizes in JSON profiles', async () => {
    expect(await loadError(writeProfile('unknown', { ...base, arrayDepth: 3 }))).toMatch(/unknown\.json: unknown key 'arrayDepth'/);
    const { arrays: _a, ...missing } = base;
    expect(await loadError(writeProfile('missing', missing))).toMatch(/missing\.json: missing key 'arrays'/);
    expect(await loadError(writeProfile('zero', { ...base, arrayRows: 0 }))).toMatch(/zero\.json: key 'arrayRows' must be positive/);
    expect(await loadError(writeProfile('negative', { ...base, ofmapSram: '-64 KiB' }))).toMatch(/negative\.json: key 'ofmapSram' must be positive/);
    expect(await loadError(writeProfile('unit', { ...base, clock: '3 parsecs' }))).toMatch(/unit\.json: key 'clock'/);
    expect(await loadError(writeProfile('flow', { ...base, dataflow: 'rs' }))).toMatch(/flow\.json: key 'dataflow'/);
    expect(await loadError(writeProfile('slow', { ...base, bandwidthMode: 'user', dramBandwidth: '100 MB/s' }))).toMatch(
      /slow\.json: key 'dramBandwidth' .* at least 1 word\/cycle/,
    );
    expect(await loadError(writeProfile('huge', { ...base, arrayCols: 2 ** 40 }))).toMatch(/huge\.json: key 'arrayCols' must be at most/);
    expect(await loadError(writeProfile('inexact', { ...base, arrays: 2 ** 60 }))).toMatch(/inexact\.json: key 'arrays' must be at most/);
    expect(await loadError(writeProfile('json', '{ "name": '))).toMatch(/json\.json: not valid JSON/);
    expect(await loadError(join(dir, 'absent.json'))).toMatch(/absent\.json: no such file/);
    expect(await loadError(dir)).toMatch(/cannot read hardware profile \(is a folder\)/);
  });

  it('rejects an SRAM too small for double buffering: 2 words per array, in bytes of elementBytes', async () => {
    // gemmini: 1-byte words, 1 array. One word would leave the prefetch/drain half empty (a hang).
    expect(await loadError(writeProfile('tiny', { ...base, ofmapSram: '1 B' }))).toMatch(
      /tiny\.json: key 'ofmapSram' is 1 bytes; it must hold at least 2 words of 1 byte\(s\) per array \(2 bytes\)/,
    );
    expect(await loadError(writeProfile('shared', { ...base, arrays: 4, elementBytes: 2, filterSram: '15 B' }))).toMatch(
      /shared\.json: key 'filterSram' .* \(16 bytes\)/,
    );
    const smallest = await parseHardwareProfile({ ...base, arrays: 4, elementBytes: 2, ifmapSram: '16 B', filterSram: '16 B', ofmapSram: '16 B' }, 'x.json', 'x');
    expect(smallest.ifmapSramBytes).toBe(16);
  });

  it('requires a unit of the right dimension on every quantity, and names file, key and an example', async () => {
    const bare: [string, unknown, RegExp][] = [
      ['clock', 1050, /bare1\.json: key 'clock' is a bare number \(1050\).*e\.g\. "clock": "940 MHz"/],
      ['dramBandwidth', 16e9, /bare2\.json: key 'dramBandwidth' is a bare number .*e\.g\. "dramBandwidth": "900 GB\/s"/],
      ['ifmapSram', '131072', /bare3\.json: key 'ifmapSram' is a bare number \(131072\).*e\.g\. "ifmapSram": "6 MiB"/],
      ['clock', '1e9', /bare4\.json: key 'clock' is a bare number/],
    ];
    for (const [i, [key, value, message]] of bare.entries()) {
      expect(await loadError(writeProfile(`bare${i + 1}`, { ...base, [key]: value }))).toMatch(message);
    }
    const dimension: [string, string, RegExp][] = [
      ['clock', '900 GB/s', /dim1\.json: key 'clock': '900 GB\/s' is not a frequency/],
      ['dramBandwidth', '16 GHz', /dim2\.json: key 'dramBandwidth': '16 GHz' is not a bandwidth in bytes per second/],
      ['ofmapSram', '64 KiB/s', /dim3\.json: key 'ofmapSram': '64 KiB\/s' is not a size in bytes/],
    ];
    for (const [i, [key, value, message]] of dimension.entries()) {
      expect(await loadError(writeProfile(`dim${i + 1}`, { ...base, [key]: value }))).toMatch(message);
    }
    // Counts stay plain integers.
    expect(await loadError(writeProfile('count', { ...base, arrayRows: '16' }))).toMatch(/count\.json: key 'arrayRows' must be a plain integer/);
  });

  it('warns about implausible quantities (a wrong prefix) but loads them', async () => {
    const cases: [string, string, string][] = [
      ['clock', '1050 Hz', '1 MHz .. 10 GHz'],
      ['clock', '50 GHz', '1 MHz .. 10 GHz'],
      ['dramBandwidth', '16 kB/s', '1 MB/s .. 100 TB/s'],
      ['dramBandwidth', '200 TB/s', '1 MB/s .. 100 TB/s'],
      ['filterSram', '64 GiB', '1 KiB .. 16 GiB'],
    ];
    for (const [key, value, range] of cases) {
      const warnings: string[] = [];
      const path = writeProfile('odd', { ...base, [key]: value });
      await loadHardwareProfile(path, warnings);
      expect(warnings, `${key}: ${value}`).toEqual([`${path}: key '${key}' is ${value}, outside the plausible ${range}; check its unit`]);
    }
    for (const name of shipped) {
      const warnings: string[] = [];
      await loadHardwareProfile(name, warnings);
      expect(warnings, name).toEqual([]);
    }
  });

  it('reads a number and a unit, never an expression, in range or an error naming the key (issue 22 row 5)', async () => {
    // Under mathjs evaluate this ran 92 s and ran out of memory.
    expect(await loadError(writeProfile('expr', { ...base, clock: 'sum(ones(20000,20000)) * 1 Hz' }))).toMatch(
      /expr\.json: key 'clock': 'sum\(ones\(20000,20000\)\) \* 1 Hz' is not a frequency: a number and a unit \(e\.g\. "clock": "940 MHz"\)$/,
    );
    expect(await loadError(writeProfile('times', { ...base, dramBandwidth: '2 * 900 GB/s' }))).toMatch(/times\.json: key 'dramBandwidth': '2 \* 900 GB\/s' is not a bandwidth/);
    // These overflowed to Infinity and ended in exit 1 ("internal error: ... = Infinity").
    const refused: [string, unknown, RegExp][] = [
      ['clock', '1e-300 Hz', /key 'clock' is 1e-300 Hz, outside 1 Hz \.\. 1 PHz$/],
      ['dramBandwidth', '1e-300 B/s', /key 'dramBandwidth' is 1e-300 B\/s, outside 1 B\/s \.\. 1 EB\/s$/],
      ['clock', '1e400 Hz', /key 'clock' is 1e400 Hz, outside 1 Hz \.\. 1 PHz$/],
      ['ofmapSram', '1e30 B', /key 'ofmapSram' is 1e30 B, outside 1 B \.\. 1 PiB$/],
      ['vectorOpsPerElement', { gelu: { fwd: 1e308 } }, /key 'vectorOpsPerElement': 'gelu\.fwd' must be a number from 0 to 1000000$/],
      ['vectorBytesPerCycle', 1e-300, /key 'vectorBytesPerCycle' must be at least 0\.001, got 1e-300$/],
      ['elementBytes', 2 ** 40, /key 'elementBytes' must be at most 64/],
    ];
    for (const [i, [key, value, message]] of refused.entries()) {
      expect(await loadError(writeProfile(`range${i}`, { ...base, [key]: value })), key).toMatch(message);
    }
    // 1 B/s at 1 PHz is 1e-15 words per cycle: each key is in range, the ratio is not.
    expect(await loadError(writeProfile('ratio', { ...base, clock: '1 PHz', dramBandwidth: '1 B/s' }))).toMatch(
      /ratio\.json: keys 'dramBandwidth' \/ 'clock' \/ 'elementBytes' give 1\.00e-15 DRAM words per cycle, outside 0\.000001 \.\. 1000000000000$/,
    );
    expect(await loadError(writeProfile('long', { ...base, clock: `${'1'.repeat(100)} Hz` }))).toMatch(/key 'clock': '1+\.\.\.\(\d+ characters left out\)\.\.\.1+ Hz' is not a frequency/);
  });

  it('refuses a name with control characters or longer than 100 characters (issue 22 row 14)', async () => {
    expect(await loadError(writeProfile('esc', { ...base, name: 'evil\u001b]0;pwned\u0007' }))).toMatch(
      /esc\.json: key 'name' must be at most 100 printable characters, got 'evil\\x1b\]0;pwned\\x07'$/,
    );
    expect(await loadError(writeProfile('longname', { ...base, name: 'n'.repeat(101) }))).toMatch(/key 'name' must be at most 100 printable characters/);
  });

  it('refuses FIFOs, devices and files over 1 MiB as profiles, unread (issue 22 row 11)', async () => {
    const fifo = join(dir, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    expect(await loadError(fifo)).toBe(`${fifo}: cannot read hardware profile (is a FIFO, not a regular file)`);
    expect(await loadError('/dev/zero.json').catch(() => 'absent')).toMatch(/no such file|absent/);
    const big = writeProfile('big', `${' '.repeat(2 * 1024 * 1024)}{}`);
    expect(await loadError(big)).toBe(`${big}: cannot read hardware profile (2097154 bytes, more than the limit of 1 MiB)`);
    const cfgFifo = join(dir, 'fifo.cfg');
    execFileSync('mkfifo', [cfgFifo]);
    expect(await loadError(cfgFifo)).toBe(`${cfgFifo}: cannot read SCALE-sim config (is a FIFO, not a regular file)`);
  });

  it('snaps unit round-off to whole words per cycle', async () => {
    const p = await parseHardwareProfile({ ...base, dramBandwidth: '16 B/ns' }, 'x.json', 'x');
    expect(p.dramBandwidthWordsPerCycle).toBe(16);
  });
});
