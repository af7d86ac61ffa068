/**
 * Every `npx modtrans ...` command in a README code block runs as written on a fresh clone: it
 * exits 0 and leaves the files it names. Commands are found automatically (README.md and every
 * Markdown file under examples/), run in one process (cli-batch.ts) in a temporary folder that
 * holds the repository's examples/ as a fresh clone would. Then what the README says about those
 * outputs is checked against them: the messages it quotes, the trace node names and `num_ops`,
 * the table columns and the counts it states.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeEtFile, decodedAttr } from '../../src/writers/chakra-encoding.js';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';
import { ROOT } from '../helpers/models.js';
import { modtransCommands, readmeCommands } from '../helpers/readme-commands.js';
import { present } from '../helpers/present.js';

/** Files a command says it writes: -o FILE|DIR|PREFIX, --chart FILE, --report FILE. */
function namedOutputs(args: string[]): string[] {
  const out: string[] = [];
  args.forEach((a, i) => {
    const next = args[i + 1];
    if (['-o', '--output', '--chart', '--report', '--timeline'].includes(a) && next !== undefined && next !== '-') out.push(next);
  });
  return out;
}

const commands = readmeCommands();
// A model from the zoo needs the network, which tests must not use.
const offline = commands.filter((c) => !c.args.some((a) => a.startsWith('zoo:')) && !(c.args[0] === 'zoo' && c.args[1] === 'fetch'));

