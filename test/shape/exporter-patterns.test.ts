/**
 * Exporters' constant arithmetic, on ONNX files built here: PyTorch's F.pad lowering (pads
 * through Mod/Sub -> Concat -> Reshape(-1, 2) -> Slice(step -1) -> Transpose -> Reshape -> Cast)
 * and Swin's windowed attention (shifted-window mask from constants, roll as Slice + Concat).
 * Expected elements follow the ONNX operator semantics, worked by hand below.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dimToJson } from '../../src/ir/dim.js';
import { analyseModel } from '../../src/pipeline.js';
import { buildModel, FLOAT, INT64, type GraphSpec, type NodeSpec, type TensorSpec } from '../helpers/onnx-builder.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-patterns-'));
let counter = 0;
function analyse(g: GraphSpec) {
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, 13));
  return analyseModel(path);
}

const ints = (name: string, dims: number[], values: number[]): TensorSpec => ({ name, dtype: INT64, dims, values });
const floats = (name: string, dims: number[], values: number[]): TensorSpec => ({ name, dtype: FLOAT, dims, values });
// Exporters write INT64_MIN + 1 as the end of a reversing slice; a double rounds it to INT64_MIN, which clamps alike.
const INT64_MIN = -(2 ** 63);
// Exporters write INT64_MAX; a JavaScript number cannot hold it, and any index past the end clamps alike.
const INT64_MAX = 2 ** 62;

describe("PyTorch F.pad's pads chain", () => {
  // x [1, 7, 10, 8] NHWC, window 4: pad_b = (4 - 7 % 4) % 4 = 1, pad_r = (4 - 10 % 4) % 4 = 2.
  // F.pad(x, (0, 0, 0, pad_r, 0, pad_b)) -> torch pads (last dim first) [0,0, 0,2, 0,1] + [0,0] for N.
  const nodes: NodeSpec[] = [
    { op: 'Shape', inputs: ['x'], outputs: ['s'] },
    { op: 'Gather', inputs: ['s', 'one'], outputs: ['h'] },
    { op: 'Gather', inputs: ['s', 'two'], outputs: ['w'] },
    { op: 'Mod', inputs: ['h', 'ws'], outputs: ['hm'] },
    { op: 'Sub', inputs: ['ws', 'hm'], outputs: ['hs'] },
    { op: 'Mod', inputs: ['hs', 'ws'], outputs: ['pad_b'] },
    { op: 'Mod', inputs: ['w', 'ws'], outputs: ['wm'] },
    { op: 'Sub', inputs: ['ws', 'wm'], outputs: ['wsub'] },
    { op: 'Mod', inputs: ['wsub', 'ws'], outputs: ['pad_r'] },
    { op: 'Unsqueeze', inputs: ['pad_r', 'ax0'], outputs: ['pr1'] },
    { op: 'Unsqueeze', inputs: ['pad_b', 'ax0'], outputs: ['pb1'] },
    { op: 'Concat', inputs: ['zeros3', 'pr1', 'zero1', 'pb1', 'zeros2'], outputs: ['pad8'], attrs: { axis: 0 } },
    { op: 'Reshape', inputs: ['pad8', 'pairs'], outputs: ['p2'] },
    { op: 'Slice', inputs: ['p2', 'starts', 'ends', 'ax0', 'steps'], outputs: ['p2r'] },
    { op: 'Transpose', inputs: ['p2r'], outputs: ['p2t'], attrs: { perm: [1, 0] } },
    { op: 'Reshape', inputs: ['p2t', 'flat'], outputs: ['pflat'] },
    { op: 'Cast', inputs: ['pflat'], outputs: ['pads'], attrs: { to: INT64 } },
    { op: 'Pad', inputs: ['x', 'pads'], outputs: ['y'] },
    { op: 'MatMul', inputs: ['y', 'proj.weight'], outputs: ['z'] },
  ];
  const model: GraphSpec = {
    inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 7, 10, 8] }],
    outputs: [{ name: 'z', dtype: FLOAT, dims: [] }],
    initializers: [
      ints('one', [], [1]), ints('two', [], [2]), ints('ws', [], [4]), ints('ax0', [1], [0]),
      ints('zeros3', [3], [0, 0, 0]), ints('zero1', [1], [0]), ints('zeros2', [2], [0, 0]),
      ints('pairs', [2], [-1, 2]), ints('starts', [1], [-1]), ints('ends', [1], [INT64_MIN]),
      ints('steps', [1], [-1]), ints('flat', [1], [-1]),
      { name: 'proj.weight', dtype: FLOAT, dims: [8, 16], external: { location: 'missing.bin' } },
    ],
    nodes,
  };

  it('computes every step of the chain and pads H by 1 and W by 2 at the end', () => {
    const { inferred, layers } = analyse(model);
    const value = (name: string) => inferred.values.get(name)?.value;
    const shape = (name: string) => inferred.values.get(name)?.shape?.map(dimToJson);
    expect(value('pad8')).toEqual([0, 0, 0, 2, 0, 1, 0, 0]);
    expect(shape('p2')).toEqual([4, 2]); // rows: (C), (W), (H), (N)
    expect(value('p2r')).toEqual([0, 0, 0, 1, 0, 2, 0, 0]); // rows reversed: (N), (H), (W), (C)
    expect(value('p2t')).toEqual([0, 0, 0, 0, 0, 1, 2, 0]); // begins of N,H,W,C then ends
    expect(value('pads')).toEqual([0, 0, 0, 0, 0, 1, 2, 0]);
    expect(shape('y')).toEqual([1, 8, 12, 8]);
    expect(layers).toHaveLength(1);
    expect(layers[0]?.macs).toBe(8 * 12 * 8 * 16);
  });
});

describe('Swin windowed attention: shifted-window mask and roll from constants', () => {
  // torchvision's mask for pad_H = pad_W = 4, window 2, shift 1: slices (0,-2), (-2,-1), (-1,None)
  // on each axis, labelled 0..8 row-major over (h slice, w slice).
  const label = [[0, 0, 1, 2], [0, 0, 1, 2], [3, 3, 4, 5], [6, 6, 7, 8]];
  const fill = (v: number) => ({ tensor: { name: 'v', dtype: INT64, dims: [1], values: [v] } });
  const model: GraphSpec = {
    inputs: [{ name: 'attn', dtype: FLOAT, dims: [4, 2, 4, 4] }],
    outputs: [{ name: 'scores', dtype: FLOAT, dims: [] }],
    initializers: [
      ints('two', [1], [2]), ints('one', [1], [1]), ints('three', [], [3]), ints('zero', [], [0]),
      ints('ax0', [1], [0]), ints('ax1', [1], [1]), ints('ax2', [1], [2]),
      ints('win4', [4], [2, 2, 2, 2]), ints('nwin', [2], [4, 4]), ints('heads', [4], [-1, 2, 4, 4]),
      floats('minus100', [], [-100]), floats('zerof', [], [0]),
      ints('r0', [], [0]), ints('r12', [], [12]), ints('r1', [], [1]), ints('grid', [2], [3, 4]),
      ints('s1', [1], [1]), ints('s2', [1], [2]), ints('big', [1], [INT64_MAX]), ints('zero1', [1], [0]),
    ],
    nodes: [
      // Region labels: rows of [0,0,1,2] * 3 + columns of [0,0,1,2].
      { op: 'ConstantOfShape', inputs: ['two'], outputs: ['a'], attrs: { value: fill(0) } },
      { op: 'ConstantOfShape', inputs: ['one'], outputs: ['b'], attrs: { value: fill(1) } },
      { op: 'ConstantOfShape', inputs: ['one'], outputs: ['c'], attrs: { value: fill(2) } },
      { op: 'Concat', inputs: ['a', 'b', 'c'], outputs: ['band'], attrs: { axis: 0 } },
      { op: 'Unsqueeze', inputs: ['band', 'ax1'], outputs: ['col'] },
      { op: 'Mul', inputs: ['col', 'three'], outputs: ['col3'] },
      { op: 'Unsqueeze', inputs: ['band', 'ax0'], outputs: ['row'] },
      { op: 'Add', inputs: ['col3', 'row'], outputs: ['label'] },
      // Window partition: view(2, 2, 2, 2).permute(0, 2, 1, 3).reshape(4, 4).
      { op: 'Reshape', inputs: ['label', 'win4'], outputs: ['l4'] },
      { op: 'Transpose', inputs: ['l4'], outputs: ['lt'], attrs: { perm: [0, 2, 1, 3] } },
      { op: 'Reshape', inputs: ['lt', 'nwin'], outputs: ['m'] },
      { op: 'Unsqueeze', inputs: ['m', 'ax1'], outputs: ['m1'] },
      { op: 'Unsqueeze', inputs: ['m', 'ax2'], outputs: ['m2'] },
      { op: 'Sub', inputs: ['m1', 'm2'], outputs: ['diff'] },
      { op: 'Equal', inputs: ['diff', 'zero'], outputs: ['same'] },
      { op: 'Not', inputs: ['same'], outputs: ['other'] },
      { op: 'Where', inputs: ['other', 'minus100', 'zerof'], outputs: ['mask'] },
      // attn.view(B, nW, heads, N, N) + mask[None, :, None]: nW from the mask's own shape.
      { op: 'Unsqueeze', inputs: ['mask', 'ax1'], outputs: ['mask1'] },
      { op: 'Unsqueeze', inputs: ['mask1', 'ax0'], outputs: ['mask2'] },
      { op: 'Reshape', inputs: ['attn', 'heads'], outputs: ['attn4'] },
      { op: 'Shape', inputs: ['mask'], outputs: ['ms'] },
      { op: 'Gather', inputs: ['ms', 'zero1'], outputs: ['nw'] },
      { op: 'Concat', inputs: ['one', 'nw', 'two', 'nwin'], outputs: ['t5'], attrs: { axis: 0 } },
      { op: 'Reshape', inputs: ['attn', 't5'], outputs: ['attn5'] },
      { op: 'Add', inputs: ['attn5', 'mask2'], outputs: ['scores'] },
      // torch.roll(t, shifts=(-2, -1), dims=(0, 1)) as Slice + Concat per axis.
      { op: 'Range', inputs: ['r0', 'r12', 'r1'], outputs: ['seq'] },
      { op: 'Reshape', inputs: ['seq', 'grid'], outputs: ['t'] },
      { op: 'Slice', inputs: ['t', 's1', 'big', 'ax1'], outputs: ['t_tail'] },
      { op: 'Slice', inputs: ['t', 'zero1', 's1', 'ax1'], outputs: ['t_head'] },
      { op: 'Concat', inputs: ['t_tail', 't_head'], outputs: ['rolled1'], attrs: { axis: 1 } },
      { op: 'Slice', inputs: ['rolled1', 's2', 'big', 'ax0'], outputs: ['r_tail'] },
      { op: 'Slice', inputs: ['rolled1', 'zero1', 's2', 'ax0'], outputs: ['r_head'] },
      { op: 'Concat', inputs: ['r_tail', 'r_head'], outputs: ['rolled'], attrs: { axis: 0 } },
    ],
  };

  it('computes the label grid, the partitioned windows and the -100/0 mask', () => {
    const { inferred } = analyse(model);
    const value = (name: string) => inferred.values.get(name)?.value;
    expect(value('label')).toEqual(label.flat());
    // Window w = 2a + b holds label[2a + i][2b + j] at k = 2i + j.
    const windows = [0, 1, 2, 3].map((w) => [0, 1, 2, 3].map((k) => present(label[2 * (w >> 1) + (k >> 1)]?.[2 * (w & 1) + (k & 1)], `label of window ${w}, position ${k}`)));
    expect(value('m')).toEqual(windows.flat());
    // mask[w][p][q] = (m[w][q] - m[w][p] != 0) ? -100 : 0.
    const mask = windows.flatMap((m) => m.flatMap((mp) => m.map((mq) => (mq - mp !== 0 ? -100 : 0))));
    expect(inferred.values.get('mask')?.shape).toEqual([4, 4, 4]);
    expect(value('mask')).toEqual(mask);
    expect(inferred.values.get('scores')?.shape).toEqual([1, 4, 2, 4, 4]);
  });

  it('rolls a 3x4 grid by (-2, -1)', () => {
    const { inferred } = analyse(model);
    // roll(shift -1 on columns): [[1,2,3,0],[5,6,7,4],[9,10,11,8]]; then -2 on rows.
    expect(inferred.values.get('rolled1')?.value).toEqual([1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8]);
    expect(inferred.values.get('rolled')?.value).toEqual([9, 10, 11, 8, 1, 2, 3, 0, 5, 6, 7, 4]);
  });
});
