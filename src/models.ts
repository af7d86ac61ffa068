/**
 * Where a MODEL argument points: a path, or the name of a model shipped in `examples/`. Kept below
 * both cli/ and zoo/ so that either can resolve names without importing the other.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { shippedDir, shippedNames } from './files.js';
import { InputError } from './errors.js';

/** The repository's `examples/` folder (found from src/ or dist/src/). */
export const examplesDir = (): string | undefined => shippedDir('examples');

/** MODEL is a path, or the name of a model shipped in examples/ ("resnet50"). */
export function resolveModelPath(model: string): string {
  if (existsSync(model)) return model;
  const examples = examplesDir();
  if (examples !== undefined && !model.includes('/')) {
    const candidate = join(examples, model.endsWith('.onnx') ? model : `${model}.onnx`);
    if (existsSync(candidate)) return candidate;
  }
  const shipped = examples === undefined ? [] : shippedNames(examples, '.onnx');
  throw new InputError(`${model}: no such file${shipped.length > 0 ? ` (shipped models: ${shipped.join(', ')})` : ''}`);
}
