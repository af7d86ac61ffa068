/** The import statements of src/ files, read as text (static, type-only, re-export and dynamic alike). */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export const SRC = resolve(__dirname, '../../src');

export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

export interface ImportStatement {
  specifier: string;
  /** `import type { ... }` / `export type { ... }`: erased at run time. */
  typeOnly: boolean;
}

/** Every import of `source`, comments stripped. Inline `type` markers on single names count as values. */
export function importStatements(source: string): ImportStatement[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const pattern = /(?:\b(import|export)(\s+type)?)\s[^'"]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;
  return [...code.matchAll(pattern)].flatMap((m) => {
    const specifier = m[3] ?? m[4] ?? m[5];
    return specifier === undefined ? [] : [{ specifier, typeOnly: m[2] !== undefined }];
  });
}

/** A file's path under src/ with forward slashes (`writers/astra-text.ts`). */
export function srcPath(file: string): string {
  return relative(SRC, file).split(sep).join('/');
}

/** An import's target as a path under src/ with forward slashes (`cost/types.ts`), or undefined for packages and node: modules. */
export function srcTarget(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
  return target.startsWith(SRC + sep) ? srcPath(target) : undefined;
}

export function readSource(path: string): string {
  return readFileSync(path, 'utf8');
}
