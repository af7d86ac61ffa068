/**
 * The one graph-only GPT- and LLaMA-style decoder builder (initializers with dims and no data) of
 * the tests and the bench, built as exporters write them: embedding lookups, per block a norm,
 * attention (fused or separate Q/K/V, optional rotary embedding), a residual add, a norm and an
 * MLP (GELU, ReLU or SiLU-gated), then a final norm and an LM head (tied to the embedding through
 * a Transpose, or its own weight); or one bare block (`blockOnly`). Names follow PyTorch's
 * exporter (`/blocks.0/attn/MatMul`, weights `blocks.0.attn.q.weight`), so layers are named
 * `blocks.0.attn.q`, `blocks.0.attn.MatMul`, `blocks.0.Add_1`, `wte`, `lm_head`.
 * The structure is known exactly, so expected figures follow from the options (gptParameterCount).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildModel, FLOAT, INT64, type NodeSpec, type TensorSpec } from '../../test/helpers/onnx-builder.js';

export interface GptOptions {
  layers: number;
  hidden: number;
  heads: number;
  seq: number;
  batch: number;
  vocab: number;
  /** MLP width (default 4 x hidden), or one width per block. */
  ffn?: number | readonly number[];
  fusedQkv?: boolean;
  /**
   * The MLP: 'gelu-erf' (GELU written op by op with Erf, as torch exports it; the default), 'gelu'
   * (one Gelu op, opset 20), 'relu', or 'swiglu' (LLaMA's SiLU-gated gate/up/down).
   */
  mlp?: 'gelu-erf' | 'gelu' | 'relu' | 'swiglu';
  rotary?: boolean;
  /** 'layer' (LayerNormalization with bias; the default), 'rms' (LLaMA's, op by op) or 'none'. */
  norm?: 'layer' | 'rms' | 'none';
  /** Biases on the linear layers; default: on attention unless rotary, on the MLP unless swiglu. */
  linearBias?: boolean;
  /** Scores divided by sqrt(head dim) before the softmax (default); false: the scale is folded away. */
  scaledScores?: boolean;
  /** Dropout on the attention probabilities and before each residual add (Megatron-LM's places). */
  dropout?: boolean;
  tiedHead?: boolean;
  /** Learned position embeddings (GPT-2); default: unless rotary. */
  positionEmbedding?: boolean;
  /** One bare block stack: float input `x` [batch, seq, hidden], no embeddings, final norm or head. */
  blockOnly?: boolean;
}

/**
 * A bare decoder for structure tests: no norms, biases, score scale or position embedding, a ReLU
 * MLP; every layer is a GEMM, an attention product, the softmax, the ReLU or a residual add.
 */
export const BARE_GPT = { norm: 'none', mlp: 'relu', linearBias: false, scaledScores: false, positionEmbedding: false } as const satisfies Partial<GptOptions>;

const ext = { location: 'none.bin' };

/** The MLP width of each block. */
function ffnWidths(o: GptOptions): number[] {
  const f = o.ffn ?? 4 * o.hidden;
  if (typeof f === 'number') return Array<number>(o.layers).fill(f);
  if (f.length !== o.layers) throw new Error(`gptModel: ${f.length} MLP widths for ${o.layers} blocks`);
  return [...f];
}

/** Which linear layers carry a bias. */
function biases(o: GptOptions): { attention: boolean; mlp: boolean } {
  if (o.linearBias !== undefined) return { attention: o.linearBias, mlp: o.linearBias };
  return { attention: !o.rotary, mlp: o.mlp !== 'swiglu' };
}

