/**
 * Rules the ONNX 1.12 conformance data does not reach: opset-23 Attention, onnxruntime fusions,
 * sequence round trips, control flow with folded and data-dependent conditions, run-time dims.
 */
import { describe, expect, it } from 'vitest';
import { dimToJson, isRuntimeDim, Sym, type Dim } from '../../src/ir/dim.js';
import { DType } from '../../src/ir/dtype.js';
import type { Graph } from '../../src/ir/graph.js';
import { inferGraph, int, ints, node, type InputSpec } from './graph.js';
import { present } from '../helpers/present.js';

const F = DType.FLOAT;
const I64 = DType.INT64;
const batch = Sym.atom('batch');
const seq = Sym.atom('sequence');
const shapeOf = (inputs: InputSpec[], nodes: Parameters<typeof inferGraph>[0], name: string, opsets?: Record<string, number>): (number | string)[] | undefined =>
  inferGraph(nodes, inputs, opsets).values.get(name)?.shape?.map(dimToJson);

describe('attention', () => {
  it('ONNX Attention (opset 23), 3-D inputs with a KV cache', () => {
    const inputs: InputSpec[] = [
      { name: 'q', dtype: F, shape: [batch, seq, 768] },
      { name: 'k', dtype: F, shape: [batch, seq, 256] },
      { name: 'v', dtype: F, shape: [batch, seq, 256] },
      { name: 'past_k', dtype: F, shape: [batch, 4, 10, 64] },
      { name: 'past_v', dtype: F, shape: [batch, 4, 10, 64] },
    ];
    const attn = node('Attention', ['q', 'k', 'v', '', 'past_k', 'past_v'], ['y', 'present_k', 'present_v', 'qk'], { q_num_heads: int(12), kv_num_heads: int(4) });
    const values = inferGraph([attn], inputs, { '': 23 }).values;
    expect(values.get('y')?.shape?.map(dimToJson)).toEqual(['batch', 'sequence', 768]);
    expect(values.get('present_k')?.shape?.map(dimToJson)).toEqual(['batch', 4, 'sequence+10', 64]);
    expect(values.get('qk')?.shape?.map(dimToJson)).toEqual(['batch', 12, 'sequence', 'sequence+10']);
  });

  it('com.microsoft Attention and SkipLayerNormalization', () => {
    const inputs: InputSpec[] = [
      { name: 'x', dtype: F, shape: [batch, seq, 768] },
      { name: 'w', dtype: F, shape: [768, 2304] },
      { name: 'b', dtype: F, shape: [2304] },
    ];
    const nodes = [
      node('Attention', ['x', 'w', 'b'], ['a', 'present'], { num_heads: int(12) }, 'com.microsoft'),
      node('SkipLayerNormalization', ['a', 'x'], ['n', 'mean', 'inv', 'sum'], {}, 'com.microsoft'),
    ];
    const values = inferGraph(nodes, inputs, { '': 17, 'com.microsoft': 1 }).values;
    expect(values.get('a')?.shape?.map(dimToJson)).toEqual(['batch', 'sequence', 768]);
    expect(values.get('present')?.shape?.map(dimToJson)).toEqual([2, 'batch', 12, 'sequence', 64]);
    expect(values.get('mean')?.shape?.map(dimToJson)).toEqual(['batch', 'sequence', 1]);
    expect(values.get('sum')?.shape?.map(dimToJson)).toEqual(['batch', 'sequence', 768]);
  });
});

describe('sequences', () => {
  it('SplitToSequence then ConcatFromSequence restores the shape', () => {
    const nodes = [
      node('SplitToSequence', ['x'], ['s'], { axis: int(1) }),
      node('ConcatFromSequence', ['s'], ['y'], { axis: int(1) }),
      node('SequenceLength', ['s'], ['n']),
    ];
    const values = inferGraph(nodes, [{ name: 'x', dtype: F, shape: [2, 5, 3] }]).values;
    expect(values.get('s')?.kind).toBe('sequence');
    expect(values.get('y')?.shape).toEqual([2, 5, 3]);
    expect(values.get('n')?.value).toEqual([5]);
  });

  it('SequenceConstruct of different lengths keeps the common dims and a run-time dim', () => {
    const nodes = [node('SequenceConstruct', ['a', 'b'], ['s']), node('SequenceAt', ['s', 'i'], ['e'])];
    const values = inferGraph(nodes, [
      { name: 'a', dtype: F, shape: [4, 2] }, { name: 'b', dtype: F, shape: [4, 3] }, { name: 'i', dtype: I64, shape: [], value: [0] },
    ]).values;
    const e = present(values.get('e')?.shape, 'shape of e');
    expect(e[0]).toBe(4);
    expect(isRuntimeDim(present(e[1], 'e[1]'))).toBe(true);
  });
});

