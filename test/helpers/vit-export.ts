/**
 * torchvision's VisionTransformer (vit_b_16's class) as PyTorch 1.13's exporter writes it at
 * opset 13-14 for a static batch-1 input, op by op: the op sequence was copied from
 * `torch.onnx.export(VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2,
 * hidden_dim=16, mlp_dim=32), torch.randn(1, 3, 32, 32), opset_version=14)` (torch 1.13.1,
 * torchvision 0.14.1). Every shape argument is a Constant traced at batch 1: the patch flatten
 * `reshape(n, E, n_h * n_w)`, the class token's `expand(n, -1, -1)` (a [1, -1, -1] target through
 * the exporter's ConstantOfShape/Equal/Where chain), and nn.MultiheadAttention's views
 * `(L, bsz * heads, hd)`, `(L * bsz, E)` and `(L, bsz, E)` on its seq-first layout. Weights are
 * external (graph only).
 */
import { FLOAT, INT64, type GraphSpec, type NodeSpec, type TensorSpec } from './onnx-builder.js';

export interface VitDims {
  image: number;
  patch: number;
  layers: number;
  heads: number;
  hidden: number;
  mlp: number;
  classes: number;
}

/** torchvision's vit_b_16. */
export const VIT_B_16: VitDims = { image: 224, patch: 16, layers: 12, heads: 12, hidden: 768, mlp: 3072, classes: 1000 };

const weight = (name: string, dims: number[]): TensorSpec => ({ name, dtype: FLOAT, dims, external: { location: 'vit.bin' } });

