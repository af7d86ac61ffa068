/**
 * The constant evaluator against ONNX's own expected outputs: every single-operator backend case
 * of an op it computes (test/fixtures/onnx-eval, inputs and outputs from ONNX 1.12's test data)
 * is inferred with all its inputs given, and each output's elements must equal ONNX's (floats to
 * 1e-5 relative, for float32 rounding of transcendental results; integers and booleans exactly).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isFloatDType } from '../../src/ir/dtype.js';
import { readModel } from '../../src/onnx/reader.js';
import { readTensorFile } from '../helpers/conformance.js';
import { inferShapes } from '../../src/shape/infer.js';
import { fixturePath } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const root = fixturePath('onnx-eval');
const cases = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();

function close(got: number, want: number, float: boolean): boolean {
  if (Number.isNaN(got) && Number.isNaN(want)) return true;
  if (!float) return got === want;
  return got === want || Math.abs(got - want) <= 1e-5 * Math.max(1, Math.abs(want));
}

/** Why a case's computed outputs differ from ONNX's, or undefined when they agree. */
function check(name: string): string | undefined {
  const dir = join(root, name);
  const loaded = readModel(join(dir, 'model.onnx'));
  const { graph } = loaded.model;
  const initializers = new Set(graph.initializers.map((t) => t.name));
  const inputValues = new Map(graph.inputs.filter((i) => !initializers.has(i.name)).map((input, i) => [input.name, readTensorFile(join(dir, `input_${i}.pb`))]));
  const { values } = inferShapes(loaded, { inputValues });
  for (const [j, output] of graph.outputs.entries()) {
    const want = readTensorFile(join(dir, `output_${j}.pb`)) as number[];
    const info = values.get(output.name);
    if (info?.value === undefined) return `output ${j} not computed`;
    const got = info.value as number[];
    if (got.length !== want.length) return `output ${j}: ${got.length} elements, ONNX has ${want.length}`;
    const float = isFloatDType(info.dtype);
    const k = want.findIndex((w, i) => {
      const value = got[i];
      return value === undefined || !close(value, w, float);
    });
    if (k >= 0) return `output ${j}[${k}]: ${got[k]} != ${want[k]}`;
  }
  return undefined;
}

describe('constant evaluator on ONNX backend cases', () => {
  it('covers the evaluated ops', () => {
    expect(cases.length).toBe(409);
    const ops = new Set(cases.map((c) => present(readModel(join(root, c, 'model.onnx')).model.graph.nodes[0], `node 0 of ${c}`).opType));
    for (const op of ['Reshape', 'Transpose', 'Slice', 'Concat', 'Gather', 'GatherElements', 'Expand', 'Where', 'Range', 'Cast', 'Mod', 'Div', 'Pow', 'ReduceProd', 'CumSum', 'Pad', 'GatherND', 'ScatterND', 'ScatterElements', 'Trilu', 'OneHot', 'EyeLike']) {
      expect(ops.has(op), op).toBe(true);
    }
  });

  it('computes every output as ONNX does', () => {
    const failures = cases.map((c) => [c, check(c)] as const).filter(([, why]) => why !== undefined).map(([c, why]) => `${c}: ${why}`);
    expect(failures).toEqual([]);
  });
});
