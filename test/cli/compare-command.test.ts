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
import { expectSameBytes } from '../helpers/bytes.js';

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

  it('translate --format chakra --iterations 2 --chakra-timing roofline -o PREFIX', async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await program().parseAsync(['node', 'modtrans', 'translate', 'alexnet', '--npus', '2', '--format', 'chakra', '--iterations', '2', '--chakra-timing', 'roofline', '-o', join(dir, 'a')]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.et')).sort()).toEqual(['a.0.et', 'a.1.et']);
    // --iterations 2 reached the writer: the same per-pass graph twice, the second linked to the first.
    const nodes = decodeEtFile(readFileSync(join(dir, 'a.0.et'))).nodes;
    const half = nodes.length / 2;
    expect(nodes.slice(half).map((n) => n.name)).toEqual(nodes.slice(0, half).map((n) => n.name));
    expect(nodes[half]?.data_deps).toHaveLength(1);
    const second = present(nodes[half], 'first node of the second iteration');
    expect(second.data_deps[0]).toBeLessThan(second.id);
    // --chakra-timing roofline reached it too: tensor_size 1 on every compute node (B.7 encoding).
    expect(nodes.filter((n) => n.type === 'COMP_NODE').every((n) => decodedAttr(n, 'tensor_size')?.value === 1)).toBe(true);
  });

  it('--passes, the former name of --iterations, writes the same traces with a one-line note on stderr; both at once are refused', async () => {
    const stderr: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr.push(String(chunk));
      return true;
    });
    const run = (flag: string, prefix: string) => program().parseAsync(['node', 'modtrans', 'translate', 'alexnet', '--npus', '2', '--format', 'chakra', flag, '2', '-o', join(dir, prefix)]);
    await run('--iterations', 'new');
    expect(stderr.filter((l) => l.includes('--passes'))).toEqual([]);
    await run('--passes', 'old');
    expect(stderr.filter((l) => l.includes('--passes'))).toEqual(['modtrans: note: --passes is now --iterations (training iterations per trace file); the old name still works\n']);
    for (const rank of [0, 1]) expectSameBytes(readFileSync(join(dir, `old.${rank}.et`)), readFileSync(join(dir, `new.${rank}.et`)), `old.${rank}.et`);
    await expect(program().parseAsync(['node', 'modtrans', 'translate', 'alexnet', '--format', 'chakra', '--passes', '2', '--iterations', '2', '-o', join(dir, 'both')])).rejects.toThrow(/^--passes is the former name of --iterations: give --iterations alone$/);
  });

  it('rejects an unknown format', async () => {
    await expect(program().parseAsync(['node', 'modtrans', 'translate', 'alexnet', '--format', 'xml'])).rejects.toThrow(/xml/);
  });
});
