/**
 * Silero VAD v5 / v6 as the npm package @ricky0123/vad-web ships them (silero_vad_v5.onnx,
 * opset 16), built here with the same structure: the whole network inside an If on
 * Equal(sr, 16000), its weights inlined as Constant nodes of the branch (not initializers); the
 * decoder squeezes the encoder's last dim in an If on Equal(Shape(x)[-1], 1), and that If's
 * output feeds Shape (rank 2 or 3 decides whether the LSTM input is unsqueezed); the LSTM's
 * weights are the outer branch's Constants, gate-reordered by Slice + Concat inside a nested If.
 * Input dims are unnamed (input.0, input.1, state.1), as in the real files. Expected MACs and
 * parameters are worked from the dims below (Conv: out positions x Cout x Cin x kernel; LSTM:
 * 4 gates x H x (C + H) per step).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { uniqueParameterCount } from '../../src/layers/params.js';
import { analyseModel } from '../../src/pipeline.js';
import { parseDimOptions, parseInputOptions } from '../../src/shape/bind.js';
import { runFirstAsProcess } from '../helpers/cli-batch.js';
import { buildModel, FLOAT, INT64, type GraphSpec, type NodeSpec } from '../helpers/onnx-builder.js';

const BOOL = 9;
const H = 8; // LSTM hidden size (the real model: 128)

/** One sample-rate branch: STFT Conv (F filters of K taps, stride K), encoder Conv (C filters of 3, stride 2, pad 1), decoder. */
function branch(tag: string, d: { F: number; K: number; C: number }): GraphSpec {
  const p = `If_0_${tag}_branch__Inline_0__`;
  const nodes: NodeSpec[] = [];
  const constant = (name: string, dtype: number, dims: number[], values?: number[]): string => {
    const out = `${p}${name}`;
    const count = dims.reduce((a, b) => a * b, 1);
    nodes.push({ op: 'Constant', inputs: [], outputs: [out], attrs: { value: { tensor: { name: '', dtype, dims, values: values ?? Array<number>(count).fill(0.5) } } } });
    return out;
  };
  const op = (type: string, inputs: string[], name: string, attrs?: NodeSpec['attrs'], outputs = 1): string => {
    const outs = Array.from({ length: outputs }, (_, i) => `${p}${name}_output_${i}`);
    nodes.push({ op: type, inputs, outputs: outs, name: `${p}${name}`, ...(attrs === undefined ? {} : { attrs }) });
    return outs[0] ?? '';
  };
  const ints = (name: string, values: number[]): string => constant(name, INT64, [values.length], values);
  const basis = constant('stft.forward_basis_buffer', FLOAT, [d.F, 1, d.K]);
  const encW = constant('encoder.0.reparam_conv.weight', FLOAT, [d.C, d.F, 3]);
  const wIh = constant('decoder.rnn.weight_ih', FLOAT, [4 * H, d.C]);
  const wHh = constant('decoder.rnn.weight_hh', FLOAT, [4 * H, H]);
  const decW = constant('decoder.decoder.2.weight', FLOAT, [1, H, 1]);

  const x = op('Unsqueeze', ['input', ints('one', [1])], '/stft/Unsqueeze');
  const spec = op('Conv', [x, basis], '/stft/Conv', { kernel_shape: [d.K], strides: [d.K], pads: [0, 0], dilations: [1], group: 1 });
  const enc = op('Relu', [op('Conv', [spec, encW], '/encoder/0/reparam_conv/Conv', { kernel_shape: [3], strides: [2], pads: [1, 1], dilations: [1], group: 1 })], '/encoder/0/activation/Relu');
  // decoder: x.squeeze(-1) when the last dim is 1 (an If on the shape).
  const last = op('Gather', [op('Shape', [enc], '/decoder/Shape'), ints('minus_one', [-1])], '/decoder/Gather', { axis: 0 });
  const isOne = op('Equal', [last, ints('one_b', [1])], '/decoder/Equal');
  const squeezed = op('If', [isOne], '/decoder/If', {
    then_branch: { graph: { name: 'sq', inputs: [], outputs: [{ name: `${p}/decoder/Squeeze_output_0`, dtype: FLOAT, dims: [] }], nodes: [{ op: 'Squeeze', inputs: [enc, ints('sq_axes', [-1])], outputs: [`${p}/decoder/Squeeze_output_0`] }] } },
    else_branch: { graph: { name: 'id', inputs: [], outputs: [{ name: `${p}/decoder/Identity_output_0`, dtype: FLOAT, dims: [] }], nodes: [{ op: 'Identity', inputs: [enc], outputs: [`${p}/decoder/Identity_output_0`] }] } },
  });
  // The LSTM cell, in an If on the state's first dim (bool(state.shape[0])).
  const hasState = op('Cast', [op('Squeeze', [op('Gather', [op('Shape', ['state'], '/decoder/Shape_1'), ints('zero', [0])], '/decoder/Gather_1', { axis: 0 }), ints('zero_b', [0])], '/decoder/Squeeze_1')], '/decoder/Cast', { to: BOOL });
  const q = `${p}/decoder/rnn/`;
  const inner: NodeSpec[] = [];
  const innerOp = (type: string, inputs: string[], name: string, attrs?: NodeSpec['attrs'], outputs = 1): string => {
    const outs = Array.from({ length: outputs }, (_, i) => `${q}${name}_output_${i}`);
    inner.push({ op: type, inputs, outputs: outs, name: `${q}${name}`, ...(attrs === undefined ? {} : { attrs }) });
    return outs[0] ?? '';
  };
  const innerInts = (name: string, values: number[]): string => {
    const out = `${q}${name}`;
    inner.push({ op: 'Constant', inputs: [], outputs: [out], attrs: { value: { tensor: { name: '', dtype: INT64, dims: [values.length], values } } } });
    return out;
  };
  // rank = Size(Shape(x)); a rank-2 x is unsqueezed to one time step.
  const rank2 = innerOp('Equal', [innerOp('Size', [innerOp('Shape', [squeezed], 'Shape')], 'Size'), innerInts('two', [2])], 'Equal');
  const seq = innerOp('If', [rank2], 'If', {
    then_branch: { graph: { name: 'us', inputs: [], outputs: [{ name: `${q}Unsqueeze_output_0`, dtype: FLOAT, dims: [] }], nodes: [{ op: 'Unsqueeze', inputs: [squeezed, ints('us_axes', [0])], outputs: [`${q}Unsqueeze_output_0`] }] } },
    else_branch: { graph: { name: 'id2', inputs: [], outputs: [{ name: `${q}Identity_output_0`, dtype: FLOAT, dims: [] }], nodes: [{ op: 'Identity', inputs: [squeezed], outputs: [`${q}Identity_output_0`] }] } },
  });
  // PyTorch's gate order (i, f, g, o) to ONNX's (i, o, f, c): three Slices and a Concat per weight.
  const reorder = (w: string, name: string): string => {
    const s = (from: number, to: number, k: number): string => innerOp('Slice', [w, innerInts(`${name}_s${k}`, [from]), innerInts(`${name}_e${k}`, [to]), innerInts(`${name}_a${k}`, [0])], `${name}_Slice_${k}`);
    const cat = innerOp('Concat', [s(0, H, 0), s(3 * H, 4 * H, 1), s(H, 3 * H, 2)], `${name}_Concat`, { axis: 0 });
    return innerOp('Unsqueeze', [cat, innerInts(`${name}_u`, [0])], `${name}_Unsqueeze`);
  };
  const h0 = innerOp('Unsqueeze', [innerOp('Gather', ['state', innerInts('h_index', [0])], 'Gather_h', { axis: 0 }), innerInts('h_u', [0])], 'Unsqueeze_h');
  const c0 = innerOp('Unsqueeze', [innerOp('Gather', ['state', innerInts('c_index', [1])], 'Gather_c', { axis: 0 }), innerInts('c_u', [0])], 'Unsqueeze_c');
  innerOp('LSTM', [seq, reorder(wIh, 'W'), reorder(wHh, 'R'), '', '', h0, c0], 'LSTM', { hidden_size: H }, 3);
  const yh = `${q}LSTM_output_1`;
  const yc = `${q}LSTM_output_2`;
  const rnnOut = innerOp('Squeeze', [yh, innerInts('yh_axes', [0])], 'Squeeze');
  const state = innerOp('Concat', [yh, yc], 'Concat_state', { axis: 0 });
  const rnn = op('If', [hasState], '/decoder/If_1', {
    then_branch: { graph: { name: 'rnn', inputs: [], outputs: [{ name: rnnOut, dtype: FLOAT, dims: [] }, { name: state, dtype: FLOAT, dims: [] }], nodes: inner } },
    else_branch: { graph: { name: 'none', inputs: [], outputs: [{ name: `${p}/nh`, dtype: FLOAT, dims: [] }, { name: `${p}/ns`, dtype: FLOAT, dims: [] }], nodes: [{ op: 'Identity', inputs: [squeezed], outputs: [`${p}/nh`] }, { op: 'Identity', inputs: ['state'], outputs: [`${p}/ns`] }] } },
  }, 2);
  const head = op('Relu', [op('Unsqueeze', [rnn, ints('head_u', [-1])], '/decoder/Unsqueeze')], '/decoder/decoder.1/Relu');
  const prob = op('Sigmoid', [op('Conv', [head, decW], '/decoder/decoder.2/Conv', { kernel_shape: [1], pads: [0, 0], strides: [1], dilations: [1], group: 1 })], '/decoder/decoder.3/Sigmoid');
  nodes.push({ op: 'Identity', inputs: [prob], outputs: [`${p}out`] }, { op: 'Identity', inputs: [`${p}/decoder/If_1_output_1`], outputs: [`${p}stateN`] });
  return { name: `${tag}_branch`, inputs: [], outputs: [{ name: `${p}out`, dtype: FLOAT, dims: [] }, { name: `${p}stateN`, dtype: FLOAT, dims: [] }], nodes };
}

