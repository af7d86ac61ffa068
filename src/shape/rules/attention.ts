/**
 * Fused transformer ops: ONNX Attention (opset 23), RMSNormalization and RotaryEmbedding, and the
 * onnxruntime fusions exporters and optimisers emit (com.microsoft Attention, MultiHeadAttention,
 * SkipLayerNormalization, EmbedLayerNormalization, FusedMatMul, the Gelu variants, and
 * SimplifiedLayerNormalization, which onnxruntime also registers in the default domain).
 */
import { at } from '../../errors.js';
import { dimAdd, dimFloorDiv, dimMul, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { opRows, sameRow, type OpRows } from '../op-table.js';
import type { TensorInfo } from '../tensor-info.js';
import { sameAsInput } from './elementwise.js';
import { matmulShape } from './math.js';

/** [batch, heads, seq, head] of a 4-D input, or of a 3-D [batch, seq, heads x head] one. */
function headsView(ctx: RuleContext, i: number, heads: number | undefined): [Dim, Dim, Dim, Dim] {
  const s = ctx.shape(i);
  if (s.length === 4) return [at(s, 0), at(s, 1), at(s, 2), at(s, 3)];
  if (s.length !== 3) return ctx.fail(`input ${i} must be 3-D or 4-D, got ${ctx.describe(i)}`);
  if (heads === undefined) return ctx.fail(`3-D inputs need the q_num_heads and kv_num_heads attributes`);
  return [at(s, 0), heads, at(s, 1), dimFloorDiv(at(s, 2), heads)];
}

/** ONNX Attention: Y, present_key, present_value, qk_matmul_output. */
export const attention: ShapeRule = (ctx) => {
  const [batch, qHeads, qSeq] = headsView(ctx, 0, ctx.int('q_num_heads'));
  const [, kvHeads, kvSeq, headSize] = headsView(ctx, 1, ctx.int('kv_num_heads'));
  const vHead = headsView(ctx, 2, ctx.int('kv_num_heads'))[3];
  const pastSeq: Dim = ctx.has(4) ? ctx.dim(4, 2) : 0;
  const total = dimAdd(pastSeq, kvSeq);
  const dtype = ctx.dtype(0);
  const y = ctx.rank(0) === 4 ? [batch, qHeads, qSeq, vHead] : [batch, qSeq, dimMul(qHeads, vHead)];
  const outputs: TensorInfo[] = [
    { dtype, shape: y },
    { dtype, shape: [batch, kvHeads, total, headSize] },
    { dtype, shape: [batch, kvHeads, total, vHead] },
    { dtype, shape: [batch, qHeads, qSeq, total] },
  ];
  return outputs.slice(0, ctx.node.outputs.length);
};

/** com.microsoft Attention: input [B, S, D] x weights [D, q + k + v] -> [B, S, v], present. */
export const msAttention: ShapeRule = (ctx) => {
  const batch = ctx.dim(0, 0);
  const seq = ctx.dim(0, 1);
  const heads = ctx.int('num_heads') ?? ctx.fail(`attribute 'num_heads' is required`);
  const sizes = ctx.ints('qkv_hidden_sizes');
  const hidden: Dim = sizes?.[0] ?? dimFloorDiv(ctx.dim(1, 1), 3);
  const vHidden: Dim = sizes?.[2] ?? hidden;
  const pastSeq: Dim = ctx.has(4) ? ctx.dim(4, 3) : 0;
  const present = [2, batch, heads, dimAdd(pastSeq, seq), dimFloorDiv(hidden, heads)];
  return [{ dtype: ctx.dtype(0), shape: [batch, seq, vHidden] }, { dtype: ctx.dtype(0), shape: present }].slice(0, ctx.node.outputs.length);
};

/** com.microsoft MultiHeadAttention: query [B, S, D] -> [B, S, value's hidden]. */
export const msMultiHeadAttention: ShapeRule = (ctx) => {
  const value = ctx.optionalInput(2)?.shape;
  const vHidden = value?.length === 3 ? at(value, 2) : value?.length === 4 ? dimMul(at(value, 1), at(value, 3)) : ctx.dim(0, 2);
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(0, 0), ctx.dim(0, 1), vHidden] }];
};

