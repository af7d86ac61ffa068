/** The commander wiring main.ts uses: compare's options and translate's output-format options. */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { registerCompareCommand } from '../../src/cli/compare-command.js';
import { addParallelOptions, addHardwareOptions, addShapeOptions } from '../../src/cli/options.js';
import { addPlanOptions } from '../../src/cli/plan-options.js';
import { addTranslateOutputOptions, runTranslate } from '../../src/cli/translate.js';
import { decodedAttr, decodeEtFile } from '../../src/writers/chakra-encoding.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-wiring-'));

function program(): Command {
  const p = new Command().exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  registerCompareCommand(p);
  const translate = p.command('translate').argument('<model>').option('-o, --output <file>').option('--time-unit <unit>').option('--report <file>');
  addTranslateOutputOptions(addPlanOptions(addParallelOptions(addHardwareOptions(addShapeOptions(translate)))));
  translate.action(async (model: string, opts) => {
    await runTranslate(model, opts);
  });
  return p;
}

afterEach(() => vi.restoreAllMocks());

describe('CLI wiring', () => {
  it('compare MODEL --hardware a,b --format csv -o FILE', async () => {
    const out = join(dir, 'cmp.csv');
    await program().parseAsync(['node', 'modtrans', 'compare', 'lstm_lm', '--hardware', 'google,scale', '--format', 'csv', '-o', out]);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(lines[0]?.startsWith('layer,op,profile')).toBe(true);
    expect(lines.filter((l) => l.startsWith('TOTAL,'))).toHaveLength(2);
  });

  it('translate --format chakra --passes 2 --chakra-timing roofline -o PREFIX', async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await program().parseAsync(['node', 'modtrans', 'translate', 'alexnet', '--npus', '2', '--format', 'chakra', '--passes', '2', '--chakra-timing', 'roofline', '-o', join(dir, 'a')]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.et')).sort()).toEqual(['a.0.et', 'a.1.et']);
    // --passes 2 reached the writer: the same per-pass graph twice, the second linked to the first.
    const nodes = decodeEtFile(readFileSync(join(dir, 'a.0.et'))).nodes;
    const half = nodes.length / 2;
    expect(nodes.slice(half).map((n) => n.name)).toEqual(nodes.slice(0, half).map((n) => n.name));
    expect(nodes[half]?.data_deps).toHaveLength(1);
    const second = present(nodes[half], 'first node of the second iteration');
    expect(second.data_deps[0]).toBeLessThan(second.id);
    // --chakra-timing roofline reached it too: tensor_size 1 on every compute node (B.7 encoding).
    expect(nodes.filter((n) => n.type === 'COMP_NODE').every((n) => decodedAttr(n, 'tensor_size')?.value === 1)).toBe(true);
  });

  it('rejects an unknown format', async () => {
    await expect(program().parseAsync(['node', 'modtrans', 'translate', 'alexnet', '--format', 'xml'])).rejects.toThrow(/xml/);
  });
});
