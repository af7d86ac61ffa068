/**
 * Attention, found from its products: a product of two activations (QK^T) whose output reaches
 * a second product's first operand through vector work (scale, mask, softmax, dropout) is the
 * scores, that second product the context (AV). Q and K are the weight projections behind the
 * scores' operands, V the one behind the context's second operand, through layout and linear ops
 * only (reshapes into heads, transposes, rotary arithmetic, repeat_kv's expand and reshape). The
 * output projection is the first weight layer the context reaches through layout ops.
 * Heads and KV groups come from the GEMM dims: the head size is the scores' reduction K; heads
 * are Q's features / head size (or the scores' count per sample); KV heads are K's features /
 * head size, so GQA and MQA (K and V narrower than Q) are told apart from multi-head attention.
 */
import { at } from '../errors.js';
import type { Layer } from '../layers/types.js';
import { hasRotary, maskOf } from './attention-traits.js';
import { ANY_FLOW, LAYOUT, LAYOUT_LINEAR, type StructureGraph } from './graph.js';
import type { AttentionStructure } from './types.js';

/** Whether layer i computes a linear projection (a weight GEMM that is not a convolution or recurrence). */
export type IsLinear = (i: number) => boolean;

export function findAttentions(graph: StructureGraph, isLinear: IsLinear): AttentionStructure[] {
  const layers = graph.layers;
  const products: number[] = [];
  layers.forEach((l, i) => {
    if (l.kind === 'activation-gemm') products.push(i);
  });
  const found: AttentionStructure[] = [];
  const paired = new Set<number>();
  // Fused attention nodes: their products and QKV projection are layers of one node.
  const byNode = new Map<string, number[]>();
  for (const p of products) {
    const node = at(layers, p).node;
    const list = byNode.get(node);
    if (list === undefined) byNode.set(node, [p]);
    else list.push(p);
  }
  for (const [node, list] of byNode) {
    if (list.length < 2) continue;
    for (let k = 0; k + 1 < list.length; k += 2) {
      const scores = at(list, k);
      const context = at(list, k + 1);
      paired.add(scores).add(context);
      const qkv = layers.findIndex((l) => l.node === node && l.kind === 'gemm');
      found.push(withOut(graph, isLinear, describe(layers, { scores, context, q: qkv, k: qkv, v: qkv, projection: qkv >= 0 ? 'fused-node' : 'separate' }, [])));
    }
  }
  for (const context of products) {
    if (paired.has(context)) continue;
    const probs = at(layers, context).activationInputs[0];
    if (probs === undefined) continue;
    // The scores: the product behind the context's first operand, through the core's vector work.
    // A table looked up into the scores (T5's relative position bias) is no second product.
    const behind = [...graph.behind(probs, ANY_FLOW).layers].filter((i) => at(layers, i).kind !== 'embedding');
    const scores = behind.find((i) => at(layers, i).kind === 'activation-gemm' && !paired.has(i) && i !== context);
    if (scores === undefined || behind.length !== 1) continue;
    paired.add(scores).add(context);
    const [qIn, kIn] = at(layers, scores).activationInputs;
    const vIn = at(layers, context).activationInputs[1];
    const projection = (v: string | undefined): number => {
      if (v === undefined) return -1;
      const candidates = [...graph.behind(v, LAYOUT_LINEAR).layers].filter(isLinear);
      return candidates.length === 1 ? at(candidates, 0) : -1;
    };
    const q = projection(qIn);
    const k = projection(kIn);
    const v = projection(vIn);
    const kind = q >= 0 && q === k && k === v ? 'qkv' : k >= 0 && k === v ? 'kv' : 'separate';
    found.push(withOut(graph, isLinear, describe(layers, { scores, context, q, k, v, projection: kind }, coreOf(graph, scores, context))));
  }
  for (const a of found) {
    const [qIn, kIn] = at(layers, a.scores).activationInputs;
    a.rotary = a.projection !== 'fused-node' && (hasRotary(graph, a.q, qIn) || hasRotary(graph, a.k, kIn));
    const mask = a.projection === 'fused-node' ? 'none' : maskOf(graph, a.scores, a.context);
    a.mask = a.kind === 'cross' && mask === 'causal' ? 'none' : mask;
  }
  return found.sort((a, b) => a.scores - b.scores);
}