export function gptModel(o: GptOptions): Uint8Array {
  const { hidden: h, heads: a, seq: s, batch: b, vocab: V } = o;
  const d = h / a;
  const widths = ffnWidths(o);
  const bias = biases(o);
  const mlp = o.mlp ?? 'gelu-erf';
  const normKind = o.norm ?? 'layer';
  const opset = mlp === 'gelu' ? 20 : 17;
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
  const one = (opType: string, inputs: string[], name: string, attrs?: NodeSpec['attrs']): string => {
    const out = `${name}_out`;
    nodes.push({ op: opType, inputs, outputs: [out], name, ...(attrs ? { attrs } : {}) });
    return out;
  };
  const dropout = (x: string, name: string): string => (o.dropout ? one('Dropout', [x], name) : x);

  const eps = normKind === 'rms' ? scalar('eps', 1e-5) : '';
  const two = normKind === 'rms' ? scalar('two', 2) : '';
  const lastAxis = normKind === 'rms' && opset >= 18 ? ints('reduce_axes', [-1]) : '';
  const norm = (x: string, path: string): string => {
    if (normKind === 'none') return x;
    const gamma = weight(`${path}.weight`, [h]);
    if (normKind === 'layer') return one('LayerNormalization', [x, gamma, weight(`${path}.bias`, [h])], `/${path}/LayerNormalization`, { axis: -1 });
    // RMSNorm as exported op by op: x / sqrt(mean(x^2) + eps) * gamma (ReduceMean takes its axes as an input from opset 18).
    const sq = one('Pow', [x, two], `/${path}/Pow`);
    const mean = opset >= 18
      ? one('ReduceMean', [sq, lastAxis], `/${path}/ReduceMean`, { keepdims: 1 })
      : one('ReduceMean', [sq], `/${path}/ReduceMean`, { axes: [-1], keepdims: 1 });
    const root = one('Sqrt', [one('Add', [mean, eps], `/${path}/Add`)], `/${path}/Sqrt`);
    return one('Mul', [one('Div', [x, root], `/${path}/Div`), gamma], `/${path}/Mul`);
  };
  const linear = (x: string, path: string, k: number, n: number, withBias: boolean): string => {
    const y = one('MatMul', [x, weight(`${path}.weight`, [k, n])], `/${path}/MatMul`);
    return withBias ? one('Add', [y, weight(`${path}.bias`, [n])], `/${path}/Add`) : y;
  };
  const heads4 = ints('shape_heads', [b, s, a, d]);
  const hidden3 = ints('shape_hidden', [b, s, h]);
  const toHeads = (x: string, path: string): string => one('Transpose', [one('Reshape', [x, heads4], `${path}/Reshape`)], `${path}/Transpose`, { perm: [0, 2, 1, 3] });
  const rotate = rotary(o, one, ints, s, d);

  let x = o.blockOnly ? 'x' : one('Gather', [weight('wte.weight', [V, h]), 'input_ids'], '/wte/Gather');
  if (!o.blockOnly && (o.positionEmbedding ?? !o.rotary)) {
    inits.push({ name: 'position_ids', dtype: INT64, dims: [1, s], external: ext });
    x = one('Add', [x, one('Gather', [weight('wpe.weight', [s, h]), 'position_ids'], '/wpe/Gather')], '/Add');
  }
  const scale = o.scaledScores === false ? '' : scalar('attn_scale', Math.sqrt(d));
  widths.forEach((f, i) => {
    const p = `blocks.${i}`;
    const n1 = norm(x, `${p}.ln_1`);
    let q: string;
    let k: string;
    let v: string;
    if (o.fusedQkv) {
      const qkv = linear(n1, `${p}.attn.qkv`, h, 3 * h, bias.attention);
      [q, k, v] = op('Split', [qkv, ints(`${p}.split`, [h, h, h])], `/${p}/attn/Split`, { axis: -1 }, 3) as [string, string, string];
    } else {
      q = linear(n1, `${p}.attn.q`, h, h, bias.attention);
      k = linear(n1, `${p}.attn.k`, h, h, bias.attention);
      v = linear(n1, `${p}.attn.v`, h, h, bias.attention);
    }
    const qh = rotate(toHeads(q, `/${p}/attn/q`), `/${p}/attn/rotary_q`);
    const kh = rotate(toHeads(k, `/${p}/attn/k`), `/${p}/attn/rotary_k`);
    const vh = toHeads(v, `/${p}/attn/v`);
    const kt = one('Transpose', [kh], `/${p}/attn/Transpose_k`, { perm: [0, 1, 3, 2] });
    const product = one('MatMul', [qh, kt], `/${p}/attn/MatMul`);
    const scores = scale === '' ? product : one('Div', [product, scale], `/${p}/attn/Div`);
    const probs = dropout(one('Softmax', [scores], `/${p}/attn/Softmax`, { axis: -1 }), `/${p}/attn/Dropout`);
    const ctx = one('MatMul', [probs, vh], `/${p}/attn/MatMul_1`);
    const merged = one('Reshape', [one('Transpose', [ctx], `/${p}/attn/Transpose_ctx`, { perm: [0, 2, 1, 3] }), hidden3], `/${p}/attn/Reshape_ctx`);
    x = one('Add', [x, dropout(linear(merged, `${p}.attn.o`, h, h, bias.attention), `/${p}/attn/Dropout_1`)], `/${p}/Add`);
    const n2 = norm(x, `${p}.ln_2`);
    let hiddenAct: string;
    if (mlp === 'swiglu') {
      const gate = linear(n2, `${p}.mlp.gate`, h, f, bias.mlp);
      const up = linear(n2, `${p}.mlp.up`, h, f, bias.mlp);
      const silu = one('Mul', [gate, one('Sigmoid', [gate], `/${p}/mlp/Sigmoid`)], `/${p}/mlp/Mul`);
      hiddenAct = one('Mul', [silu, up], `/${p}/mlp/Mul_1`);
    } else {
      const up = linear(n2, `${p}.mlp.fc`, h, f, bias.mlp);
      if (mlp === 'relu') hiddenAct = one('Relu', [up], `/${p}/mlp/Relu`);
      else if (mlp === 'gelu') hiddenAct = one('Gelu', [up], `/${p}/mlp/Gelu`);
      else {
        const erf = one('Erf', [one('Div', [up, scalar(`${p}.sqrt2`, Math.SQRT2)], `/${p}/mlp/Div`)], `/${p}/mlp/Erf`);
        hiddenAct = one('Mul', [one('Mul', [up, scalar(`${p}.half`, 0.5)], `/${p}/mlp/Mul`), one('Add', [erf, scalar(`${p}.one`, 1)], `/${p}/mlp/Add`)], `/${p}/mlp/Mul_1`);
      }
    }
    const down = linear(hiddenAct, `${p}.mlp.${mlp === 'swiglu' ? 'down' : 'proj'}`, f, h, bias.mlp);
    x = one('Add', [x, dropout(down, `/${p}/mlp/Dropout`)], `/${p}/Add_1`);
  });
  if (o.blockOnly) {
    nodes.push({ op: 'Identity', inputs: [x], outputs: ['y'], name: '/Identity' });
    return buildModel({ inputs: [{ name: 'x', dtype: FLOAT, dims: [b, s, h] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [b, s, h] }], initializers: inits, nodes }, opset);
  }
  const nf = norm(x, 'ln_f');
  const headWeight = o.tiedHead ? one('Transpose', ['wte.weight'], '/lm_head/Transpose', { perm: [1, 0] }) : weight('lm_head.weight', [h, V]);
  const logits = one('MatMul', [nf, headWeight], '/lm_head/MatMul');
  nodes.push({ op: 'Identity', inputs: [logits], outputs: ['logits'], name: '/Identity' });
  return buildModel({ inputs: [{ name: 'input_ids', dtype: INT64, dims: [b, s] }], outputs: [{ name: 'logits', dtype: FLOAT, dims: [b, s, V] }], initializers: inits, nodes }, opset);
}

