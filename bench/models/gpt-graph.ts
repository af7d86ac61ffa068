/**
 * Graph-only GPT- and LLaMA-style decoder models (initializers with dims and no data), built as
 * exporters write them: embedding lookups, per block a norm, attention (fused or separate Q/K/V,
 * optional rotary embedding), a residual add, a norm and an MLP (GELU, or SiLU-gated), then a
 * final norm and an LM head (tied to the embedding through a Transpose, or its own weight).
 * Used by the tests (structure known exactly, so expected figures follow from the options) and by
 * the trace bench (a 24-layer GPT for 512 ranks).
 */
import { buildModel, FLOAT, INT64, type NodeSpec, type TensorSpec } from '../../test/helpers/onnx-builder.js';

export interface GptOptions {
  layers: number;
  hidden: number;
  heads: number;
  seq: number;
  batch: number;
  vocab: number;
  /** MLP width (default 4 x hidden). */
  ffn?: number;
  fusedQkv?: boolean;
  /** SiLU-gated MLP (LLaMA) instead of GELU. */
  gatedMlp?: boolean;
  rotary?: boolean;
  /** RMSNorm written op by op (LLaMA) instead of LayerNormalization. */
  rmsNorm?: boolean;
  tiedHead?: boolean;
  /** Learned position embeddings (GPT-2); default: unless rotary. */
  positionEmbedding?: boolean;
}

const ext = { location: 'none.bin' };