export function vitGraph(d: VitDims, options: { pinnedBatchReshape?: boolean } = {}): GraphSpec {
  const E = d.hidden;
  const patches = (d.image / d.patch) ** 2;
  const L = patches + 1;
  const hd = E / d.heads;
  const nodes: NodeSpec[] = [];
  const initializers: TensorSpec[] = [
    weight('class_token', [1, 1, E]),
    weight('conv_proj.weight', [E, 3, d.patch, d.patch]),
    weight('conv_proj.bias', [E]),
    weight('encoder.pos_embedding', [1, L, E]),
    weight('heads.head.weight', [d.classes, E]),
    weight('heads.head.bias', [d.classes]),
    weight('encoder.ln.weight', [E]),
    weight('encoder.ln.bias', [E]),
  ];
  let constants = 0;
  const constant = (dims: number[], values: number[], dtype = INT64): string => {
    const name = `/Constant_${constants++}_output_0`;
    nodes.push({ op: 'Constant', inputs: [], outputs: [name], attrs: { value: { tensor: { name: '', dtype, dims, values } } } });
    return name;
  };
  const node = (op: string, inputs: string[], name: string, attrs?: NodeSpec['attrs']): string => {
    const out = `${name}_output_0`;
    nodes.push({ op, inputs, outputs: [out], name, ...(attrs === undefined ? {} : { attrs }) });
    return out;
  };
  const layerNorm = (x: string, p: string): string => {
    const mean = node('ReduceMean', [x], `${p}/ReduceMean`, { axes: [-1] });
    const centred = node('Sub', [x, mean], `${p}/Sub`);
    const square = node('Pow', [centred, constant([], [2], FLOAT)], `${p}/Pow`);
    const variance = node('ReduceMean', [square], `${p}/ReduceMean_1`, { axes: [-1] });
    const std = node('Sqrt', [node('Add', [variance, constant([], [1e-6], FLOAT)], `${p}/Add`)], `${p}/Sqrt`);
    const scaled = node('Mul', [node('Div', [centred, std], `${p}/Div`), `${p.slice(1).replaceAll('/', '.')}.weight`], `${p}/Mul`);
    return node('Add', [scaled, `${p.slice(1).replaceAll('/', '.')}.bias`], `${p}/Add_1`);
  };

  // _process_input: conv_proj, reshape(n, E, n_h * n_w), permute(0, 2, 1).
  const conv = node('Conv', ['x', 'conv_proj.weight', 'conv_proj.bias'], '/conv_proj/Conv', { kernel_shape: [d.patch, d.patch], strides: [d.patch, d.patch], pads: [0, 0, 0, 0], dilations: [1, 1], group: 1 });
  const flat = node('Reshape', [conv, constant([3], [1, E, patches])], '/Reshape');
  const tokens = node('Transpose', [flat], '/Transpose', { perm: [0, 2, 1] });
  // class_token.expand(n, -1, -1) with n traced as 1: Where(Equal(t, -1 x ones), ones, t).
  const target = constant([3], [1, -1, -1]);
  const ones = node('ConstantOfShape', [constant([1], [3])], '/ConstantOfShape', { value: { tensor: { name: '', dtype: INT64, dims: [1], values: [1] } } });
  const minusOnes = node('Mul', [ones, constant([], [-1])], '/Mul');
  const expandTo = node('Where', [node('Equal', [target, minusOnes], '/Equal'), ones, target], '/Where');
  const cls = node('Expand', ['class_token', expandTo], '/Expand');
  let x = node('Add', [node('Concat', [cls, tokens], '/Concat', { axis: 1 }), 'encoder.pos_embedding'], '/encoder/Add');

  for (let i = 0; i < d.layers; i++) {
    const p = `/encoder/layers/encoder_layer_${i}`;
    const w = `encoder.layers.encoder_layer_${i}`;
    initializers.push(
      weight(`${w}.ln_1.weight`, [E]), weight(`${w}.ln_1.bias`, [E]), weight(`${w}.ln_2.weight`, [E]), weight(`${w}.ln_2.bias`, [E]),
      weight(`onnx::MatMul_in_proj_${i}`, [E, 3 * E]), weight(`${w}.self_attention.in_proj_bias`, [3 * E]),
      weight(`${w}.self_attention.out_proj.weight`, [E, E]), weight(`${w}.self_attention.out_proj.bias`, [E]),
      weight(`onnx::MatMul_mlp0_${i}`, [E, d.mlp]), weight(`${w}.mlp.0.bias`, [d.mlp]),
      weight(`onnx::MatMul_mlp3_${i}`, [d.mlp, E]), weight(`${w}.mlp.3.bias`, [E]),
    );
    const a = `${p}/self_attention`;
    // A planted defect for the batch-scaling check: `x.view(1, -1, E)` (the batch written as 1 by
    // hand) before the first block folds the batch into the sequence, which attention then mixes.
    if (options.pinnedBatchReshape === true && i === 0) x = node('Reshape', [x, constant([3], [1, -1, E])], '/pin/Reshape');
    // nn.MultiheadAttention is seq-first: the encoder block transposes [n, L, E] to [L, n, E].
    const seqFirst = node('Transpose', [layerNorm(x, `${p}/ln_1`)], `${a}/Transpose`, { perm: [1, 0, 2] });
    const qkv = node('Add', [`${w}.self_attention.in_proj_bias`, node('MatMul', [seqFirst, `onnx::MatMul_in_proj_${i}`], `${a}/MatMul`)], `${a}/Add`);
    // in_proj(...).chunk(3, dim=-1): Slice bounds from the last dim's size, (size + 2) / 3 x k.
    const last = node('Gather', [node('Shape', [qkv], `${a}/Shape`), constant([1], [-1])], `${a}/Gather`, { axis: 0 });
    const third = node('Div', [node('Add', [last, constant([1], [2])], `${a}/Add_1`), constant([1], [3])], `${a}/Div`);
    const bound = (k: number): string => node('Mul', [third, constant([1], [k])], `${a}/Mul${k === 1 ? '' : `_${k - 1}`}`);
    const axisLast = constant([1], [-1]);
    const b1 = bound(1);
    const b2 = bound(2);
    const b3 = bound(3);
    const q = node('Slice', [qkv, constant([1], [0]), b1, axisLast], `${a}/Slice`);
    const k = node('Slice', [qkv, b1, b2, axisLast], `${a}/Slice_1`);
    const v = node('Slice', [qkv, b2, b3, axisLast], `${a}/Slice_2`);
    // view(L, bsz * heads, hd).transpose(0, 1), traced at bsz = 1.
    const heads = (t: string, n: number): string => node('Reshape', [t, constant([3], [L, d.heads, hd])], `${a}/Reshape${n === 0 ? '' : `_${n}`}`);
    const qh = node('Transpose', [heads(q, 0)], `${a}/Transpose_1`, { perm: [1, 0, 2] });
    const kh = heads(k, 1);
    const vh = node('Transpose', [heads(v, 2)], `${a}/Transpose_2`, { perm: [1, 0, 2] });
    const scaledQ = node('Div', [qh, constant([], [Math.sqrt(hd)], FLOAT)], `${a}/Div_1`);
    const scores = node('MatMul', [scaledQ, node('Transpose', [kh], `${a}/Transpose_3`, { perm: [1, 2, 0] })], `${a}/MatMul_1`);
    const context = node('MatMul', [node('Softmax', [scores], `${a}/Softmax`, { axis: -1 }), vh], `${a}/MatMul_2`);
    // transpose(0, 1).contiguous().view(L * bsz, E), out_proj, view(L, bsz, E).
    const merged = node('Reshape', [node('Transpose', [context], `${a}/Transpose_4`, { perm: [1, 0, 2] }), constant([2], [L, E])], `${a}/Reshape_3`);
    const projected = node('Gemm', [merged, `${w}.self_attention.out_proj.weight`, `${w}.self_attention.out_proj.bias`], `${a}/Gemm`, { alpha: { float: 1 }, beta: { float: 1 }, transB: 1 });
    const attended = node('Transpose', [node('Reshape', [projected, constant([3], [L, 1, E])], `${a}/Reshape_4`)], `${a}/Transpose_5`, { perm: [1, 0, 2] });
    x = node('Add', [attended, x], `${p}/Add`);
    const m = `${p}/mlp`;
    const up = node('Add', [`${w}.mlp.0.bias`, node('MatMul', [layerNorm(x, `${p}/ln_2`), `onnx::MatMul_mlp0_${i}`], `${m}/mlp.0/MatMul`)], `${m}/mlp.0/Add`);
    const erf = node('Erf', [node('Div', [up, constant([], [Math.SQRT2], FLOAT)], `${m}/mlp.1/Div`)], `${m}/mlp.1/Erf`);
    const gelu = node('Mul', [node('Mul', [up, node('Add', [erf, constant([], [1], FLOAT)], `${m}/mlp.1/Add`)], `${m}/mlp.1/Mul`), constant([], [0.5], FLOAT)], `${m}/mlp.1/Mul_1`);
    const down = node('Add', [`${w}.mlp.3.bias`, node('MatMul', [gelu, `onnx::MatMul_mlp3_${i}`], `${m}/mlp.3/MatMul`)], `${m}/mlp.3/Add`);
    x = node('Add', [x, down], `${p}/Add_1`);
  }
  // encoder.ln, x[:, 0] (the class token), heads.head.
  const pooled = node('Gather', [layerNorm(x, '/encoder/ln'), constant([], [0])], '/Gather', { axis: 1 });
  nodes.push({ op: 'Gemm', inputs: [pooled, 'heads.head.weight', 'heads.head.bias'], outputs: ['y'], name: '/heads/head/Gemm', attrs: { alpha: { float: 1 }, beta: { float: 1 }, transB: 1 } });
  return {
    name: 'torch_jit',
    inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 3, d.image, d.image] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [1, d.classes] }],
    initializers,
    nodes,
  };
}