const HI = { F: 6, K: 8, C: 4 }; // 16 kHz branch
const LO = { F: 4, K: 4, C: 2 }; // 8 kHz branch
const silero: GraphSpec = {
  name: 'main_graph',
  inputs: [{ name: 'input', dtype: FLOAT, dims: ['', ''] }, { name: 'state', dtype: FLOAT, dims: [2, '', H] }, { name: 'sr', dtype: INT64, dims: [] }],
  outputs: [{ name: 'output', dtype: FLOAT, dims: [] }, { name: 'stateN', dtype: FLOAT, dims: [] }],
  nodes: [
    { op: 'Constant', inputs: [], outputs: ['Constant_0_output'], attrs: { value: { tensor: { name: '', dtype: INT64, dims: [], values: [16000] } } } },
    { op: 'Equal', inputs: ['sr', 'Constant_0_output'], outputs: ['Equal_0_C'], name: 'Equal_0' },
    { op: 'If', inputs: ['Equal_0_C'], outputs: ['If_0_outputs_0', 'If_0_outputs_1'], name: 'If_0', attrs: { then_branch: { graph: branch('then', HI) }, else_branch: { graph: branch('else', LO) } } },
    { op: 'Identity', inputs: ['If_0_outputs_0'], outputs: ['output'] },
    { op: 'Identity', inputs: ['If_0_outputs_1'], outputs: ['stateN'] },
  ],
};