describe('README commands', () => {
  let cwd: string;
  let results: CliResult[];
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'modtrans-readme-'));
    symlinkSync(join(ROOT, 'examples'), join(cwd, 'examples'));
    results = await runCliBatch(offline.map((c) => ({ args: c.args, cwd })));
    // The batch takes ~8 s alone: the default 10 s hook limit fails it on a loaded machine.
  }, 120_000);

  it('finds the commands (the extraction itself works)', () => {
    expect(modtransCommands('```sh\nnpm ci && npx modtrans translate m -o "a b.txt"   # note\n```\nnpx modtrans outside\n')).toEqual([
      ['translate', 'm', '-o', 'a b.txt'],
    ]);
    expect(offline.length).toBeGreaterThanOrEqual(7);
    expect(offline.map((c) => c.args[0])).toEqual(expect.arrayContaining(['translate', 'inspect', 'compare', 'scalesim']));
  });

  it('every command runs as written and writes what it names', () => {
    offline.forEach((c, i) => {
      const what = `${c.file}: npx modtrans ${c.args.join(' ')}`;
      const r = present(results[i], `result of ${what}`);
      expect(r.status, `${what}\n${r.stderr}`).toBe(0);
      for (const output of namedOutputs(c.args)) {
        const path = join(cwd, output);
        // A chakra -o is a prefix (PREFIX.0.et, ...).
        const present = existsSync(path) || (existsSync(dirname(path)) && readdirSync(dirname(path)).some((f) => f.startsWith(`${basename(path)}.`)));
        expect(present, `${what}: ${output}`).toBe(true);
      }
    });
  });

  /** Result of the README command whose words are `args` (it must be one of them). */
  const resultOf = (...args: string[]): CliResult => {
    const i = offline.findIndex((c) => c.file === 'README.md' && c.args.join(' ') === args.join(' '));
    expect(i, `README command npx modtrans ${args.join(' ')}`).toBeGreaterThanOrEqual(0);
    return present(results[i], `result of ${args.join(' ')}`);
  };
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  /** README prose with line breaks as spaces (the README wraps inside code spans). */
  const prose = readme.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '').replace(/\s+/g, ' ');
  /** The code span the README puts right after `lead` (whitespace-insensitive). */
  const spanAfter = (lead: string): string => present(new RegExp(`${lead.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*\`([^\`]+)\``).exec(prose), `README: a code span after "${lead}"`)[1] ?? '';

  it('every message the README quotes from a command is in that output (... stands for anything)', () => {
    // Quoted output lines of the commands the README runs; quotes of runs it does not show (other models, GPT-3) are left out by their words.
    const prefixes = ['predicted step if the network were free: ', 'pipeline bubble ', 'chakra: ', 'clean: ', 'modtrans: pipeline ', '269 layers; plan: ', '67 vector layers folded', "Chakra's text converter ignores column 12", '(6 groups)'];
    const quoted = [...prose.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '').filter((q) => prefixes.some((p) => q.startsWith(p)));
    expect(quoted.length).toBeGreaterThanOrEqual(prefixes.length);
    const outputs = results.map((r) => `${r.stdout}\n${r.stderr}`.replace(/\s+/g, ' '));
    for (const q of quoted) {
      const parts = q.split('...').map((p) => p.replace(/\(\s*$/, '').trim()).filter((p) => p !== '');
      const found = outputs.some((o) => {
        let at = 0;
        for (const p of parts) {
          const k = o.indexOf(p, at);
          if (k < 0) return false;
          at = k + p.length;
        }
        return true;
      });
      expect(found, `README quotes \`${q}\`, which no README command prints`).toBe(true);
    }
  });

  it("the trace node names and a vector node's num_ops are what the README says", () => {
    resultOf('translate', 'gpt2_small_like', '--tp', '4', '--dp', '2', '--global-batch', '8', '--micro-batch', '2', '--dtype', 'bf16', '--format', 'chakra', '-o', 'traces/gpt2');
    const nodes = decodeEtFile(readFileSync(join(cwd, 'traces/gpt2.0.et'))).nodes;
    const names = new Set(nodes.map((n) => n.name));
    const claimed = present(/In `traces\/gpt2\.0\.et`: ((?:`[^`]+`(?:, )?)+)\./.exec(prose), 'README: the node names of traces/gpt2.0.et')[1] ?? '';
    const examples = [...claimed.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
    expect(examples.length).toBeGreaterThanOrEqual(4);
    for (const name of examples) expect(names.has(name), `node ${name}`).toBe(true);
    // The forms the README lists cover every node of the step graphs it shows.
    const forms = [/^.+\.(fwd|recompute|ig|wg)\.mb\d+$/, /^optimizer\.step$/, /^.+\.(fwd|bwd|recompute)\.(ALLREDUCE|ALLGATHER|REDUCESCATTER|ALLTOALL)\.[\w-]+\.mb\d+$/, /^(expert-)?bucket\d+\.grad\.\w+\.mb\d+$/, /^(expert-)?bucket\d+\.params\.ALLGATHER$/, /^embedding\.grad\.ALLREDUCE$/, /^optimizer\.(found-inf|grad-norm)\.ALLREDUCE$/, /^pp\.(send|recv)\.(act|grad)\.b\d+\.mb\d+$/];
    for (const prefix of ['traces/gpt2', 'traces/gpt2-pp', 'traces/gpt2-rc']) {
      for (const n of decodeEtFile(readFileSync(join(cwd, `${prefix}.0.et`))).nodes) expect(forms.some((f) => f.test(n.name)), `${prefix}: ${n.name}`).toBe(true);
    }
    const [name, numOps] = present(/`([^`]+)` has `num_ops` ([\d,]+) \(layernorm, 8 x 2 x 128 x 768\)/.exec(prose), 'README: a vector node\'s num_ops').slice(1);
    const node = present(nodes.find((n) => n.name === name), `node ${name}`);
    // The vector table's 8 operations per layernorm element, on a replicated norm's micro-batch of 2 x 128 tokens x 768.
    expect(Number(decodedAttr(node, 'num_ops')?.value)).toBe(8 * 2 * 128 * 768);
    expect(Number(numOps?.replace(/,/g, ''))).toBe(8 * 2 * 128 * 768);
    // "Each rank all-reduces 2 x 53 times over its tensor-parallel group ... plus once per step Megatron's gradient norm": rank 0's group is id 1.
    const [times] = present(/all-reduces 2 x (\d+) times over its tensor-parallel group[\s\S]*?plus once per step Megatron's gradient norm/.exec(prose), 'README: the all-reduce count').slice(1);
    expect(nodes.filter((n) => n.type === 'COMM_COLL_NODE' && decodedAttr(n, 'comm_type')?.value === 0 && decodedAttr(n, 'pg_name')?.value === '1')).toHaveLength(2 * Number(times) + 1);
    const groups = spanAfter('`traces/gpt2.comm-groups.json` =');
    expect(JSON.parse(readFileSync(join(cwd, 'traces/gpt2.comm-groups.json'), 'utf8'))).toEqual(JSON.parse(groups));
  });

  it('the columns the README names are the columns the commands print', () => {
    const inspect = resultOf('inspect', 'gpt2_small_like', '--tp', '4');
    const header = present(inspect.stdout.split('\n')[0], 'inspect header').split(/\s+/);
    const tpColumns = present(/its table adds the columns ((?:`\w+`(?:, | and )?)+)/.exec(prose), 'README: the inspect --tp columns')[1] ?? '';
    const listed = [...tpColumns.matchAll(/`(\w+)`/g)].map((m) => m[1]);
    expect(listed).toContain('role_reason');
    expect(header).toEqual(expect.arrayContaining(listed));
    expect(inspect.stdout).toContain('params one rank holds (TP 4): ');
    const memory = resultOf('memory', 'gpt2_small_like', '--tp', '2', '--dp', '2', '--global-batch', '8', '--micro-batch', '2', '--dtype', 'bf16', '--optimizer', 'adam', '--zero', '1');
    const memoryColumns = [...present(/\(columns (`ranks`[^)]*)\)/.exec(prose), 'README: the memory table columns')[1]?.matchAll(/`([^`]+)`/g) ?? []].map((m) => m[1]).filter((c) => c !== '0-63');
    expect(present(memory.stdout.split('\n')[0], 'memory header').trim().split(/\s{2,}/)).toEqual(memoryColumns);
    const csvColumns = present(/columns `stage`, `rank`[^.]*?`bytes`/.exec(prose), 'README: the timeline CSV columns')[0].matchAll(/`(\w+)`/g);
    const csvHeader = readFileSync(join(cwd, 'gpt2-vpp.csv'), 'utf8').split('\n')[0];
    // The kind and pass values listed between the columns are not columns.
    const values = new Set(['compute', 'collective', 'send', 'recv', 'fwd', 'bwd', 'recompute', 'update']);
    expect(csvHeader).toBe([...csvColumns].map((m) => m[1]).filter((c) => c !== undefined && !values.has(c)).join(','));
  });

  it('the counts the README states: 54 text lines for ResNet-50, a recompute band and chunk legend in the timelines', () => {
    expect(readFileSync(join(cwd, 'resnet50.txt'), 'utf8').split('\n')[1]).toBe('54');
    expect(prose).toContain('`resnet50.txt` has a line per GEMM layer, 54 of them');
    const svg = readFileSync(join(cwd, 'gpt2-rc.svg'), 'utf8');
    expect(svg).toContain('>recomputed forward</text>');
    const csv = readFileSync(join(cwd, 'gpt2-vpp.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
    expect(new Set(csv.filter((r) => r[2] === 'compute').map((r) => r[5]))).toEqual(new Set(['0', '1']));
  });
});