/** Y like X; optional statistics [..., 1] over the last axis; optional sum of input + skip (+ bias). */
export const skipLayerNorm: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const stats = { dtype: DType.FLOAT, shape: [...x.slice(0, -1), 1] };
  const same = { dtype: ctx.dtype(0), shape: x };
  return ctx.node.outputs.map((_, i) => (i === 0 || i === 3 ? same : stats));
};

/** input_ids [B, S], ..., word_embedding [V, H] -> output [B, S, H], mask_index [B], embedding_sum. */
export const embedLayerNorm: ShapeRule = (ctx) => {
  const batch = ctx.dim(0, 0);
  const seq = ctx.dim(0, 1);
  const hidden = ctx.dim(2, 1);
  const out = { dtype: ctx.dtype(2), shape: [batch, seq, hidden] };
  return ctx.node.outputs.map((_, i) => (i === 1 ? { dtype: DType.INT32, shape: [batch] } : out));
};

/** MatMul with the last two dims of either operand optionally transposed. */
export const fusedMatMul: ShapeRule = (ctx) => {
  const swapLast = (s: readonly Dim[], on: boolean): Dim[] => (on && s.length >= 2 ? [...s.slice(0, -2), at(s, s.length - 1), at(s, s.length - 2)] : [...s]);
  const a = swapLast(ctx.shape(0), ctx.int('transA', 0) === 1);
  const b = swapLast(ctx.shape(1), ctx.int('transB', 0) === 1);
  return [{ dtype: ctx.dtype(0), shape: matmulShape(ctx, a, b) }];
};

const MS = 'com.microsoft::';

/** Norms with a scale (input 1) and no shift. */
const SCALE_ONLY = { scale: [1], shift: [] };

export const ATTENTION_OPS: OpRows = opRows(
  {
    // Q, K and V are activations: QK^T and AV are activation GEMMs.
    Attention: { shape: attention, gemm: true, lowering: 'onnx-attention', weightInputs: [] },
    RMSNormalization: { shape: sameAsInput, vectorClass: 'layernorm', parameterInputs: SCALE_ONLY },
    // onnxruntime registers SimplifiedLayerNormalization (RMSNorm) in the default domain too.
    SimplifiedLayerNormalization: { shape: sameAsInput, vectorClass: 'layernorm', parameterInputs: SCALE_ONLY },
    // x cos + rotate_half(x) sin: linear in x.
    RotaryEmbedding: { shape: sameAsInput, flow: 'linear' },
    [`${MS}Attention`]: { shape: msAttention, gemm: true, lowering: 'ms-attention', weightInputs: [1] },
    [`${MS}MultiHeadAttention`]: { shape: msMultiHeadAttention, gemm: true, lowering: 'ms-multi-head-attention', weightInputs: [] },
    // input 0, skip 1, gamma 2, beta 3, bias 4 (added before the norm: a shift too).
    [`${MS}SkipLayerNormalization`]: { shape: skipLayerNorm, vectorClass: 'layernorm', parameterInputs: { scale: [2], shift: [3, 4] } },
    [`${MS}SkipSimplifiedLayerNormalization`]: { shape: skipLayerNorm, vectorClass: 'layernorm', parameterInputs: { scale: [2], shift: [3] } },
    [`${MS}EmbedLayerNormalization`]: { shape: embedLayerNorm },
    [`${MS}FusedMatMul`]: { shape: fusedMatMul, gemm: true, lowering: 'matmul', weightInputs: [0, 1] },
    [`${MS}RotaryEmbedding`]: { shape: sameAsInput, flow: 'linear' },
    [`${MS}LayerNormalization`]: { shape: sameAsInput, vectorClass: 'layernorm', parameterInputs: { scale: [1], shift: [2] } },
    [`${MS}SimplifiedLayerNormalization`]: { shape: sameAsInput, vectorClass: 'layernorm', parameterInputs: SCALE_ONLY },
  },
  sameRow({ shape: sameAsInput, vectorClass: 'gelu' }, ['Gelu', 'FastGelu', 'BiasGelu', 'QuickGelu'].map((op) => `${MS}${op}`)),
);
