/**
 * Binding graph-input dims and values from the command line: `--dim NAME=N` replaces a symbolic
 * dim everywhere it appears in the inputs (or a run-time size such as `?NonZero:idx` where it is
 * created); `--batch N` sets the leading dim of every graph input; `--input NAME=VALUE` gives a
 * graph input's elements, so shape computations and If conditions that read it fold.
 */
import { defined, InputError, mapGet } from '../errors.js';
import { elementCount, isStaticShape, RUNTIME_DIM_PREFIX, shapeToString, Sym, type Dim } from '../ir/dim.js';
import type { ValueInfo } from '../ir/graph.js';
import { asDType } from './evaluate/tensor.js';

/** A graph input's elements as given on the command line: nested lists give the dims. */
export interface InputValue {
  dims: number[];
  data: number[];
}

export interface DimBindings {
  dims: ReadonlyMap<string, number>;
  batch?: number | undefined;
  /** Elements of graph inputs by name (`--input NAME=VALUE`). */
  inputs?: ReadonlyMap<string, InputValue> | undefined;
}

/** Parses repeated `NAME=N` options. */
export function parseDimOptions(values: readonly string[]): Map<string, number> {
  const dims = new Map<string, number>();
  for (const text of values) {
    const m = /^([^=\s]+)=(\d+)$/.exec(text.trim());
    if (!m) throw new InputError(`--dim ${text}: expected NAME=N with N a positive integer`);
    const n = Number(m[2]);
    if (!Number.isSafeInteger(n) || n <= 0) throw new InputError(`--dim ${text}: the size must be a positive integer`);
    dims.set(defined(m[1], 'the NAME of --dim'), n);
  }
  return dims;
}

/** `[[1,2],[3,4]]` -> dims [2, 2], data [1, 2, 3, 4]; a bare number is a scalar. */
function parseInputValue(flag: string, text: string): InputValue {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InputError(`${flag}: the value must be a number or a bracketed list such as [1,2,3]`);
  }
  const dims: number[] = [];
  const data: number[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (typeof v === 'number' && Number.isFinite(v)) {
      if (depth !== dims.length) throw new InputError(`${flag}: the nested lists are not regular`);
      data.push(v);
      return;
    }
    if (!Array.isArray(v)) throw new InputError(`${flag}: '${JSON.stringify(v)}' is not a number`);
    if (depth === dims.length) {
      if (data.length > 0) throw new InputError(`${flag}: the nested lists are not regular`);
      dims.push(v.length);
    } else if (dims[depth] !== v.length) throw new InputError(`${flag}: the nested lists are not regular`);
    for (const x of v) walk(x, depth + 1);
  };
  walk(parsed, 0);
  if (data.length !== elementCount(dims)) throw new InputError(`${flag}: the nested lists are not regular`);
  return { dims, data };
}