const dir = mkdtempSync(join(tmpdir(), 'modtrans-silero-'));
const path = join(dir, 'silero_vad_v5_like.onnx');
writeFileSync(path, buildModel(silero, 16));

describe('Silero VAD v5 / v6 (vad-web): the network in an If on sr, an If output feeding Shape', () => {
  // 16 samples: the STFT makes 16 / 8 = 2 frames, the stride-2 encoder 1, which the decoder squeezes.
  const flags = { dims: parseDimOptions(['input.0=1', 'input.1=16', 'state.1=1']), inputs: parseInputOptions(['sr=16000']) };

  it('--input sr=16000 lowers the 16 kHz network, its Constant weights counted as parameters', () => {
    const { layers } = analyseModel(path, flags);
    const gemms = layers.filter((l) => l.macs > 0);
    expect(gemms.map((l) => l.op)).toEqual(['Conv', 'Conv', 'LSTM', 'Conv']);
    const frames = 16 / HI.K;
    expect(gemms.map((l) => l.macs)).toEqual([
      frames * HI.F * HI.K, // STFT: 2 frames x F filters x 1 channel x K taps
      1 * HI.C * HI.F * 3, // encoder: 1 position x C x F x 3
      4 * H * (HI.C + H), // one LSTM step: 4 gates x H x (C + H)
      1 * 1 * H, // decoder: 1 x 1 x H
    ]);
    // Every weight is a Constant of the branch: F x K, C x F x 3, 4H x (C + H) (through Slice/Concat), H.
    expect(uniqueParameterCount(layers)).toBe(HI.F * HI.K + HI.C * HI.F * 3 + 4 * H * (HI.C + H) + H);
    expect(gemms.find((l) => l.op === 'LSTM')?.weightParams).toBe(4 * H * (HI.C + H));
  });

  it('--input sr=8000 lowers the 8 kHz network', () => {
    const { layers } = analyseModel(path, { ...flags, inputs: parseInputOptions(['sr=8000']) });
    const frames = 16 / LO.K;
    // 4 frames -> the stride-2 encoder gives 2 positions: not squeezed, so the LSTM branch reads a rank-3 value.
    expect(layers.filter((l) => l.macs > 0)[0]?.macs).toBe(frames * LO.F * LO.K);
  });

  it('without the sequence bound, the error names the dim that decides the If (as the legacy model does)', async () => {
    // The error as a process of the built bin (its exit code); the bound run in this process (cli-batch).
    const [r, ok] = await runFirstAsProcess([
      { args: ['translate', path, '--input', 'sr=16000', '-o', join(dir, 'w.txt')], cwd: dir },
      { args: ['translate', path, '--input', 'sr=16000', '--dim', 'input.1=16', '-o', join(dir, 'w.txt')], cwd: dir },
    ]);
    expect(r?.status).toBe(2);
    expect(r?.stderr).toMatch(/is unknown: it is an output of If '[^']*\/decoder\/If', whose branches give it ranks 2 and 3 and whose condition does not fold; bind --dim input\.1=N \(input 'input', dim 1\)\n$/);
    expect(ok?.stderr).toMatch(/^modtrans: \d+ layers;/);
    expect(ok?.status).toBe(0);
  });
});

