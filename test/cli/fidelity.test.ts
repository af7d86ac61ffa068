/**
 * What a user meets at the terminal: one-line usage errors, words for file errors, choices in any
 * case, every written file named, the same units in inspect/compare. (A quiet end when the reader
 * closes the pipe early: test/cli/bundle.test.ts, on the built bin.)
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { modelPath } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-fidelity-'));
mkdirSync(join(dir, 'folder.onnx'));
writeFileSync(join(dir, 'cut.onnx'), readFileSync(modelPath('alexnet')).subarray(0, 1000));
const out = (name: string): string => join(dir, name);

/** The command lines below, all run in one process before the tests look at them. */
const LINES = {
  unknownOption: ['translate', 'resnet50', '--bogus'],
  misspelt: ['translate', 'resnet50', '--hardwar', 'google'],
  badChoice: ['translate', 'resnet50', '-p', 'SIDEWAYS'],
  unknownCommand: ['no-such-command'],
  missingArgument: ['translate'],
  lowerCase: ['translate', 'alexnet', '-p', 'data', '--format', 'TEXT'],
  mixedCase: ['translate', 'alexnet', '-p', 'Hybrid_Data_Model', '--mp-group', '2'],
  unknownProfile: ['inspect', 'alexnet', '--hardware', 'tpu-v9'],
  modelIsFolder: ['translate', out('folder.onnx')],
  profileIsFolder: ['inspect', 'alexnet', '--hardware', dir],
  profileMissing: ['inspect', 'alexnet', '--hardware', out('absent.json')],
  outputIsFolder: ['inspect', 'alexnet', '-o', dir],
  topologyMissing: ['scalesim', '-t', out('absent.csv'), '-c', 'google'],
  truncated: ['inspect', out('cut.onnx')],
  shapesFile: ['shapes', 'alexnet', '-o', out('shapes.json')],
  inspectFile: ['inspect', 'alexnet', '--format', 'csv', '-o', out('inspect.csv')],
  compareFiles: ['compare', 'alexnet', '--hardware', 'google,scale', '--chart', out('chart.svg'), '-o', out('compare.txt')],
  reportFile: ['translate', 'alexnet', '--report', out('report.json')],
  inspectCsv: ['inspect', 'alexnet', '--hardware', 'google', '--format', 'csv'],
  compareTable: ['compare', 'alexnet', '--hardware', 'google'],
} satisfies Record<string, string[]>;

let results: Record<keyof typeof LINES, CliResult>;
beforeAll(async () => {
  const names = Object.keys(LINES) as (keyof typeof LINES)[];
  const got = await runCliBatch(names.map((n) => ({ args: LINES[n], cwd: dir })));
  results = Object.fromEntries(names.map((n, i) => [n, present(got[i], `result of ${n}`)])) as typeof results;
});

const lines = (stderr: string): string[] => stderr.trim().split('\n');

describe('terminal behaviour', () => {
  it('usage errors are one line with exit code 2', () => {
    for (const name of ['unknownOption', 'misspelt', 'badChoice', 'unknownCommand', 'missingArgument'] as const) {
      const r = results[name];
      expect(r.status, name).toBe(2);
      expect(lines(r.stderr), name).toHaveLength(1);
      expect(r.stderr, name).toMatch(/^modtrans: /);
    }
    expect(results.misspelt.stderr).toMatch(/Did you mean --hardware\?/);
  });

  it('fixed choices are accepted in any case', () => {
    expect(results.lowerCase.status).toBe(0);
    expect(results.lowerCase.stdout.split('\n')[0]).toBe('DATA');
    expect(results.mixedCase.stdout.split('\n')[0]).toBe('HYBRID_DATA_MODEL');
  });

  it('an unknown --hardware lists the shipped profiles', () => {
    const r = results.unknownProfile;
    expect(r.status).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    for (const name of ['edge-tpu', 'eyeriss', 'gemmini', 'google', 'scale', 'tpu-256', 'tpu-v4']) expect(r.stderr).toContain(name);
  });

  it('file errors are words, not errno codes', () => {
    const cases: [keyof typeof LINES, RegExp][] = [
      ['modelIsFolder', /folder\.onnx: is a folder/],
      ['profileIsFolder', /cannot read hardware profile \(is a folder\)/],
      ['profileMissing', /absent\.json: no such file/],
      ['outputIsFolder', /: is a folder; an output must be a regular file or a new path/],
      ['topologyMissing', /absent\.csv.*\(no such file\)/],
    ];
    for (const [name, message] of cases) {
      const r = results[name];
      expect(r.status, name).toBe(2);
      expect(r.stderr, name).toMatch(message);
      expect(r.stderr, name).not.toMatch(/\bE[A-Z]{3,}\b/);
    }
  });

  it('a truncated ONNX file is called truncated', () => {
    expect(results.truncated.status).toBe(2);
    expect(results.truncated.stderr).toMatch(/cut\.onnx: the file looks truncated/);
  });

  it('every written file is named on stderr', () => {
    expect(results.shapesFile.stderr).toContain(`-> ${out('shapes.json')}`);
    expect(results.inspectFile.stderr).toContain(`-> ${out('inspect.csv')}`);
    expect(results.compareFiles.stderr).toContain(`-> ${out('chart.svg')}`);
    expect(results.compareFiles.stderr).toContain(`-> ${out('compare.txt')}`);
    expect(results.reportFile.stderr).toContain(`-> ${out('report.json')}`);
  });

  it('inspect and compare both show cycles and ns, with the same column names', () => {
    const [head, first] = results.inspectCsv.stdout.split('\n');
    const header = present(head, 'CSV header').split(',');
    for (const col of ['fwd_cycles', 'ig_cycles', 'wg_cycles', 'fwd_ns', 'ig_ns', 'wg_ns']) expect(header).toContain(col);
    const table = results.compareTable.stdout;
    for (const col of ['fwd_cycles', 'ig_cycles', 'wg_cycles', 'total_cycles', 'total_ns', 'util_pct']) expect(table).toContain(col);
    expect(table).not.toMatch(/\bus\b/);
    // google.json runs at 1000 MHz, so each ns figure equals its cycle count.
    const row = present(first, 'first CSV row').split(',');
    expect(row[header.indexOf('fwd_ns')]).toBe(row[header.indexOf('fwd_cycles')]);
  });
});
