/**
 * Compute inside control flow, on models built here: a Silero-VAD-like network inside an If on
 * Equal(sr, 16000), chosen with --input; Loop bodies repeated by their trip count. Expected MACs
 * are M x N x K from the models' own dims (Conv: N x out positions x Cout x Cin x kernel).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { analyseModel } from '../../src/pipeline.js';
import { parseDimOptions, parseInputOptions } from '../../src/shape/bind.js';
import { buildModel, FLOAT, INT64, type GraphSpec, type TensorSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const BOOL = 9;
const dir = mkdtempSync(join(tmpdir(), 'modtrans-cf-'));
let counter = 0;
function analyse(g: GraphSpec, flags: { dim?: string[]; input?: string[] } = {}) {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, 16));
  return analyseModel(path, { dims: parseDimOptions(flags.dim ?? []), inputs: parseInputOptions(flags.input ?? []) });
}
const w = (name: string, dims: number[]): TensorSpec => ({ name, dtype: FLOAT, dims, external: { location: 'missing.bin' } });
const ints = (name: string, dims: number[], values: number[]): TensorSpec => ({ name, dtype: INT64, dims, values });

/** One branch: Conv (`${tag}.conv.weight`: Cout filters of 3 over 1 channel, same padding) -> Transpose -> MatMul to 32. */
function branch(tag: string): GraphSpec {
  return {
    name: tag,
    inputs: [],
    outputs: [{ name: `y_${tag}`, dtype: FLOAT, dims: [1, 64, 32] }],
    nodes: [
      { op: 'Conv', inputs: ['x', `${tag}.conv.weight`], outputs: [`c_${tag}`], attrs: { kernel_shape: [3], pads: [1, 1] } },
      { op: 'Transpose', inputs: [`c_${tag}`], outputs: [`t_${tag}`], attrs: { perm: [0, 2, 1] } },
      { op: 'MatMul', inputs: [`t_${tag}`, `${tag}.proj.weight`], outputs: [`y_${tag}`] },
    ],
  };
}

const silero: GraphSpec = {
  inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 1, 64] }, { name: 'sr', dtype: INT64, dims: [] }],
  outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
  initializers: [
    ints('c16000', [], [16000]),
    w('hi.conv.weight', [16, 1, 3]), w('hi.proj.weight', [16, 32]),
    w('lo.conv.weight', [8, 1, 3]), w('lo.proj.weight', [8, 32]),
  ],
  nodes: [
    { op: 'Equal', inputs: ['sr', 'c16000'], outputs: ['is16k'] },
    { op: 'If', inputs: ['is16k'], outputs: ['y'], attrs: { then_branch: { graph: branch('hi') }, else_branch: { graph: branch('lo') } } },
  ],
};

describe('If on an input value (Silero VAD pattern)', () => {
  it('--input sr=16000 lowers the then branch, with prefixed node names', () => {
    const { layers } = analyse(silero, { input: ['sr=16000'] });
    expect(layers.map((l) => l.node)).toEqual(['If_1/then/Conv_0', 'If_1/then/MatMul_2']);
    expect(layers[0]?.macs).toBe(64 * 16 * 1 * 3); // 64 positions x 16 filters x (1 channel x 3 taps)
    expect(layers[1]?.macs).toBe(64 * 32 * 16); // [64,16] x [16,32]
  });

  it('--input sr=8000 lowers the else branch', () => {
    const { layers } = analyse(silero, { input: ['sr=8000'] });
    expect(layers.map((l) => l.node)).toEqual(['If_1/else/Conv_0', 'If_1/else/MatMul_2']);
    expect(layers.map((l) => l.macs)).toEqual([64 * 8 * 3, 64 * 32 * 8]);
  });

  it('a condition that folds from shapes takes its branch without --input', () => {
    const model: GraphSpec = {
      ...silero,
      initializers: [...present(silero.initializers, 'silero initializers'), ints('two', [], [2]), ints('c64', [], [64])],
      nodes: [
        { op: 'Shape', inputs: ['x'], outputs: ['s'] },
        { op: 'Gather', inputs: ['s', 'two'], outputs: ['len'] },
        { op: 'Equal', inputs: ['len', 'c64'], outputs: ['is64'] },
        { op: 'If', inputs: ['is64'], outputs: ['y'], attrs: { then_branch: { graph: branch('hi') }, else_branch: { graph: branch('lo') } } },
      ],
    };
    expect(analyse(model).layers.map((l) => l.node)).toEqual(['If_3/then/Conv_0', 'If_3/then/MatMul_2']);
  });

  it('without --input, the error names the input to set', () => {
    expect(() => analyse(silero)).toThrow(InputError);
    expect(() => analyse(silero)).toThrow(/node 'If_1'.*input 'sr'.*--input sr=VALUE/);
  });

  it('GEMMs only in a branch that does not run are an error, not an empty workload', () => {
    const idle: GraphSpec = { name: 'idle', inputs: [], outputs: [{ name: 'y_idle', dtype: FLOAT, dims: [1, 64, 32] }], nodes: [{ op: 'Identity', inputs: ['z'], outputs: ['y_idle'] }] };
    const model: GraphSpec = {
      ...silero,
      inputs: [...silero.inputs, { name: 'z', dtype: FLOAT, dims: [1, 64, 32] }],
      nodes: [present(silero.nodes[0], 'silero node 0'), { op: 'If', inputs: ['is16k'], outputs: ['y'], attrs: { then_branch: { graph: idle }, else_branch: { graph: branch('lo') } } }],
    };
    expect(() => analyse(model, { input: ['sr=16000'] })).toThrow(/no GEMM layers.*sub-graphs that do not run.*'If_1'/);
    expect(analyse(model, { input: ['sr=8000'] }).layers).toHaveLength(2);
  });

  it('rejects --input for an unknown input or a value that does not fit', () => {
    expect(() => analyse(silero, { input: ['rate=16000'] })).toThrow(/no tensor input 'rate' \(inputs: x, sr\)/);
    expect(() => analyse(silero, { input: ['sr=[1,2]'] })).toThrow(/shape \[2\] does not fit input 'sr' of shape \[\]/);
  });
});

