/**
 * Two traits of an attention read from its data flow: rotary position embedding on Q and K, and
 * the kind of mask its scores get.
 * - Rotary (RoPE: `q * cos + rotate_half(q) * sin`, LLaMA, GPT-NeoX, Falcon): between the
 *   projection and the scores, a sum whose two operands are both computed from the projection.
 *   A scale (`q / sqrt(d)`) or a reshape into heads makes no such sum.
 * - Mask: causal when an operand mixed into a self-attention's square scores (added, or selected
 *   by a Where) is a static boolean square or a Trilu (a triangle of positions: GPT-2's `bias`
 *   buffer sliced to the sequence, `arange(q) >= arange(k)`, `tril` of ones); 'static' when it is
 *   a static float square (a triangle folded by the exporter, Swin's window mask, a zeros bias:
 *   told apart only by their values, which are not read); padding when it comes from a graph input (BERT's `(1 - mask) * -10000`, [b, 1, 1, s]); a
 *   learned bias looked up by a layer (T5's relative positions) is neither, but a causal mask
 *   added to it is still found behind it.
 */
import { at } from '../errors.js';
import { DType } from '../ir/dtype.js';
import type { Node } from '../ir/graph.js';
import { backwardKeepsOf, flowOf } from '../shape/op-table.js';
import { opRowOf } from '../shape/rules/index.js';
import type { StructureGraph } from './graph.js';

export type MaskKind = 'causal' | 'static' | 'padding' | 'none';

/** Values walked at most per question (a projection's path to the scores is a few dozen ops). */
const MAX_VALUES = 256;

/** A sum of its operands (Add, Sub: linear, keeping nothing for backward; read from the op table). */
function isSum(node: Node): boolean {
  const row = opRowOf(node);
  return flowOf(row) === 'linear' && backwardKeepsOf(row) === 'nothing' && row?.vectorClass !== 'reduce' && node.inputs.filter((i) => i !== '').length === 2;
}

/** Whether the path from `projection`'s output to `operand` (a scores input) holds a sum of two values both computed from the projection. */
export function hasRotary(graph: StructureGraph, projection: number, operand: string | undefined): boolean {
  if (projection < 0 || operand === undefined) return false;
  const start = at(graph.layers, projection).output;
  // Values between the projection and the operand: forward from the one, back from the other.
  const ahead = new Set<string>([start]);
  const stack = [start];
  for (let v = stack.pop(); v !== undefined && ahead.size < MAX_VALUES; v = stack.pop()) {
    if (v === operand) continue;
    for (const node of graph.consumers.get(v) ?? []) {
      const flow = graph.flow(node);
      if (flow !== 'layout' && flow !== 'linear') continue;
      for (const o of node.outputs) if (o !== '' && !ahead.has(o)) { ahead.add(o); stack.push(o); }
    }
  }
  if (!ahead.has(operand)) return false;
  const between = new Set<string>();
  const back = [operand];
  for (let v = back.pop(); v !== undefined; v = back.pop()) {
    if (between.has(v) || !ahead.has(v)) continue;
    between.add(v);
    if (v === start) continue;
    const node = graph.producer.get(v);
    if (node === undefined) continue;
    if (isSum(node) && node.inputs.filter((i) => ahead.has(i)).length === 2) return true;
    for (const i of node.inputs) if (i !== '') back.push(i);
  }
  return false;
}