describe('a Concat of Slices is a weight only when the slices reassemble the whole weight', () => {
  const lstm = (ends: [number, number, number]): GraphSpec => {
    const slice = (k: number): NodeSpec => ({ op: 'Slice', inputs: ['W', `s${k}`, `e${k}`, 'axis0'], outputs: [`w${k}`] });
    const ints = (name: string, v: number): { name: string; dtype: number; dims: number[]; values: number[] } => ({ name, dtype: INT64, dims: [1], values: [v] });
    return {
      inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 2, 4] }],
      outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
      initializers: [
        { name: 'W', dtype: FLOAT, dims: [4 * H, 4], external: { location: 'w.bin' } },
        { name: 'R', dtype: FLOAT, dims: [1, 4 * H, H], external: { location: 'w.bin' } },
        ints('axis0', 0), ints('s0', 0), ints('e0', ends[0]), ints('s1', 3 * H), ints('e1', ends[1]), ints('s2', H), ints('e2', ends[2]), ints('u0', 0),
      ],
      nodes: [
        slice(0), slice(1), slice(2),
        { op: 'Concat', inputs: ['w0', 'w1', 'w2'], outputs: ['wc'], attrs: { axis: 0 } },
        { op: 'Unsqueeze', inputs: ['wc', 'u0'], outputs: ['wu'] },
        { op: 'LSTM', inputs: ['x', 'wu', 'R'], outputs: ['y'], attrs: { hidden_size: H } },
      ],
    };
  };
  const file = (g: GraphSpec, name: string): string => {
    const p = join(dir, name);
    writeFileSync(p, buildModel(g, 16));
    return p;
  };

  it('gates reordered (i, o, f, c from i, f, g, o): the whole W, 4H x 4', () => {
    const [layer] = analyseModel(file(lstm([H, 4 * H, 3 * H]), 'gates.onnx')).layers;
    expect(layer?.weightTensors).toEqual(['W', 'R']);
    expect(layer?.weightParams).toBe(4 * H * 4 + 4 * H * H);
  });

  it('three slices that keep only part of W are not a view of it (no parameters from W)', () => {
    // [0, H) + [3H, 4H) + [H, 2H): 3H of the 4H rows.
    const analysed = analyseModel(file(lstm([H, 4 * H, 2 * H]), 'partial.onnx'));
    expect(analysed.layers[0]?.weightTensors).toEqual(['R']);
  });
});
