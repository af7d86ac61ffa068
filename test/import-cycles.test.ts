/**
 * Stages import only downwards: a file of a src/ folder (or one of src/'s top-level files) imports
 * only from its own folder and from folders below it in the order docs/ARCHITECTURE.md documents
 * (`onnx/ -> ir/ -> shape/ -> ... -> cli/`), and the graph of imports between folders has no
 * cycle. Built by reading every import statement of src/**\/*.ts, static, type-only, re-export
 * and dynamic `import()` alike.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Module specifiers of `import ... from 'x'`, `export ... from 'x'`, `import 'x'` and `import('x')`. */
function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const pattern = /(?:\bimport|\bexport)\s[^'"]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;
  return [...code.matchAll(pattern)].flatMap((m) => m[1] ?? m[2] ?? m[3] ?? []);
}

/** The node a src file belongs to: its top-level folder, or the file itself at src/'s root. */
const nodeOf = (file: string): string => relative(SRC, file).split(sep)[0] ?? file;

function folderGraph(files: { path: string; source: string }[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const { path, source } of files) {
    const from = nodeOf(path);
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const specifier of importSpecifiers(source)) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(path), specifier).replace(/\.js$/, '.ts');
      if (!target.startsWith(SRC + sep)) continue;
      const to = nodeOf(target);
      if (to !== from) edges.add(to);
    }
  }
  return graph;
}

/** One cycle of the graph as a path `a -> b -> ... -> a`, or undefined if it is acyclic. */
function findCycle(graph: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...stack.slice(stack.indexOf(node)), node];
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle !== undefined) return cycle;
    }
    stack.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    const cycle = visit(node);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}

/**
 * The folders (and src/'s top-level files) from the bottom up; a level's members are siblings and
 * import none of each other. docs/ARCHITECTURE.md, "Imports flow one way": the pipeline's order,
 * with the shared helpers below it ("helpers needed by two stages move down (see src/models.ts)")
 * and, above it, what "beside the pipeline" lists (compare/, scalesim/, zoo/, the library's
 * pipeline.ts) and the entry points (cli/, index.ts).
 */
const IMPORT_ORDER: readonly (readonly string[])[] = [
  ['errors.ts'],
  // files.ts also finds the shipped folders (examples/, hardware-profiles/, clusters/) for models.ts.
  ['files.ts'],
  ['maps.ts', 'models.ts', 'progress.ts', 'version.ts', 'astra-limits.ts', 'digits.ts', 'passes.ts', 'units.ts'],
  ['ir'],
  ['onnx'],
  ['shape'],
  ['layers'],
  ['structure'],
  ['cost'],
  ['plan'],
  ['costed'],
  ['schedule'],
  ['predict', 'memory'],
  ['cluster'],
  ['report'],
  ['writers'],
  ['check'],
  ['compare', 'scalesim', 'zoo', 'pipeline.ts'],
  ['cli', 'index.ts'],
];

/**
 * Imports against the documented order that main has, each named with why it stays. Every one
 * must still exist (a fixed one is taken off this list, so the test tightens).
 */
const ORDER_EXCEPTIONS: readonly { from: string; to: string; why: string }[] = [];

/** `from -> to` for every folder edge that imports upwards or sideways; nodes missing from `order` too. */
function orderViolations(graph: Map<string, Set<string>>, order: readonly (readonly string[])[]): string[] {
  const level = new Map(order.flatMap((members, i) => members.map((m) => [m, i] as const)));
  const problems: string[] = [];
  for (const [from, targets] of [...graph].sort(([a], [b]) => a.localeCompare(b))) {
    const fromLevel = level.get(from);
    if (fromLevel === undefined) {
      problems.push(`${from}: not placed in IMPORT_ORDER`);
      continue;
    }
    for (const to of [...targets].sort()) {
      const toLevel = level.get(to);
      if (toLevel === undefined) problems.push(`${to}: not placed in IMPORT_ORDER`);
      else if (toLevel >= fromLevel) problems.push(`${from} -> ${to}`);
    }
  }
  return [...new Set(problems)];
}