/** The mask the scores get: the operands mixed into them on the way to the context's first operand. */
export function maskOf(graph: StructureGraph, scores: number, context: number): MaskKind {
  const layers = graph.layers;
  const scoresShape = at(layers, scores).outputShape;
  const queries = scoresShape[scoresShape.length - 2] ?? 1;
  // A causal triangle is square (training: as many keys as queries); T5's cross-attention adds a
  // static zeros bias of [1, heads, q, k], which is no mask.
  const square = queries === scoresShape[scoresShape.length - 1];
  const target = at(layers, context).activationInputs[0];
  // The scores' path: forward from the scores to the context's operand.
  const path = new Set<string>([at(layers, scores).output]);
  const stack = [at(layers, scores).output];
  const mixed: string[] = [];
  for (let v = stack.pop(); v !== undefined && path.size < MAX_VALUES; v = stack.pop()) {
    if (v === target) continue;
    for (const node of graph.consumers.get(v) ?? []) {
      if (graph.flow(node) === 'opaque') continue;
      for (const o of node.outputs) if (o !== '' && !path.has(o)) { path.add(o); stack.push(o); }
    }
  }
  if (target === undefined || !path.has(target)) return 'none';
  // The operands mixed in on the way: inputs, off the path, of the nodes between scores and target.
  const between = new Set<string>();
  const back = [target];
  for (let v = back.pop(); v !== undefined; v = back.pop()) {
    if (between.has(v) || !path.has(v)) continue;
    between.add(v);
    const node = graph.producer.get(v);
    if (node === undefined || v === at(layers, scores).output) continue;
    for (const i of node.inputs) {
      if (i === '') continue;
      if (path.has(i)) back.push(i);
      else mixed.push(i);
    }
  }
  let kind: MaskKind = 'none';
  for (const m of mixed) {
    const found = maskSource(graph, m, square ? queries : 0);
    if (found === 'causal') return 'causal';
    if (found === 'static' || (found === 'padding' && kind === 'none')) kind = found;
  }
  return kind;
}

/**
 * Behind a value mixed into the scores (not crossing layers): a static value varying along the
 * query axis (causal), or a graph input (padding).
 */
function maskSource(graph: StructureGraph, value: string, queries: number): MaskKind {
  let kind: MaskKind = 'none';
  const rank = (k: MaskKind): number => ['none', 'padding', 'static', 'causal'].indexOf(k);
  const seen = new Set<string>();
  const stack = [value];
  for (let v = stack.pop(); v !== undefined && seen.size < MAX_VALUES; v = stack.pop()) {
    if (seen.has(v)) continue;
    seen.add(v);
    if (isLearned(graph, v)) continue;
    if (graph.graphInputs.has(v)) {
      if (rank(kind) < rank('padding')) kind = 'padding';
      continue;
    }
    const info = graph.inferred.values.get(v);
    const shape = info?.shape;
    const square = queries > 1 && shape !== undefined && shape.length >= 2 && shape[shape.length - 2] === queries && shape[shape.length - 1] === queries;
    if (square && isStatic(graph, v, new Map())) {
      // A static boolean square is a triangle of positions: GPT-2's `bias` buffer, `arange <= arange`
      // (T5), `tril` / `triu` of ones. A static float square may be a folded triangle or any other
      // constant (Swin's window mask, a zeros bias): told only as static.
      const producer = graph.producer.get(v);
      if (info?.dtype === DType.BOOL || (producer?.domain === '' && producer.opType === 'Trilu')) return 'causal';
      if (rank(kind) < rank('static')) kind = 'static';
    }
    const node = graph.producer.get(v);
    if (node !== undefined) for (const i of node.inputs) if (i !== '') stack.push(i);
  }
  return kind;
}

/** Whether a value is a weight layer's output (a projection, a looked-up bias), not vector work. */
function isLearned(graph: StructureGraph, value: string): boolean {
  const layer = graph.layerByOutput.get(value);
  return layer !== undefined && graph.layers[layer]?.kind !== 'vector';
}

/** Whether a value is computed from constants, initializers and shapes only (no data flows into it). */
function isStatic(graph: StructureGraph, value: string, memo: Map<string, boolean>): boolean {
  const known = memo.get(value);
  if (known !== undefined) return known;
  memo.set(value, false);
  let result: boolean;
  // Folded values (a Shape's dims, small constants) and initializers read no data.
  if (graph.inferred.initializerNames.has(value) || graph.inferred.values.get(value)?.value !== undefined) result = true;
  else if (graph.graphInputs.has(value) || isLearned(graph, value)) result = false;
  else {
    const node = graph.producer.get(value);
    result = node !== undefined && memo.size < MAX_VALUES && node.inputs.every((i) => i === '' || isStatic(graph, i, memo));
  }
  memo.set(value, result);
  return result;
}