const constGraph = (name: string, shape: number[]): Graph => ({
  name, inputs: [], outputs: [{ name: `${name}_out`, type: { kind: 'tensor', dtype: F, shape } }], valueInfo: [], initializers: [], sparseInitializers: [],
  nodes: [node('ConstantOfShape', ['outer_shape'], [`${name}_raw`]), node('Reshape', [`${name}_raw`, `${name}_target`], [`${name}_out`])],
});

describe('control flow', () => {
  const branches = (thenShape: number[], elseShape: number[]): InputSpec[] => [
    { name: 'outer_shape', dtype: I64, shape: [1], value: [6] },
    { name: 'then_target', dtype: I64, shape: [thenShape.length], value: thenShape },
    { name: 'else_target', dtype: I64, shape: [elseShape.length], value: elseShape },
  ];
  const ifNode = node('If', ['cond'], ['y'], { then_branch: { kind: 'graph', value: constGraph('then', [2, 3]) }, else_branch: { kind: 'graph', value: constGraph('else', [3, 2]) } });

  it('If with a folded condition takes its branch', () => {
    const inputs = [...branches([2, 3], [3, 2]), { name: 'cond', dtype: DType.BOOL, shape: [], value: [0] }];
    expect(shapeOf(inputs, [ifNode], 'y')).toEqual([3, 2]);
  });

  it('If with an unknown condition unifies the branches', () => {
    const inputs = [...branches([2, 3], [3, 2]), { name: 'cond', dtype: DType.BOOL, shape: [] }];
    const y = present(inferGraph([ifNode], inputs).values.get('y')?.shape, 'shape of y');
    expect(y.length).toBe(2);
    expect(y.every((d: Dim) => isRuntimeDim(d))).toBe(true);
  });
});

describe('data-dependent sizes', () => {
  it('NonZero counts folded inputs and names a run-time dim otherwise', () => {
    expect(shapeOf([{ name: 'x', dtype: I64, shape: [2, 2], value: [1, 0, 3, 4] }], [node('NonZero', ['x'], ['y'])], 'y')).toEqual([2, 3]);
    expect(shapeOf([{ name: 'x', dtype: F, shape: [2, 2] }], [node('NonZero', ['x'], ['y'])], 'y')).toEqual([2, '?NonZero:y']);
  });

  it('TopK with a symbolic K from Shape keeps it symbolic', () => {
    const nodes = [node('Shape', ['x'], ['s'], { start: int(1), end: int(2) }), node('TopK', ['x', 's'], ['v', 'i'], { axis: int(1) })];
    expect(shapeOf([{ name: 'x', dtype: F, shape: [3, seq] }], nodes, 'i')).toEqual([3, 'sequence']);
  });
});

describe('opset differences', () => {
  it('Concat-1 defaults axis to 1, Pad-1 reads paddings', () => {
    expect(shapeOf([{ name: 'a', dtype: F, shape: [2, 3] }], [node('Concat', ['a', 'a'], ['y'])], 'y', { '': 1 })).toEqual([2, 6]);
    expect(shapeOf([{ name: 'a', dtype: F, shape: [2, 3] }], [node('Pad', ['a'], ['y'], { paddings: ints([1, 0, 1, 2]) })], 'y', { '': 1 })).toEqual([4, 5]);
  });

  it('ReduceMean takes axes as an attribute before opset 18 and as an input from 18', () => {
    const x = { name: 'x', dtype: F, shape: [2, 3, 4] };
    expect(shapeOf([x], [node('ReduceMean', ['x'], ['y'], { axes: ints([1]), keepdims: int(0) })], 'y', { '': 13 })).toEqual([2, 4]);
    expect(shapeOf([x, { name: 'axes', dtype: I64, shape: [1], value: [1] }], [node('ReduceMean', ['x', 'axes'], ['y'], { keepdims: int(0) })], 'y', { '': 18 })).toEqual([2, 4]);
  });

  it('Split takes num_outputs from opset 18', () => {
    const values = inferGraph([node('Split', ['x'], ['a', 'b', 'c'], { axis: int(0), num_outputs: int(3) })], [{ name: 'x', dtype: F, shape: [7] }]).values;
    expect(['a', 'b', 'c'].map((n) => values.get(n)?.shape)).toEqual([[3], [3], [1]]);
  });
});
