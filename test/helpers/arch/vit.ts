/**
 * torchvision's VisionTransformer as torch 1.13 exports it (opset 14, batch 1, checked against an
 * export of a small vit): the patch Conv, the class token expanded and concatenated, the position
 * embedding added (an initializer, no lookup); per encoder layer ln_1 (op by op), then
 * nn.MultiheadAttention (batch_first): a Transpose to [s, b, h], the packed in_proj (MatMul + bias)
 * chunked in three by Slices whose bounds come from Shape -> Gather -> Add -> Div -> Mul, each
 * reshaped to [s, b x heads, d] and transposed, q divided by sqrt(d), 3-D products, out_proj as a
 * Gemm on [s x b, h]; the residual; ln_2 and the GELU MLP; the final ln and the classifier head
 * on the class token.
 */
import type { BuiltModel } from './llama.js';
import { FLOAT, geluErf, layerNorm, TorchGraph } from './torch-graph.js';

export interface VitOptions {
  image: number;
  patch: number;
  layers: number;
  heads: number;
  hidden: number;
  mlp: number;
  classes: number;
}

export function vitModel(o: VitOptions): BuiltModel {
  const g = new TorchGraph(14);
  const { hidden: h, heads } = o;
  const d = h / heads;
  const patches = (o.image / o.patch) ** 2;
  const s = patches + 1;
  const conv = g.op('Conv', ['x', g.weight('conv_proj.weight', [h, 3, o.patch, o.patch]), g.weight('conv_proj.bias', [h])], '/conv_proj', { dilations: [1, 1], group: 1, kernel_shape: [o.patch, o.patch], pads: [0, 0, 0, 0], strides: [o.patch, o.patch] });
  const tokens = g.op('Transpose', [g.op('Reshape', [conv, g.ints([1, h, patches], '')], '', { allowzero: 0 })], '', { perm: [0, 2, 1] });
  const classToken = g.op('Expand', [g.weight('class_token', [1, 1, h]), g.ints([1, 1, h], '')], '');
  let x = g.op('Add', [g.op('Concat', [classToken, tokens], '', { axis: 1 }), g.weight('encoder.pos_embedding', [1, s, h])], '/encoder');
  for (let i = 0; i < o.layers; i++) {
    const p = `/encoder/layers/encoder_layer_${i}`;
    const scope = `${p}/self_attention`;
    const path = `encoder.layers.encoder_layer_${i}.self_attention`;
    const n = g.op('Transpose', [layerNorm(g, x, `${p}/ln_1`, h)], scope, { perm: [1, 0, 2] });
    const packed = g.op('Add', [g.weight(`${path}.in_proj_bias`, [3 * h]), g.op('MatMul', [n, g.matmulWeight(h, 3 * h)], scope)], scope);
    // chunk(3, dim=-1): bounds from the packed width at run time.
    const axis = g.ints([-1], scope);
    const width = g.op('Gather', [g.op('Shape', [packed], scope), axis], scope, { axis: 0 });
    const third = g.op('Div', [g.op('Add', [width, g.ints([2], scope)], scope), g.ints([3], scope)], scope);
    const bounds = [g.ints([0], scope), ...[1, 2, 3].map((k) => g.op('Mul', [third, g.ints([k], scope)], scope))];
    const chunk = (k: number): string => g.op('Reshape', [g.op('Slice', [packed, bounds[k] as string, bounds[k + 1] as string, axis], scope), g.ints([s, heads, d], scope)], scope, { allowzero: 0 });
    const q = g.op('Div', [g.op('Transpose', [chunk(0)], scope, { perm: [1, 0, 2] }), g.scalar(Math.sqrt(d), scope)], scope);
    const kt = g.op('Transpose', [chunk(1)], scope, { perm: [1, 2, 0] });
    const v = g.op('Transpose', [chunk(2)], scope, { perm: [1, 0, 2] });
    const ctx = g.op('MatMul', [g.op('Softmax', [g.op('MatMul', [q, kt], scope)], scope, { axis: -1 }), v], scope);
    const flat = g.op('Reshape', [g.op('Transpose', [ctx], scope, { perm: [1, 0, 2] }), g.ints([s, h], scope)], scope, { allowzero: 0 });
    // F.multi_head_attention_forward calls the out projection functionally: a Gemm in the attention's scope.
    const out = g.gemm(flat, scope, h, h, `${path}.out_proj`);
    const back = g.op('Transpose', [g.op('Reshape', [out, g.ints([s, 1, h], scope)], scope, { allowzero: 0 })], scope, { perm: [1, 0, 2] });
    x = g.op('Add', [back, x], p);
    const up = g.linear(layerNorm(g, x, `${p}/ln_2`, h), `${p}/mlp/mlp.0`, h, o.mlp, true, `encoder.layers.encoder_layer_${i}.mlp.0.bias`);
    const down = g.linear(geluErf(g, up, `${p}/mlp/mlp.1`), `${p}/mlp/mlp.3`, o.mlp, h, true, `encoder.layers.encoder_layer_${i}.mlp.3.bias`);
    x = g.op('Add', [x, down], p);
  }
  const first = g.op('Gather', [layerNorm(g, x, '/encoder/ln', h), g.intScalar(0, '')], '', { axis: 1 });
  const logits = g.gemm(first, '/heads/head', h, o.classes);
  g.nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  return { bytes: g.build([{ name: 'x', dtype: FLOAT, dims: [1, 3, o.image, o.image] }], [{ name: 'logits', dtype: FLOAT, dims: [1, o.classes] }]), params: g.params, buffers: g.buffers };
}