export function gptModel(o: GptOptions): Uint8Array {
  const { hidden: h, heads: a, seq: s, batch: b, vocab: V } = o;
  const d = h / a;
  const f = o.ffn ?? 4 * h;
  const nodes: NodeSpec[] = [];
  const inits: TensorSpec[] = [];
  const weight = (name: string, dims: number[]): string => {
    inits.push({ name, dtype: FLOAT, dims, external: ext });
    return name;
  };
  const ints = (name: string, values: number[]): string => {
    inits.push({ name, dtype: INT64, dims: [values.length], values });
    return name;
  };
  const scalar = (name: string, value: number): string => {
    inits.push({ name, dtype: FLOAT, dims: [], values: [value] });
    return name;
  };
  const op = (opType: string, inputs: string[], name: string, attrs?: NodeSpec['attrs'], outputs = 1): string[] => {
    const outs = Array.from({ length: outputs }, (_, i) => (outputs === 1 ? `${name}_out` : `${name}_out${i}`));
    nodes.push({ op: opType, inputs, outputs: outs, name, ...(attrs ? { attrs } : {}) });
    return outs;
  };
  const one = (opType: string, inputs: string[], name: string, attrs?: NodeSpec['attrs']): string => op(opType, inputs, name, attrs)[0]!;

  const eps = scalar('eps', 1e-5);
  const two = scalar('two', 2);
  const norm = (x: string, path: string): string => {
    const gamma = weight(`${path}.weight`, [h]);
    if (!o.rmsNorm) return one('LayerNormalization', [x, gamma, weight(`${path}.bias`, [h])], `/${path}/LayerNormalization`, { axis: -1 });
    // RMSNorm as exported op by op: x / sqrt(mean(x^2) + eps) * gamma.
    const sq = one('Pow', [x, two], `/${path}/Pow`);
    const mean = one('ReduceMean', [sq], `/${path}/ReduceMean`, { axes: [-1], keepdims: 1 });
    const root = one('Sqrt', [one('Add', [mean, eps], `/${path}/Add`)], `/${path}/Sqrt`);
    return one('Mul', [one('Div', [x, root], `/${path}/Div`), gamma], `/${path}/Mul`);
  };
  const linear = (x: string, path: string, k: number, n: number, bias: boolean): string => {
    const y = one('MatMul', [x, weight(`${path}.weight`, [k, n])], `/${path}/MatMul`);
    return bias ? one('Add', [y, weight(`${path}.bias`, [n])], `/${path}/Add`) : y;
  };
  const heads4 = ints('shape_heads', [b, s, a, d]);
  const hidden3 = ints('shape_hidden', [b, s, h]);
  const splitHalf = { starts0: ints('half_start0', [0]), ends0: ints('half_end0', [d / 2]), starts1: ints('half_start1', [d / 2]), ends1: ints('half_end1', [d]), axes: ints('last_axis', [-1]) };
  // Rotary tables are buffers, not parameters: exporters write them as constants.
  const table = (name: string): string => one('Constant', [], name, { value: { tensor: { name, dtype: FLOAT, dims: [s, d], values: new Array<number>(s * d).fill(0) } } });
  const cos = o.rotary ? table('/rotary/cos') : '';
  const sin = o.rotary ? table('/rotary/sin') : '';
  const rotate = (x: string, path: string): string => {
    const x1 = one('Slice', [x, splitHalf.starts0, splitHalf.ends0, splitHalf.axes], `${path}/Slice`);
    const x2 = one('Slice', [x, splitHalf.starts1, splitHalf.ends1, splitHalf.axes], `${path}/Slice_1`);
    const rotated = one('Concat', [one('Neg', [x2], `${path}/Neg`), x1], `${path}/Concat`, { axis: -1 });
    return one('Add', [one('Mul', [x, cos], `${path}/Mul`), one('Mul', [rotated, sin], `${path}/Mul_1`)], `${path}/Add`);
  };
  const toHeads = (x: string, path: string): string => one('Transpose', [one('Reshape', [x, heads4], `${path}/Reshape`)], `${path}/Transpose`, { perm: [0, 2, 1, 3] });

  let x = one('Gather', [weight('wte.weight', [V, h]), 'input_ids'], '/wte/Gather');
  if (o.positionEmbedding ?? !o.rotary) {
    inits.push({ name: 'position_ids', dtype: INT64, dims: [1, s], external: ext });
    x = one('Add', [x, one('Gather', [weight('wpe.weight', [s, h]), 'position_ids'], '/wpe/Gather')], '/Add');
  }
  const scale = scalar('attn_scale', Math.sqrt(d));
  for (let i = 0; i < o.layers; i++) {
    const p = `blocks.${i}`;
    const n1 = norm(x, `${p}.ln_1`);
    let q: string;
    let k: string;
    let v: string;
    if (o.fusedQkv) {
      const qkv = linear(n1, `${p}.attn.qkv`, h, 3 * h, true);
      [q, k, v] = op('Split', [qkv, ints(`${p}.split`, [h, h, h])], `/${p}/attn/Split`, { axis: -1 }, 3) as [string, string, string];
    } else {
      q = linear(n1, `${p}.attn.q`, h, h, !o.rotary);
      k = linear(n1, `${p}.attn.k`, h, h, !o.rotary);
      v = linear(n1, `${p}.attn.v`, h, h, !o.rotary);
    }
    let qh = toHeads(q, `/${p}/attn/q`);
    let kh = toHeads(k, `/${p}/attn/k`);
    const vh = toHeads(v, `/${p}/attn/v`);
    if (o.rotary) {
      qh = rotate(qh, `/${p}/attn/rotary_q`);
      kh = rotate(kh, `/${p}/attn/rotary_k`);
    }
    const kt = one('Transpose', [kh], `/${p}/attn/Transpose_k`, { perm: [0, 1, 3, 2] });
    const scores = one('Div', [one('MatMul', [qh, kt], `/${p}/attn/MatMul`), scale], `/${p}/attn/Div`);
    const probs = one('Softmax', [scores], `/${p}/attn/Softmax`, { axis: -1 });
    const ctx = one('MatMul', [probs, vh], `/${p}/attn/MatMul_1`);
    const merged = one('Reshape', [one('Transpose', [ctx], `/${p}/attn/Transpose_ctx`, { perm: [0, 2, 1, 3] }), hidden3], `/${p}/attn/Reshape_ctx`);
    x = one('Add', [x, linear(merged, `${p}.attn.o`, h, h, !o.rotary)], `/${p}/Add`);
    const n2 = norm(x, `${p}.ln_2`);
    let hiddenAct: string;
    if (o.gatedMlp) {
      const gate = linear(n2, `${p}.mlp.gate`, h, f, false);
      const up = linear(n2, `${p}.mlp.up`, h, f, false);
      const silu = one('Mul', [gate, one('Sigmoid', [gate], `/${p}/mlp/Sigmoid`)], `/${p}/mlp/Mul`);
      hiddenAct = one('Mul', [silu, up], `/${p}/mlp/Mul_1`);
    } else {
      const up = linear(n2, `${p}.mlp.fc`, h, f, true);
      const erf = one('Erf', [one('Div', [up, scalar(`${p}.sqrt2`, Math.SQRT2)], `/${p}/mlp/Div`)], `/${p}/mlp/Erf`);
      hiddenAct = one('Mul', [one('Mul', [up, scalar(`${p}.half`, 0.5)], `/${p}/mlp/Mul`), one('Add', [erf, scalar(`${p}.one`, 1)], `/${p}/mlp/Add`)], `/${p}/mlp/Mul_1`);
    }
    x = one('Add', [x, linear(hiddenAct, `${p}.mlp.${o.gatedMlp ? 'down' : 'proj'}`, f, h, !o.gatedMlp)], `/${p}/Add_1`);
  }
  const nf = norm(x, 'ln_f');
  const headWeight = o.tiedHead ? one('Transpose', ['wte.weight'], '/lm_head/Transpose', { perm: [1, 0] }) : weight('lm_head.weight', [h, V]);
  const logits = one('MatMul', [nf, headWeight], '/lm_head/MatMul');
  nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  return buildModel({ inputs: [{ name: 'input_ids', dtype: INT64, dims: [b, s] }], outputs: [{ name: 'logits', dtype: FLOAT, dims: [b, s, V] }], initializers: inits, nodes }, 17);
}

/** Parameters of the model gptModel builds, counted from the options (weights, biases, norms). */
export function gptParameterCount(o: GptOptions): number {
  const { hidden: h, seq: s, vocab: V } = o;
  const f = o.ffn ?? 4 * h;
  const bias = !o.rotary;
  const normParams = o.rmsNorm ? h : 2 * h;
  const attn = o.fusedQkv ? 3 * h * h + 3 * h : 3 * (h * h + (bias ? h : 0));
  const out = h * h + (bias ? h : 0);
  const mlp = o.gatedMlp ? 3 * h * f : h * f + f + f * h + h;
  const block = 2 * normParams + attn + out + mlp;
  const embeddings = V * h + ((o.positionEmbedding ?? !o.rotary) ? s * h : 0);
  return embeddings + o.layers * block + normParams + (o.tiedHead ? 0 : h * V);
}