/** Parses repeated `NAME=VALUE` options (`sr=16000`, `shape=[1,2,3]`). */
export function parseInputOptions(values: readonly string[]): Map<string, InputValue> {
  const inputs = new Map<string, InputValue>();
  for (const text of values) {
    const m = /^([^=\s]+)=(.+)$/.exec(text.trim());
    if (!m) throw new InputError(`--input ${text}: expected NAME=VALUE, e.g. sr=16000 or shape=[1,2,3]`);
    inputs.set(defined(m[1], 'the NAME of --input'), parseInputValue(`--input ${text}`, defined(m[2], 'the VALUE of --input').trim()));
  }
  return inputs;
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
export function rebatchOf(inputs: readonly ValueInfo[], batch: number | undefined): { from: number; to: number } | undefined {
  if (batch === undefined) return undefined;
  const exported = new Set<number>();
  for (const input of inputs) {
    const lead = input.type.kind === 'tensor' ? input.type.shape?.[0] : undefined;
    if (typeof lead === 'number') exported.add(lead);
  }
  if (exported.size === 0) return undefined;
  // Inputs that disagree on their leading dim are not all batched: keep --batch as it is.
  if (exported.size > 1) return undefined;
  const from = defined([...exported][0], 'the exported batch');
  // Exports made at batch 1 (the usual) are re-batched; others keep their constant targets.
  if (from === batch || from !== 1) return undefined;
  return { from, to: batch };
}

/** Symbolic dims of the inputs' declared shapes, each with the first input and axis it sizes. */
export function inputDimSymbols(inputs: readonly ValueInfo[]): Map<string, { input: string; axis: number }> {
  const symbols = new Map<string, { input: string; axis: number }>();
  for (const input of inputs) {
    if (input.type.kind !== 'tensor' || input.type.shape === undefined) continue;
    input.type.shape.forEach((d, axis) => {
      if (d instanceof Sym && !symbols.has(d.toString())) symbols.set(d.toString(), { input: input.name, axis });
    });
  }
  return symbols;
}

/** Input shapes with bindings applied (`--dim` names that match no input dim are left to `checkDimNames`). */
export function bindInputShapes(file: string, inputs: readonly ValueInfo[], bindings: DimBindings): Map<string, Dim[] | undefined> {
  const out = new Map<string, Dim[] | undefined>();
  for (const input of inputs) {
    if (input.type.kind !== 'tensor' || input.type.shape === undefined) {
      out.set(input.name, undefined);
      continue;
    }
    // --batch sets the leading dim: a --dim binding that dimension to another size would lose unsaid.
    const lead = input.type.shape[0];
    const boundLead = lead instanceof Sym ? bindings.dims.get(lead.toString()) : undefined;
    if (bindings.batch !== undefined && boundLead !== undefined && boundLead !== bindings.batch) {
      throw new InputError(`${file}: --dim ${lead?.toString()}=${boundLead} and --batch ${bindings.batch} conflict: both set the leading dim of input '${input.name}'; give one of them`);
    }
    let shape = input.type.shape.map((d) => substitute(d, bindings.dims));
    if (bindings.batch !== undefined && shape.length > 0) shape = [bindings.batch, ...shape.slice(1)];
    out.set(input.name, shape);
  }
  return out;
}

/** Run-time sizes the user bound, by atom name (`?NonZero:idx`; the flag may omit the `?`). */
export function runtimeBindings(dims: ReadonlyMap<string, number>, inputs: readonly ValueInfo[]): Map<string, number> {
  const symbols = inputDimSymbols(inputs);
  const out = new Map<string, number>();
  for (const [name, n] of dims) {
    if (symbols.has(name)) continue;
    out.set(name.startsWith(RUNTIME_DIM_PREFIX) ? name : `${RUNTIME_DIM_PREFIX}${name}`, n);
  }
  return out;
}

/** `--dim` names that are neither input dims nor run-time sizes met during inference are errors. */
export function checkDimNames(file: string, inputs: readonly ValueInfo[], dims: ReadonlyMap<string, number>, runtimeSeen: ReadonlySet<string>): void {
  const symbols = inputDimSymbols(inputs);
  for (const name of dims.keys()) {
    const runtime = name.startsWith(RUNTIME_DIM_PREFIX) ? name : `${RUNTIME_DIM_PREFIX}${name}`;
    if (symbols.has(name) || runtimeSeen.has(runtime)) continue;
    const known = symbols.size > 0 ? `symbolic dims: ${[...symbols.keys()].sort().join(', ')}` : 'no symbolic dims';
    const runtimeNames = runtimeSeen.size > 0 ? `; run-time sizes: ${[...runtimeSeen].sort().join(', ')}` : '';
    throw new InputError(`${file}: --dim ${name}: the model's inputs have no dim named '${name}' (${known}${runtimeNames})`);
  }
}

/** Each input's TensorInfo elements from `--input`, checked against its declared (bound) shape. */
export function inputValueShapes(
  file: string,
  inputs: readonly ValueInfo[],
  shapes: ReadonlyMap<string, Dim[] | undefined>,
  values: ReadonlyMap<string, InputValue>,
): Map<string, { shape: Dim[]; value: number[] }> {
  const out = new Map<string, { shape: Dim[]; value: number[] }>();
  for (const [name, given] of values) {
    const input = inputs.find((i) => i.name === name);
    if (input === undefined || input.type.kind !== 'tensor') {
      throw new InputError(`${file}: --input ${name}: the model has no tensor input '${name}' (inputs: ${inputs.map((i) => i.name).join(', ')})`);
    }
    const declared = shapes.get(name);
    const value = given.data.map((x) => asDType(x, input.type.kind === 'tensor' ? input.type.dtype : 0));
    let shape: Dim[] = given.dims;
    if (declared !== undefined && isStaticShape(declared) && elementCount(declared) === given.data.length) shape = [...declared];
    else if (declared !== undefined) {
      const fits = declared.length === given.dims.length && declared.every((d, i) => typeof d !== 'number' || d === given.dims[i]);
      if (!fits) throw new InputError(`${file}: --input ${name}: a value of shape ${shapeToString(given.dims)} does not fit input '${name}' of shape ${shapeToString(declared)}`);
    }
    out.set(name, { shape, value });
  }
  return out;
}

/**
 * The `--dim` flags that bind the atoms of an unbound shape, each with the input dim it sizes:
 * `--dim p2o.DynamicDimension.1=N (input 'x', dim 2)`. Opaque atoms such as
 * `floor((p2o.DynamicDimension.1-1)/(2))` are traced to the input symbols they contain.
 */
export function bindingHints(atoms: readonly string[], inputs: readonly ValueInfo[]): string[] {
  const symbols = inputDimSymbols(inputs);
  // Longest names first, so `seq` inside `seq_len` is not taken for a dim of its own.
  const names = [...symbols.keys()].sort((a, b) => b.length - a.length);
  const hints = new Set<string>();
  for (const atom of atoms) {
    const found = symbols.has(atom) ? [atom] : names.filter((s) => containsSymbol(atom, s));
    const runtime = found.length > 0 && symbols.has(atom) ? [] : runtimeAtomsIn(atom);
    for (const s of found) {
      const where = mapGet(symbols, s, 'input dim symbols');
      hints.add(`--dim ${s}=N (input '${where.input}', dim ${where.axis})`);
    }
    for (const r of runtime) hints.add(`--dim '${r}'=N (a size known only at run time)`);
    if (found.length === 0 && runtime.length === 0) hints.add(`--dim ${atom}=N`);
  }
  return [...hints];
}

/** Whether `text` contains the symbol `name` as a whole token (not inside a longer name). */
function containsSymbol(text: string, name: string): boolean {
  const isNameChar = (c: string | undefined): boolean => c !== undefined && /[\w.:[\]]/.test(c);
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    if (!isNameChar(text[at - 1]) && !isNameChar(text[at + name.length])) return true;
  }
  return false;
}

/** Run-time atoms (`?Op:value`) inside an opaque expression's text. */
function runtimeAtomsIn(text: string): string[] {
  if (text.startsWith(RUNTIME_DIM_PREFIX) && !/[()]/.test(text)) return [text];
  // Operators end a name; '/' may not (PyTorch names are paths), but in opaque texts it follows ')'.
  return [...text.matchAll(/\?[^()*+\-,\s]+/g)].map((m) => m[0]);
}
