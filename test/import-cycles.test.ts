/**
 * Stages import only downwards: the graph of imports between src/ folders (and src/'s top-level
 * files) must have no cycle. Built by reading every import statement of src/**\/*.ts, static,
 * re-export and dynamic `import()` alike.
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

  it('places cluster/ after plan/ and memory/, before report/ and writers/: it imports no later stage, and no stage before it imports it', () => {
    const files = sourceFiles(SRC).map((path) => ({ path, source: readFileSync(path, 'utf8') }));
    const graph = folderGraph(files);
    const later = ['report', 'writers', 'check', 'cli', 'compare', 'scalesim', 'zoo'];
    expect([...(graph.get('cluster') ?? [])].filter((to) => later.includes(to))).toEqual([]);
    const earlier = ['onnx', 'ir', 'shape', 'layers', 'structure', 'cost', 'plan', 'schedule', 'predict', 'memory'];
    expect(earlier.filter((from) => graph.get(from)?.has('cluster'))).toEqual([]);
    expect(graph.get('writers')?.has('cluster')).toBe(true); // writers/astra-network.ts serializes its dimensions
  });

  it('keeps the stages before cost/ free of cost/ imports (layer types such as Gemm and VectorWork live in layers/ and ir/)', () => {
    const early = new Set(['onnx', 'ir', 'shape', 'layers']);
    const files = sourceFiles(SRC).filter((path) => early.has(nodeOf(path))).map((path) => ({ path, source: readFileSync(path, 'utf8') }));
    expect(files.length).toBeGreaterThan(20);
    const offending = [...folderGraph(files)].filter(([, targets]) => targets.has('cost')).map(([from]) => from);
    expect(offending).toEqual([]);
  });
});
