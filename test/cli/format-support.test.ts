/**
 * `translate`'s formats declare what they support (src/cli/format-support.ts) and the option
 * checks read the declarations: every option a format does not read is refused (exit 2 as an
 * InputError), naming the formats that do.
 */
import { describe, expect, it } from 'vitest';
import { FORMAT_SUPPORT, type FormatSupport, TRANSLATE_FORMATS, formatsWith } from '../../src/cli/format-support.js';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { InputError } from '../../src/errors.js';

const base = { dtype: 'fp32', params: 'all', hardware: 'tpu-256' } as const;

describe('translate format support', () => {
  it('names the formats of each capability, as the README lists them', () => {
    expect(TRANSLATE_FORMATS).toEqual(['text', 'chakra', 'chakra-json', 'scalesim']);
    expect(formatsWith('pipeline')).toBe('chakra or chakra-json');
    expect(formatsWith('rooflineTiming')).toBe('chakra or chakra-json');
    expect(formatsWith('vectorLayerLines')).toBe('text');
    expect(formatsWith('perRankFiles')).toBe('chakra');
    expect(formatsWith('timeUnits')).toBe('text');
  });

  for (const format of TRANSLATE_FORMATS) {
    const supports: FormatSupport = FORMAT_SUPPORT[format];
    const output: Partial<TranslateOptions> = { output: `/nonexistent/${format}` };
    const options: [string, Partial<TranslateOptions>, boolean][] = [
      ['--time-unit', { timeUnit: 'us' }, supports.timeUnits],
      ['--iterations', { iterations: 2 }, supports.iterations],
      ['--chakra-dims', { chakraDims: 2 }, supports.networkDims],
      ['--chakra-timing roofline', { chakraTiming: 'roofline' }, supports.rooflineTiming],
      ['--text-vector-layers', { textVectorLayers: 'separate' }, supports.vectorLayerLines],
    ];
    for (const [flag, opts] of options.filter(([, , supported]) => !supported)) {
      it(`--format ${format} refuses ${flag}`, async () => {
        const error = await runTranslate('alexnet', { ...base, ...output, format, ...opts }).then(() => undefined, (e: unknown) => e);
        expect(error).toBeInstanceOf(InputError);
        expect((error as Error).message.startsWith(flag)).toBe(true);
      });
    }
    if (supports.output !== undefined) {
      it(`--format ${format} needs -o ${supports.output}`, async () => {
        await expect(runTranslate('alexnet', { ...base, format })).rejects.toThrow(`--format ${format} needs -o ${supports.output}`);
      });
    }
    if (!supports.pipeline) {
      it(`--format ${format} refuses pipeline stages`, async () => {
        await expect(runTranslate('alexnet', { ...base, ...output, format, pp: 2 })).rejects.toThrow(`--pp 2: pipeline stages need --format chakra or chakra-json (the ${format} format has no point-to-point transfers)`);
      });
    }
  }
});

describe('the chakra-json dump is one JSON document in memory', () => {
  it('refuses, in one line with exit 2 and no file, a dump of more than 1,000,000 nodes (2,048 data-parallel ranks of GPT-2), pointing to --format chakra', async () => {
    const { mkdtempSync, existsSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { runCliBatch } = await import('../helpers/cli-batch.js');
    const dir = mkdtempSync(join(tmpdir(), 'modtrans-json-dump-'));
    const [r] = await runCliBatch([{ args: ['translate', 'gpt2_small_like', '--dp', '2048', '--format', 'chakra-json', '-o', join(dir, 'd.json')], cwd: dir }]);
    expect(r?.status).toBe(2);
    const lines = (r?.stderr ?? '').trim().split('\n');
    expect(lines[lines.length - 1]).toMatch(/^modtrans: --format chakra-json: the dump would hold [\d,]+ nodes over 2,048 ranks, more than the limit of 1,000,000 .*--format chakra -o PREFIX/);
    expect(existsSync(join(dir, 'd.json'))).toBe(false);
  });
});
