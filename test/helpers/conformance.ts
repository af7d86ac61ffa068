/**
 * Runs ONNX's backend node cases (a folder per case: `model.onnx` plus `input_N.pb` for the
 * inputs whose values shapes depend on) through shape inference and compares every graph output
 * with the dtype and shape the model declares (test-only: the conformance test and its report).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../src/errors.js';
import { dimToJson, isRuntimeDim, type Dim } from '../../src/ir/dim.js';
import { dtypeName } from '../../src/ir/dtype.js';
import type { ValueType } from '../../src/ir/graph.js';
import { decodeTensor } from '../../src/onnx/decode.js';
import { readModel } from '../../src/onnx/reader.js';
import { readTensorValues } from '../../src/onnx/tensor-data.js';
import { BufferWire } from '../../src/onnx/wire.js';
import { inferShapes } from '../../src/shape/infer.js';
import type { TensorInfo } from '../../src/shape/tensor-info.js';

export type CaseStatus = 'pass' | 'fail' | 'unsupported';

export interface CaseResult {
  name: string;
  /** The op under test ('multi-node' for function-expanded cases). */
  op: string;
  status: CaseStatus;
  /** Why it failed, or a note on a pass (data-dependent dims left symbolic). */
  detail?: string;
}

/** Elements of a TensorProto file (`input_N.pb`). */
export function readTensorFile(path: string): Dim[] {
  const buf = readFileSync(path);
  const ref = decodeTensor(new BufferWire(buf, 0), buf.length);
  const values = readTensorValues(ref, { modelPath: path, readSpan: (offset, length) => buf.subarray(offset, offset + length) });
  return values.map((v) => (typeof v === 'number' ? v : 0));
}

function opOf(opTypes: readonly string[]): string {
  const [only, ...others] = new Set(opTypes);
  return only !== undefined && others.length === 0 ? only : 'multi-node';
}

/** Why an inferred value differs from its declaration, or undefined when it matches. */
export function compareWithDeclared(got: TensorInfo | undefined, declared: ValueType): { mismatch?: string; runtimeDims?: boolean } {
  if (got === undefined) return { mismatch: 'not inferred' };
  if (declared.kind === 'sequence' || declared.kind === 'optional') {
    if (got.kind !== declared.kind) return { mismatch: `${got.kind ?? 'tensor'} != ${declared.kind}` };
    const element = compareWithDeclared(got.element, declared.element);
    return element.mismatch === undefined ? element : { mismatch: `${declared.kind} element: ${element.mismatch}` };
  }
  if (declared.kind !== 'tensor') return {}; // map, sparse or undeclared: nothing to compare
  if (got.kind !== undefined) return { mismatch: `${got.kind} != tensor` };
  if (got.dtype !== declared.dtype) return { mismatch: `dtype ${dtypeName(got.dtype)} != ${dtypeName(declared.dtype)}` };
  if (declared.shape === undefined) return {};
  const want = declared.shape.map(dimToJson);
  if (got.shape === undefined || got.shape.length !== declared.shape.length) return { mismatch: `shape ${JSON.stringify(got.shape?.map(dimToJson))} != ${JSON.stringify(want)}` };
  const mine = got.shape.map(dimToJson);
  let runtimeDims = false;
  for (let i = 0; i < want.length; i++) {
    if (mine[i] === want[i]) continue;
    // ONNX's expected outputs are one run's sizes; a data-dependent dim cannot be known statically.
    const dim = got.shape[i];
    if (dim !== undefined && isRuntimeDim(dim) && typeof want[i] === 'number') {
      runtimeDims = true;
      continue;
    }
    return { mismatch: `shape ${JSON.stringify(mine)} != ${JSON.stringify(want)}` };
  }
  return { runtimeDims };
}

/** Runs one case folder. */
export function runCase(dir: string, name: string): CaseResult {
  const loaded = readModel(join(dir, 'model.onnx'));
  const { graph } = loaded.model;
  const op = opOf(graph.nodes.map((n) => (n.domain === '' ? n.opType : `${n.domain}::${n.opType}`)));
  const initializers = new Set(graph.initializers.map((t) => t.name));
  const inputValues = new Map<string, Dim[]>();
  graph.inputs.filter((i) => !initializers.has(i.name)).forEach((input, i) => {
    const file = join(dir, `input_${i}.pb`);
    if (existsSync(file)) inputValues.set(input.name, readTensorFile(file));
  });
  let values: ReadonlyMap<string, TensorInfo>;
  try {
    values = inferShapes(loaded, { inputValues }).values;
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    const message = e.message.replace(/^[^:]*model\.onnx: /, '');
    return { name, op, status: /no shape rule for op/.test(message) ? 'unsupported' : 'fail', detail: message };
  }
  const problems: string[] = [];
  let runtimeDims = false;
  for (const output of graph.outputs) {
    const r = compareWithDeclared(values.get(output.name), output.type);
    if (r.mismatch !== undefined) problems.push(`${output.name}: ${r.mismatch}`);
    runtimeDims ||= r.runtimeDims === true;
  }
  if (problems.length > 0) return { name, op, status: 'fail', detail: problems.join('; ') };
  return runtimeDims ? { name, op, status: 'pass', detail: 'data-dependent dims left symbolic' } : { name, op, status: 'pass' };
}

/** Runs every case folder under `root`, in name order. */
export function runConformance(root: string): CaseResult[] {
  const names = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  return names.map((name) => runCase(join(root, name), name));
}

/** pass / fail / unsupported counts per op, ops sorted by name. */
export function summariseByOp(results: readonly CaseResult[]): Map<string, Record<CaseStatus, number>> {
  const byOp = new Map<string, Record<CaseStatus, number>>();
  for (const r of [...results].sort((a, b) => a.op.localeCompare(b.op))) {
    const counts = byOp.get(r.op) ?? { pass: 0, fail: 0, unsupported: 0 };
    counts[r.status]++;
    byOp.set(r.op, counts);
  }
  return byOp;
}

/** A markdown table: op, pass (of which with run-time dims), fail, unsupported; then the totals. */
export function formatConformanceTable(results: readonly CaseResult[]): string {
  const symbolic = new Map<string, number>();
  for (const r of results) if (r.status === 'pass' && r.detail !== undefined) symbolic.set(r.op, (symbolic.get(r.op) ?? 0) + 1);
  const lines = ['| op | pass | of which run-time dims | fail | unsupported |', '|---|---|---|---|---|'];
  for (const [op, c] of summariseByOp(results)) lines.push(`| ${op} | ${c.pass} | ${symbolic.get(op) ?? 0} | ${c.fail} | ${c.unsupported} |`);
  const passed = results.filter((r) => r.status === 'pass').length;
  lines.push('', `${passed} / ${results.length} cases pass (${((100 * passed) / results.length).toFixed(1)}%).`);
  for (const r of results) if (r.status !== 'pass') lines.push(`- ${r.name} (${r.op}): ${r.status}: ${r.detail ?? ''}`);
  return lines.join('\n');
}
