/**
 * Binding graph-input dims from the command line: `--dim NAME=N` replaces a symbolic dim
 * everywhere it appears in the inputs; `--batch N` sets the leading dim of every graph input.
 */
import { InputError } from '../errors.js';
import { Sym, type Dim } from '../ir/dim.js';
import type { ValueInfo } from '../ir/graph.js';

export interface DimBindings {
  dims: ReadonlyMap<string, number>;
  batch?: number | undefined;
}

/** Parses repeated `NAME=N` options. */
export function parseDimOptions(values: readonly string[]): Map<string, number> {
  const dims = new Map<string, number>();
  for (const text of values) {
    const m = /^([^=\s]+)=(\d+)$/.exec(text.trim());
    if (!m) throw new InputError(`--dim ${text}: expected NAME=N with N a positive integer`);
    const n = Number(m[2]);
    if (!Number.isSafeInteger(n) || n <= 0) throw new InputError(`--dim ${text}: the size must be a positive integer`);
    dims.set(m[1]!, n);
  }
  return dims;
}

function substitute(d: Dim, dims: ReadonlyMap<string, number>): Dim {
  if (typeof d === 'number') return d;
  const name = d.toString();
  return dims.get(name) ?? d;
}

/**
 * The re-batching `--batch` implies for a static export: every graph input whose leading dim is a
 * number was exported at that batch. Undefined when nothing changes; an error when the inputs
 * disagree on their exported batch (the leading dims would not all be batch dims).
 */
export function rebatchOf(file: string, inputs: readonly ValueInfo[], batch: number | undefined): { from: number; to: number } | undefined {
  if (batch === undefined) return undefined;
  const exported = new Set<number>();
  for (const input of inputs) {
    const lead = input.type.kind === 'tensor' ? input.type.shape?.[0] : undefined;
    if (typeof lead === 'number') exported.add(lead);
  }
  if (exported.size === 0) return undefined;
  // Inputs that disagree on their leading dim are not all batched: keep --batch as it is.
  if (exported.size > 1) return undefined;
  const from = [...exported][0]!;
  // Exports made at batch 1 (the usual) are re-batched; others keep their constant targets.
  if (from === batch || from !== 1) return undefined;
  return { from, to: batch };
}

/** Input shapes with bindings applied; unknown `--dim` names are an error listing the real ones. */
export function bindInputShapes(file: string, inputs: readonly ValueInfo[], bindings: DimBindings): Map<string, Dim[] | undefined> {
  const out = new Map<string, Dim[] | undefined>();
  const symbols = new Set<string>();
  for (const input of inputs) {
    if (input.type.kind !== 'tensor' || input.type.shape === undefined) {
      out.set(input.name, undefined);
      continue;
    }
    for (const d of input.type.shape) if (d instanceof Sym) symbols.add(d.toString());
    let shape = input.type.shape.map((d) => substitute(d, bindings.dims));
    if (bindings.batch !== undefined && shape.length > 0) shape = [bindings.batch, ...shape.slice(1)];
    out.set(input.name, shape);
  }
  for (const name of bindings.dims.keys()) {
    if (!symbols.has(name)) {
      const known = symbols.size > 0 ? `symbolic dims: ${[...symbols].sort().join(', ')}` : 'no symbolic dims';
      throw new InputError(`${file}: --dim ${name}: the model's inputs have no dim named '${name}' (${known})`);
    }
  }
  return out;
}