describe('import graph of src/', () => {
  it('reads every kind of import statement', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../b/b.js';",
      "export { c } from './c.js';",
      "import './side-effect.js';",
      "const d = await import('../d/d.js');",
      "// import { e } from './commented.js';",
      "import {\n  f,\n  g,\n} from './multi-line.js';",
    ].join('\n');
    expect(importSpecifiers(source)).toEqual(['./a.js', '../b/b.js', './c.js', './side-effect.js', '../d/d.js', './multi-line.js']);
  });

  it('finds a cycle between folders, and none in a chain', () => {
    const file = (path: string, source: string) => ({ path: join(SRC, path), source });
    const chain = [file('cli/x.ts', "import '../zoo/y.js';"), file('zoo/y.ts', "import '../errors.js';"), file('errors.ts', '')];
    expect(findCycle(folderGraph(chain))).toBeUndefined();
    const looped = [...chain, file('zoo/z.ts', "import { q } from '../cli/q.js';")];
    expect(findCycle(folderGraph(looped))).toEqual(['cli', 'zoo', 'cli']);
  });

  it('has no cycle between src folders', () => {
    const files = sourceFiles(SRC).map((path) => ({ path, source: readFileSync(path, 'utf8') }));
    const graph = folderGraph(files);
    expect(graph.size).toBeGreaterThan(10);
    expect(findCycle(graph)).toBeUndefined();
  });

  it('finds an import against the order, a sibling import, and a folder the order does not place', () => {
    const order = [['errors.ts'], ['a'], ['b', 'c'], ['d']];
    const graph = new Map([
      ['d', new Set(['b', 'errors.ts'])],
      ['b', new Set(['a'])],
      ['a', new Set(['errors.ts'])],
    ]);
    expect(orderViolations(graph, order)).toEqual([]);
    graph.set('a', new Set(['d']));
    graph.set('c', new Set(['b']));
    graph.set('e', new Set(['a']));
    expect(orderViolations(graph, order)).toEqual(['a -> d', 'c -> b', 'e: not placed in IMPORT_ORDER']);
  });

  it('imports only downwards in the documented folder order, bar the named exceptions', () => {
    const files = sourceFiles(SRC).map((path) => ({ path, source: readFileSync(path, 'utf8') }));
    const graph = folderGraph(files);
    const excepted = new Set(ORDER_EXCEPTIONS.map((e) => `${e.from} -> ${e.to}`));
    const violations = orderViolations(graph, IMPORT_ORDER);
    expect(violations.filter((v) => !excepted.has(v))).toEqual([]);
    // An exception that no longer happens comes off the list.
    expect([...excepted].filter((e) => !violations.includes(e))).toEqual([]);
  });

  it('places every src folder and top-level file in the order', () => {
    const nodes = new Set(sourceFiles(SRC).map(nodeOf));
    expect([...nodes].filter((n) => !IMPORT_ORDER.some((level) => level.includes(n))).sort()).toEqual([]);
  });

  it('keeps the stages before cost/ free of cost/ imports (layer types such as Gemm and VectorWork live in layers/ and ir/)', () => {
    const early = new Set(['onnx', 'ir', 'shape', 'layers']);
    const files = sourceFiles(SRC).filter((path) => early.has(nodeOf(path))).map((path) => ({ path, source: readFileSync(path, 'utf8') }));
    expect(files.length).toBeGreaterThan(20);
    const offending = [...folderGraph(files)].filter(([, targets]) => targets.has('cost')).map(([from]) => from);
    expect(offending).toEqual([]);
  });

  it('puts costed/ between plan/ and schedule/: nothing before it imports it, it imports nothing after plan/', () => {
    const files = sourceFiles(SRC).map((path) => ({ path, source: readFileSync(path, 'utf8') }));
    const graph = folderGraph(files);
    expect(graph.has('costed')).toBe(true);
    const before = ['onnx', 'ir', 'shape', 'layers', 'structure', 'cost', 'plan'];
    expect(before.filter((f) => graph.get(f)?.has('costed') === true)).toEqual([]);
    const after = ['schedule', 'predict', 'memory', 'report', 'writers', 'check', 'compare', 'cli', 'pipeline.ts', 'index.ts'];
    expect([...(graph.get('costed') ?? [])].filter((t) => after.includes(t))).toEqual([]);
  });
});
