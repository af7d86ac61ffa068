/**
 * Where a MODEL argument points: a path, or the name of a model shipped in `examples/`. Kept below
 * both cli/ and zoo/ so that either can resolve names without importing the other.
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from './errors.js';

/** The repository's `examples/` folder (found from src/ or dist/src/). */
export function examplesDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'examples');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

/** MODEL is a path, or the name of a model shipped in examples/ ("resnet50"). */
export function resolveModelPath(model: string): string {
  if (existsSync(model)) return model;
  const examples = examplesDir();
  if (examples !== undefined && !model.includes('/')) {
    const candidate = join(examples, model.endsWith('.onnx') ? model : `${model}.onnx`);
    if (existsSync(candidate)) return candidate;
  }
  const shipped = examples === undefined ? [] : readdirSync(examples).filter((f) => f.endsWith('.onnx')).map((f) => f.replace(/\.onnx$/, ''));
  throw new InputError(`${model}: no such file${shipped.length > 0 ? ` (shipped models: ${shipped.join(', ')})` : ''}`);
}