type One = (opType: string, inputs: string[], name: string, attrs?: NodeSpec['attrs']) => string;

/** Rotary embedding of a [b, heads, s, d] tensor (x cos + rotate_half(x) sin), or the identity without `rotary`. */
function rotary(o: GptOptions, one: One, ints: (name: string, values: number[]) => string, s: number, d: number): (x: string, path: string) => string {
  if (!o.rotary) return (x) => x;
  const half = { starts0: ints('half_start0', [0]), ends0: ints('half_end0', [d / 2]), starts1: ints('half_start1', [d / 2]), ends1: ints('half_end1', [d]), axes: ints('last_axis', [-1]) };
  // Rotary tables are buffers, not parameters: exporters write them as constants.
  const table = (name: string): string => one('Constant', [], name, { value: { tensor: { name, dtype: FLOAT, dims: [s, d], values: new Array<number>(s * d).fill(0) } } });
  const cos = table('/rotary/cos');
  const sin = table('/rotary/sin');
  return (x, path) => {
    const x1 = one('Slice', [x, half.starts0, half.ends0, half.axes], `${path}/Slice`);
    const x2 = one('Slice', [x, half.starts1, half.ends1, half.axes], `${path}/Slice_1`);
    const rotated = one('Concat', [one('Neg', [x2], `${path}/Neg`), x1], `${path}/Concat`, { axis: -1 });
    return one('Add', [one('Mul', [x, cos], `${path}/Mul`), one('Mul', [rotated, sin], `${path}/Mul_1`)], `${path}/Add`);
  };
}

/** Writes gptModel(o) to a new temporary folder; returns the file's path. */
export function writeGptModel(o: GptOptions): string {
  const file = join(mkdtempSync(join(tmpdir(), 'modtrans-gpt-')), 'gpt.onnx');
  writeFileSync(file, gptModel(o));
  return file;
}

/** Parameters of the model gptModel builds, counted from the options (weights, biases, norms). */
export function gptParameterCount(o: GptOptions): number {
  const { hidden: h, seq: s, vocab: V } = o;
  const bias = biases(o);
  const normParams = o.norm === 'none' ? 0 : o.norm === 'rms' ? h : 2 * h;
  const attnBias = bias.attention ? h : 0;
  const attn = 3 * (h * h + attnBias) + h * h + attnBias;
  const mlp = (f: number): number => (o.mlp === 'swiglu' ? 3 * h * f + (bias.mlp ? 2 * f + h : 0) : 2 * h * f + (bias.mlp ? f + h : 0));
  const blocks = ffnWidths(o).reduce((sum, f) => sum + 2 * normParams + attn + mlp(f), 0);
  if (o.blockOnly) return blocks;
  const embeddings = V * h + ((o.positionEmbedding ?? !o.rotary) ? s * h : 0);
  return embeddings + blocks + normParams + (o.tiedHead ? 0 : h * V);
}