interface Corners {
  scores: number;
  context: number;
  q: number;
  k: number;
  v: number;
  projection: AttentionStructure['projection'];
}

/** Vector layers between the scores and the context (scale, mask, softmax, dropout). */
function coreOf(graph: StructureGraph, scores: number, context: number): number[] {
  const core: number[] = [];
  const layers = graph.layers;
  const inCore = new Set<string>([at(layers, scores).output]);
  for (let i = scores + 1; i < context; i++) {
    const l = at(layers, i);
    if (l.kind !== 'vector') continue;
    if (l.activationInputs.some((a) => inCore.has(graph.root(a)) || inCore.has(a))) {
      core.push(i);
      inCore.add(l.output);
    }
  }
  return core;
}

function describe(layers: readonly Layer[], c: Corners, core: number[]): AttentionStructure {
  const s = at(layers, c.scores);
  const headDim = s.gemm.fwd.k;
  const features = (i: number): number => (i < 0 ? 0 : at(layers, i).gemm.fwd.n);
  const samples = (): number => {
    const q = c.q >= 0 ? at(layers, c.q) : undefined;
    // Q's rows are tokens (samples x query length); the scores' rows are the query length.
    return q !== undefined && q.gemmCount === 1 && s.gemm.fwd.m > 0 && q.gemm.fwd.m % s.gemm.fwd.m === 0 ? q.gemm.fwd.m / s.gemm.fwd.m : 1;
  };
  const headsByCount = Math.max(1, Math.round(s.gemmCount / samples()));
  let heads = headsByCount;
  let kvHeads = headsByCount;
  if (c.projection === 'separate' && c.q >= 0 && headDim > 0) {
    heads = features(c.q) / headDim;
    if (c.k >= 0) kvHeads = features(c.k) / headDim;
  } else if (c.projection === 'kv' && c.k >= 0 && headDim > 0) {
    if (c.q >= 0) heads = features(c.q) / headDim;
    kvHeads = features(c.k) / (2 * headDim);
  } else if (c.projection === 'qkv' && c.q >= 0 && headDim > 0) {
    // Fused Q, K, V: heads x d + 2 x kvHeads x d features.
    kvHeads = (features(c.q) / headDim - heads) / 2;
  }
  if (!Number.isInteger(heads) || heads < 1) heads = headsByCount;
  if (!Number.isInteger(kvHeads) || kvHeads < 1 || heads % kvHeads !== 0) kvHeads = heads;
  return { scores: c.scores, context: c.context, q: c.q, k: c.k, v: c.v, out: -1, projection: c.projection, heads, kvHeads, headDim, kind: 'self', core, rotary: false, mask: 'none' };
}

/** The output projection, and whether K and V read another source than Q (cross-attention). */
function withOut(graph: StructureGraph, isLinear: IsLinear, a: AttentionStructure): AttentionStructure {
  const layers = graph.layers;
  const outs = [...graph.ahead(at(layers, a.context).output, LAYOUT)].filter(isLinear);
  const out = outs.length === 1 ? at(outs, 0) : -1;
  const qIn = a.q >= 0 ? at(layers, a.q).activationInputs[0] : undefined;
  const kIn = a.k >= 0 ? at(layers, a.k).activationInputs[0] : undefined;
  const cross = qIn !== undefined && kIn !== undefined && a.k !== a.q && graph.root(qIn) !== graph.root(kIn);
  return cross && kIn !== undefined ? { ...a, out, kind: 'cross', source: graph.root(kIn) } : { ...a, out };
}