/** A Loop whose body multiplies the carried [4,16] state by a [16,16] weight. */
function loopModel(tripCount: 'constant' | 'input'): GraphSpec {
  const body: GraphSpec = {
    name: 'body',
    inputs: [{ name: 'i', dtype: INT64, dims: [] }, { name: 'cond_in', dtype: BOOL, dims: [] }, { name: 'h_in', dtype: FLOAT, dims: [4, 16] }],
    outputs: [{ name: 'cond_out', dtype: BOOL, dims: [] }, { name: 'h_out', dtype: FLOAT, dims: [4, 16] }],
    nodes: [
      { op: 'Identity', inputs: ['cond_in'], outputs: ['cond_out'] },
      { op: 'MatMul', inputs: ['h_in', 'cell.weight'], outputs: ['h1'] },
      { op: 'Tanh', inputs: ['h1'], outputs: ['h_out'] },
    ],
  };
  return {
    inputs: [{ name: 'h0', dtype: FLOAT, dims: [4, 16] }, ...(tripCount === 'input' ? [{ name: 'steps', dtype: INT64, dims: [] }] : [])],
    outputs: [{ name: 'h', dtype: FLOAT, dims: [] }],
    initializers: [w('cell.weight', [16, 16]), ints('five', [], [5]), { name: 'yes', dtype: BOOL, dims: [], values: [1] }],
    nodes: [{ op: 'Loop', inputs: [tripCount === 'input' ? 'steps' : 'five', 'yes', 'h0'], outputs: ['h'], attrs: { body: { graph: body } } }],
  };
}

describe('Loop bodies are lowered and repeated by their trip count', () => {
  it('a constant trip count of 5 multiplies the GEMM count', () => {
    const { layers } = analyse(loopModel('constant'));
    expect(layers).toHaveLength(1);
    expect(layers[0]?.node).toBe('Loop_0/body/MatMul_1');
    expect(layers[0]?.gemmCount).toBe(5);
    expect(layers[0]?.macs).toBe(5 * 4 * 16 * 16);
    expect(layers[0]?.weightParams).toBe(16 * 16); // the weight is shared by every iteration
  });

  it('a trip count from an input needs --input or a bound run-time dim, and says so', () => {
    const model = loopModel('input');
    expect(() => analyse(model)).toThrow(/node 'Loop_0'.*known only at run time; bind --dim '\?Loop_0:trips'=N/);
    expect(analyse(model, { input: ['steps=3'] }).layers[0]?.macs).toBe(3 * 4 * 16 * 16);
    expect(analyse(model, { dim: ['Loop_0:trips=7'] }).layers[0]?.macs).toBe(7 * 4 * 16 * 16);
    expect(analyse(model, { dim: ['?Loop_0:trips=2'] }).layers[0]?.macs).toBe(2 * 4 * 16 * 16);
  });
});

describe('Scan bodies are lowered and repeated by the scan length', () => {
  it('a body MatMul over 10 steps of a [10, 4, 16] input', () => {
    const body: GraphSpec = {
      name: 'step',
      inputs: [{ name: 's_in', dtype: FLOAT, dims: [4, 16] }, { name: 'x_t', dtype: FLOAT, dims: [4, 16] }],
      outputs: [{ name: 's_out', dtype: FLOAT, dims: [4, 16] }, { name: 'm', dtype: FLOAT, dims: [4, 16] }],
      nodes: [
        { op: 'MatMul', inputs: ['x_t', 'step.weight'], outputs: ['m'] },
        { op: 'Add', inputs: ['s_in', 'm'], outputs: ['s_out'] },
      ],
    };
    const { layers, inferred } = analyse({
      inputs: [{ name: 's0', dtype: FLOAT, dims: [4, 16] }, { name: 'xs', dtype: FLOAT, dims: [10, 4, 16] }],
      outputs: [{ name: 's', dtype: FLOAT, dims: [] }, { name: 'ms', dtype: FLOAT, dims: [] }],
      initializers: [w('step.weight', [16, 16])],
      nodes: [{ op: 'Scan', inputs: ['s0', 'xs'], outputs: ['s', 'ms'], attrs: { body: { graph: body }, num_scan_inputs: 1 } }],
    });
    expect(inferred.values.get('ms')?.shape).toEqual([10, 4, 16]);
    expect(layers).toHaveLength(1);
    expect(layers[0]?.node).toBe('Scan_0/body/MatMul_0');
    expect(layers[0]?.macs).toBe(10 * 4 * 16 * 16);
  });
});
