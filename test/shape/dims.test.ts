/**
 * Dims the user must bind are named as inputs: unnamed input dims get `<input>.<axis>` names,
 * unbound-dim errors name the input dims behind an expression, run-time sizes (NonZero, Resize
 * from an input) are bindable with --dim, and --input gives graph inputs' values.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dimAdd, dimFloorDiv, dimMul, dimSub, dimToJson, runtimeDim, Sym, unboundSymbols, type Dim } from '../../src/ir/dim.js';
import { readModel } from '../../src/onnx/reader.js';
import { analyseModel, inferModel } from '../../src/pipeline.js';
import { bindingHints, parseDimOptions, parseInputOptions } from '../../src/shape/bind.js';
import { buildModel, FLOAT, INT64, type GraphSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';
import { runCliBatch } from '../helpers/cli-batch.js';
import { modelPath } from '../helpers/models.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-dims-'));
let counter = 0;
function write(g: GraphSpec, opset = 13): string {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, opset));
  return path;
}
const flags = (dim: string[] = [], input: string[] = []) => ({ dims: parseDimOptions(dim), inputs: parseInputOptions(input) });
const w = (name: string, dims: number[]) => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });
const shapeOf = (path: string, name: string, dim: string[] = [], input: string[] = []) =>
  inferModel(path, flags(dim, input)).inferred.values.get(name)?.shape?.map(dimToJson);

describe('unnamed input dims', () => {
  // Silero's exports declare dims with neither dim_value nor dim_param.
  const model: GraphSpec = {
    inputs: [{ name: 'x', dtype: FLOAT, dims: ['', 3, ''] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
    nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }],
  };

  it('are named <input>.<axis>, the same on every decode', () => {
    const path = write(model);
    const first = present(readModel(path).model.graph.inputs[0], 'input 0');
    const second = present(readModel(path).model.graph.inputs[0], 'input 0');
    expect(first.type.kind === 'tensor' && first.type.shape?.map(dimToJson)).toEqual(['x.0', 3, 'x.2']);
    expect(second.type.kind === 'tensor' && second.type.shape?.map(dimToJson)).toEqual(['x.0', 3, 'x.2']);
  });

  it('bind with --dim <input>.<axis>=N', () => {
    expect(shapeOf(write(model), 'y', ['x.2=5'])).toEqual(['x.0', 3, 5]);
  });
});

describe('unbound-dim errors name the input dims to bind', () => {
  it('traces floor((p2o.DynamicDimension.1-1)/(2)) back to input x dim 2 (PaddleOCR export)', () => {
    const path = write({
      inputs: [{ name: 'x', dtype: FLOAT, dims: ['p2o.DynamicDimension.0', 3, 'p2o.DynamicDimension.1', 'p2o.DynamicDimension.2'] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [w('conv.weight', [8, 3, 3, 3])],
      nodes: [{ op: 'Conv', inputs: ['x', 'conv.weight'], outputs: ['y'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [2, 2] } }],
    });
    let message = '';
    try {
      analyseModel(path, flags(['p2o.DynamicDimension.0=1']));
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("bind --dim p2o.DynamicDimension.1=N (input 'x', dim 2), --dim p2o.DynamicDimension.2=N (input 'x', dim 3)");
    expect(message).not.toMatch(/--dim floor/);
    // Bound as told, H = W = 33 -> floor((33 + 2 - 3) / 2) + 1 = 17 output rows and columns.
    const { layers } = analyseModel(path, flags(['p2o.DynamicDimension.0=1', 'p2o.DynamicDimension.1=33', 'p2o.DynamicDimension.2=33']));
    expect(layers[0]?.macs).toBe(17 * 17 * 8 * 3 * 3 * 3);
  });
});

describe('binding hints for expressions', () => {
  const inputs = [{ name: 'x', type: { kind: 'tensor' as const, dtype: FLOAT, shape: [Sym.atom('seq'), Sym.atom('seq_len')] } }];
  it('find whole input symbols and run-time atoms inside opaque expressions', () => {
    const text = (d: Dim) => unboundSymbols([d]);
    expect(bindingHints(text(dimFloorDiv(dimAdd(Sym.atom('seq_len'), 1), 2)), inputs)).toEqual(["--dim seq_len=N (input 'x', dim 1)"]);
    expect(bindingHints(text(dimFloorDiv(dimSub(runtimeDim('pads[0]'), 1), 2)), inputs)).toEqual(["--dim '?pads[0]'=N (a size known only at run time)"]);
    expect(bindingHints(text(dimMul(Sym.atom('seq'), runtimeDim('NonZero:i'))), inputs)).toEqual([
      "--dim '?NonZero:i'=N (a size known only at run time)", "--dim seq=N (input 'x', dim 0)",
    ]);
  });
});

describe('--batch and a --dim on the same leading dim', () => {
  it('conflicting sizes are an input error in every command (exit 2, one line); equal ones are fine', async () => {
    const model = modelPath('bert_base_like_dynamic');
    const cwd = mkdtempSync(join(tmpdir(), 'modtrans-batch-dim-'));
    const calls = ['inspect', 'shapes', 'memory'].map((command) => ({ args: [command, model, '--batch', '4', '--dim', 'batch=2', '--dim', 'sequence=8'], cwd }));
    const results = await runCliBatch([...calls, { args: ['inspect', model, '--batch', '2', '--dim', 'batch=2', '--dim', 'sequence=8'], cwd }]);
    for (const r of results.slice(0, 3)) {
      expect(r.status).toBe(2);
      // (memory plans a run: its batch check names the micro-batch it would make)
      expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/--dim batch=2 and --batch 4 conflict: (both set the leading dim|the first binds the batch dim) of input 'input_ids'/)]);
    }
    expect(results[3]?.status, results[3]?.stderr).toBe(0);
  });
});

describe('a mixture-of-experts routing mask sizes its NonZero (uniform routing, shape/routing.ts)', () => {
  // Router scores [T, E] -> TopK(k) indices [T, k]; the mask of expert 0 in three export forms.
  const routing = (mask: GraphSpec['nodes'], tokens: number | string, experts: number, k: number, leading: (number | string)[] = []): GraphSpec => ({
    inputs: [{ name: 'scores', dtype: FLOAT, dims: [...leading, tokens, experts] }],
    outputs: [{ name: 'pairs', dtype: INT64, dims: [] }],
    initializers: [],
    nodes: [
      { op: 'Constant', inputs: [], outputs: ['k'], attrs: { value: { tensor: { name: 'k', dtype: INT64, dims: [1], values: [k] } } } },
      { op: 'Constant', inputs: [], outputs: ['e'], attrs: { value: { tensor: { name: 'e', dtype: INT64, dims: [], values: [0] } } } },
      { op: 'Constant', inputs: [], outputs: ['depth'], attrs: { value: { tensor: { name: 'depth', dtype: INT64, dims: [1], values: [experts] } } } },
      { op: 'Constant', inputs: [], outputs: ['onoff'], attrs: { value: { tensor: { name: 'onoff', dtype: INT64, dims: [2], values: [0, 1] } } } },
      { op: 'Constant', inputs: [], outputs: ['slots'], attrs: { value: { tensor: { name: 'slots', dtype: INT64, dims: [1], values: [1] } } } },
      { op: 'TopK', inputs: ['scores', 'k'], outputs: ['weights', 'chosen'], attrs: { axis: -1 } },
      ...mask,
      { op: 'NonZero', inputs: ['mask'], outputs: ['pairs'] },
    ],
  });
  const oneHotSlice: GraphSpec['nodes'] = [
    { op: 'OneHot', inputs: ['chosen', 'depth', 'onoff'], outputs: ['hot'], attrs: { axis: -1 } },
    { op: 'Transpose', inputs: ['hot'], outputs: ['perm'], attrs: { perm: [2, 1, 0] } },
    { op: 'Gather', inputs: ['perm', 'e'], outputs: ['slice'], attrs: { axis: 0 } },
    { op: 'Cast', inputs: ['slice'], outputs: ['mask'], attrs: { to: 9 } },
  ];
  const equal: GraphSpec['nodes'] = [{ op: 'Equal', inputs: ['chosen', 'e'], outputs: ['mask'] }];
  // any(one_hot(chosen), dim=1) [T, E]: token routed to expert e, a share of k / E.
  const routedToken: GraphSpec['nodes'] = [
    { op: 'OneHot', inputs: ['chosen', 'depth', 'onoff'], outputs: ['hot'], attrs: { axis: -1 } },
    { op: 'ReduceMax', inputs: ['hot'], outputs: ['any'], attrs: { axes: [1], keepdims: 0 } },
    { op: 'Cast', inputs: ['any'], outputs: ['mask'], attrs: { to: 9 } },
  ];

  it.each([
    ["one-hot slice [k, T] (HF Mixtral)", oneHotSlice, 64, 8, 2, (64 * 2) / 8],
    ['choices == e [T, k]', equal, 64, 8, 2, (64 * 2) / 8],
    ['any over the top-k axis [T, E]: all experts, k / E each', routedToken, 64, 8, 2, 64 * 8 * (2 / 8)],
    ['a share that does not divide: rounded up', equal, 10, 4, 1, Math.ceil(10 / 4)],
  ] as const)('%s', (_, mask, tokens, experts, k, count) => {
    expect(shapeOf(write(routing(mask, tokens, experts, k)), 'pairs')).toEqual([2, count]);
  });

  it('Switch Transformers: one-hot of the ArgMax expert, cut to capacity (cumsum <= capacity): 1 / E of the tokens', () => {
    const switchMask: GraphSpec['nodes'] = [
      { op: 'ArgMax', inputs: ['scores'], outputs: ['top1'], attrs: { axis: -1, keepdims: 0 } },
      { op: 'OneHot', inputs: ['top1', 'depth', 'onoff'], outputs: ['hot'], attrs: { axis: -1 } },
      { op: 'CumSum', inputs: ['hot', 'e'], outputs: ['position'] },
      { op: 'LessOrEqual', inputs: ['position', 'depth'], outputs: ['fits'] },
      { op: 'Cast', inputs: ['fits'], outputs: ['fitsInt'], attrs: { to: INT64 } },
      { op: 'Mul', inputs: ['hot', 'fitsInt'], outputs: ['kept'] },
      { op: 'Gather', inputs: ['kept', 'e'], outputs: ['column'], attrs: { axis: 1 } },
      { op: 'Cast', inputs: ['column'], outputs: ['mask'], attrs: { to: 9 } },
    ];
    expect(shapeOf(write(routing(switchMask, 64, 8, 2)), 'pairs')).toEqual([1, 64 / 8]);
  });

  it('with a symbolic batch the count is an expression of it, so it follows --batch and --micro-batch', () => {
    // [batch, 16 tokens, 8 experts], top-2: 16 x 2 / 8 = 4 per sample.
    expect(shapeOf(write(routing(equal, 16, 8, 2, ['batch'])), 'pairs')).toEqual([3, '4*batch']);
    expect(shapeOf(write(routing(equal, 16, 8, 2, ['batch'])), 'pairs', ['batch=3'])).toEqual([3, 12]);
  });

  it('a --dim binding of the count wins; a mask not built from the choice keeps its run-time dim', () => {
    expect(shapeOf(write(routing(equal, 64, 8, 2)), 'pairs', ['?NonZero:pairs=5'])).toEqual([2, 5]);
    const scoresMask: GraphSpec['nodes'] = [{ op: 'Greater', inputs: ['weights', 'e'], outputs: ['mask'] }];
    expect(shapeOf(write(routing(scoresMask, 64, 8, 2)), 'pairs')).toEqual([2, '?NonZero:pairs']);
  });
});

describe('run-time sizes are named and bindable', () => {
  // NonZero of x [8] -> [1, ?NonZero:nz]; transposed and cast, it feeds a [1, 16] weight.
  const nonZero: GraphSpec = {
    inputs: [{ name: 'x', dtype: FLOAT, dims: [8] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
    initializers: [w('fc.weight', [1, 16])],
    nodes: [
      { op: 'NonZero', inputs: ['x'], outputs: ['nz'] },
      { op: 'Transpose', inputs: ['nz'], outputs: ['t'], attrs: { perm: [1, 0] } },
      { op: 'Cast', inputs: ['t'], outputs: ['f'], attrs: { to: FLOAT } },
      { op: 'MatMul', inputs: ['f', 'fc.weight'], outputs: ['y'] },
    ],
  };

  it('NonZero: the error says which --dim binds the count, and binding it sizes the GEMM', () => {
    const path = write(nonZero);
    expect(() => analyseModel(path)).toThrow(/bind --dim '\?NonZero:nz'=N \(a size known only at run time\)/);
    expect(analyseModel(path, flags(['NonZero:nz=5'])).layers[0]?.macs).toBe(5 * 16 * 1);
    expect(shapeOf(path, 't', ["?NonZero:nz=6"])).toEqual([6, 1]);
  });

  it('an unknown --dim name lists the input dims and the run-time sizes', () => {
    expect(() => inferModel(write(nonZero), flags(['NonZero:other=5']))).toThrow(/no dim named 'NonZero:other' \(no symbolic dims; run-time sizes: \?NonZero:nz\)/);
  });

  it('Resize whose scales are a graph input: run-time dims per axis instead of an error', () => {
    const path = write({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 3, 8, 8] }, { name: 'scales', dtype: FLOAT, dims: [4] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      nodes: [{ op: 'Resize', inputs: ['x', '', 'scales'], outputs: ['y'] }],
    });
    expect(shapeOf(path, 'y')).toEqual(['?Resize:y[0]', '?Resize:y[1]', '?Resize:y[2]', '?Resize:y[3]']);
    expect(shapeOf(path, 'y', ['Resize:y[2]=16'])).toEqual(['?Resize:y[0]', '?Resize:y[1]', 16, '?Resize:y[3]']);
    // Given the scales, the sizes are floor(dim x scale).
    expect(shapeOf(path, 'y', [], ['scales=[1,1,2,1.5]'])).toEqual([1, 3, 16, 12]);
  });
});

describe('shape arguments known only at run time give run-time dims named after the value', () => {
  const model: GraphSpec = {
    inputs: [
      { name: 'x', dtype: FLOAT, dims: [2, 12] }, { name: 'target', dtype: INT64, dims: [3] },
      { name: 'pads', dtype: INT64, dims: [4] }, { name: 'parts', dtype: INT64, dims: [2] },
    ],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
    nodes: [
      { op: 'Reshape', inputs: ['x', 'target'], outputs: ['r'] },
      { op: 'Pad', inputs: ['x', 'pads'], outputs: ['p'] },
      { op: 'Split', inputs: ['x', 'parts'], outputs: ['s0', 's1'], attrs: { axis: 1 } },
    ],
  };

  it('Split sizes from a graph input', () => {
    const path = write(model);
    expect(shapeOf(path, 's1')).toEqual([2, '?parts[1]']);
    expect(shapeOf(path, 's1', [], ['pads=[0,0,0,0]', 'parts=[5,7]'])).toEqual([2, 7]);
  });

  it('a Reshape target and Pad pads from graph inputs', () => {
    const path = write(model);
    expect(shapeOf(path, 'r')).toEqual(['?target[0]', '?target[1]', '?target[2]']);
    // Pads [b0, b1, e0, e1]: dim i grows by b_i + e_i.
    expect(shapeOf(path, 'p')).toEqual(['?pads[0]+?pads[2]+2', '?pads[1]+?pads[3]+12']);
    expect(shapeOf(path, 'r', ['target[0]=4', 'target[1]=3', 'target[2]=2'])).toEqual([4, 3, 2]);
    expect(shapeOf(path, 'p', [], ['pads=[0,1,0,3]'])).toEqual([2, 16]);
  });

  it('a bound run-time scalar enters the rule as a number (Range 0..limit step 2)', () => {
    const path = write({
      inputs: [{ name: 'limit', dtype: INT64, dims: [] }],
      outputs: [{ name: 'r', dtype: INT64, dims: [] }],
      initializers: [{ name: 'zero', dtype: INT64, dims: [], values: [0] }, { name: 'two', dtype: INT64, dims: [], values: [2] }],
      nodes: [{ op: 'Range', inputs: ['zero', 'limit', 'two'], outputs: ['r'] }],
    });
    expect(shapeOf(path, 'r', ['limit=9'])).toEqual([5]); // ceil((9 - 0) / 2)
  });
});

describe('--input values', () => {
  it('parses scalars and (nested) lists', () => {
    expect(parseInputOptions(['sr=16000', 'shape=[1,2,3]', 'm=[[1,2],[3,4]]'])).toEqual(new Map([
      ['sr', { dims: [], data: [16000] }], ['shape', { dims: [3], data: [1, 2, 3] }], ['m', { dims: [2, 2], data: [1, 2, 3, 4] }],
    ]));
    expect(() => parseInputOptions(['sr'])).toThrow(/expected NAME=VALUE/);
    expect(() => parseInputOptions(['m=[[1,2],[3]]'])).toThrow(/not regular/);
    expect(() => parseInputOptions(['m=abc'])).toThrow(/a number or a bracketed list/);
  });

  it('a Reshape target given as an input folds, a symbolic input dim taking the value\'s length', () => {
    const path = write({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 12] }, { name: 'shape', dtype: INT64, dims: ['rank'] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      nodes: [{ op: 'Reshape', inputs: ['x', 'shape'], outputs: ['y'] }],
    });
    expect(shapeOf(path, 'y', [], ['shape=[4,-1,2]'])).toEqual([4, 3, 2]);
    expect(shapeOf(path, 'shape', [], ['shape=[4,-1,2]'])).toEqual([3]);
  });
});
