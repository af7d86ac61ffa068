/**
 * Pipeline cuts that close. A pipeline part sends the next one a single tensor (Megatron-LM's
 * p2p_communication; schedule/pipeline-transfers.ts). Every value has a position: a layer's output
 * is at its layer; an op that is no layer (a residual add without vector layers, a reshape) runs as
 * early as its inputs allow, so its output is at its latest input's position; values computed from
 * the graph's inputs and constants alone (masks, position ids) are everywhere (every stage has the
 * inputs). A value at position i read at position j crosses every cut c with i < c <= j. A cut
 * closes when at most one value crosses it: the residual stream between blocks, or the one
 * activation between two layers of a chain. `closingCuts` lists them; `checkCutsClose` names the
 * second value that breaks a planned cut.
 */
import { at, InputError } from '../errors.js';
import type { Layer } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';
import { StructureGraph } from './graph.js';
import type { ModelStructure } from './types.js';

/** A data value with a position and the last position that reads it. */
interface Crossing {
  value: string;
  at: number;
  lastRead: number;
  /** Every position that reads it. */
  reads: number[];
  /** The layer reading it last (for messages). */
  reader: number;
}

const EVERYWHERE = -1;

/** One analysis per lowered layer list: a plan's candidate cuts, its check and its sends all read it. */
const crossingsOf = new WeakMap<readonly Layer[], Crossing[]>();

function crossings(inferred: InferredModel, layers: readonly Layer[]): Crossing[] {
  const known = crossingsOf.get(layers);
  if (known !== undefined) return known;
  const found = computeCrossings(inferred, layers);
  crossingsOf.set(layers, found);
  return found;
}

function computeCrossings(inferred: InferredModel, layers: readonly Layer[]): Crossing[] {
  const graph = new StructureGraph(inferred, layers);
  const layerOfNode = new Map<string, number>();
  layers.forEach((l, i) => {
    layerOfNode.set(l.node, Math.max(layerOfNode.get(l.node) ?? -1, i));
  });
  absorbNodes(graph, layerOfNode);
  // Each value's identity: an op that is no layer and reads one tensor (a reshape, a cast, the
  // pieces of a norm without vector layers) gives another view of it, computed wherever it is read.
  const identity = new Map<string, string>();
  const position = new Map<string, number>();
  const lastRead = new Map<string, { at: number; reader: number }>();
  const reads = new Map<string, number[]>();
  const identityOf = (v: string): string => identity.get(v) ?? v;
  const positionOf = (v: string): number => (graph.isData(v) ? (position.get(identityOf(v)) ?? EVERYWHERE) : EVERYWHERE);
  const read = (v: string, where: number, reader: number): void => {
    if (positionOf(v) === EVERYWHERE) return;
    const id = identityOf(v);
    const before = lastRead.get(id);
    if (before === undefined || where > before.at) lastRead.set(id, { at: where, reader });
    const list = reads.get(id);
    if (list === undefined) reads.set(id, [where]);
    else list.push(where);
  };
  for (const node of inferred.order) {
    const layer = layerOfNode.get(node.name);
    const latestInput = node.inputs.reduce((m, i) => Math.max(m, i === '' ? EVERYWHERE : positionOf(i)), EVERYWHERE);
    if (layer !== undefined) {
      const l = at(layers, layer);
      // Vector work on input-only values is itself input-only (a mask built from the input ids).
      const where = l.kind === 'vector' && latestInput === EVERYWHERE ? EVERYWHERE : layer;
      for (const i of node.inputs) read(i, layer, layer);
      for (const o of node.outputs) if (o !== '') position.set(o, where);
      continue;
    }
    const tensors = new Set(node.inputs.filter((i) => i !== '' && positionOf(i) !== EVERYWHERE).map(identityOf));
    const only = tensors.size === 1 ? [...tensors][0] : undefined;
    if (only !== undefined) {
      for (const o of node.outputs) if (o !== '') identity.set(o, only);
      continue;
    }
    // Combining tensors (a residual add without vector layers): computed as soon as its inputs are.
    for (const i of node.inputs) read(i, latestInput, -1);
    for (const o of node.outputs) if (o !== '') position.set(o, latestInput);
  }
  const list: Crossing[] = [];
  for (const [value, r] of lastRead) {
    const p = positionOf(value);
    if (r.at > p) list.push({ value, at: p, lastRead: r.at, reader: r.reader, reads: reads.get(value) ?? [] });
  }
  return list;
}

/**
 * Nodes a vector layer absorbed (the pieces of a norm or GELU written op by op) run with it: every
 * node between the layer's activation inputs and its own node.
 */
function absorbNodes(graph: StructureGraph, layerOfNode: Map<string, number>): void {
  const byName = new Map(graph.inferred.order.map((n) => [n.name, n]));
  graph.layers.forEach((l, i) => {
    const own = l.kind === 'vector' ? byName.get(l.node) : undefined;
    if (own === undefined) return;
    const inputs = new Set(l.activationInputs);
    const stack = own.inputs.filter((v) => !inputs.has(v));
    const seen = new Set<string>();
    for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
      if (seen.has(v) || inputs.has(v) || !graph.isData(v) || graph.layerByOutput.has(v)) continue;
      seen.add(v);
      const node = graph.producer.get(v);
      if (node === undefined || layerOfNode.has(node.name)) continue;
      layerOfNode.set(node.name, i);
      for (const x of node.inputs) stack.push(x);
    }
  });
}

/**
 * Values a transformer's stages pass along besides the residual stream: those written outside
 * every block (the decoder's embedding, looked up before the encoder runs) or read by layers of
 * two or more blocks (the encoder's output, which every decoder block's cross-attention reads; a
 * relative position bias computed in the first block and added in every one). A stage sends them
 * on with its activations, as pipeline-parallel encoder-decoder training passes them.
 */
function carriedBy(structure: ModelStructure | undefined): (x: Crossing) => boolean {
  const blocks = structure?.blocks ?? [];
  if (blocks.length === 0) return () => false;
  const blockOf = (position: number): number => blocks.findIndex((b) => position >= b.start && position <= b.end);
  return (x) => blockOf(x.at) < 0 || new Set(x.reads.map(blockOf).filter((b) => b >= 0)).size >= 2;
}

/** Cut positions c (a part starts at layer c) where at most one value crosses, not counting carried ones. */
export function closingCuts(inferred: InferredModel, layers: readonly Layer[], structure?: ModelStructure): number[] {
  const carried = carriedBy(structure);
  const live = new Array<number>(layers.length + 1).fill(0);
  for (const x of crossings(inferred, layers)) {
    if (carried(x)) continue;
    live[x.at + 1] = at(live, x.at + 1) + 1;
    live[x.lastRead + 1] = at(live, x.lastRead + 1) - 1;
  }
  const cuts: number[] = [];
  let crossing = 0;
  for (let c = 1; c < layers.length; c++) {
    crossing += at(live, c);
    if (crossing <= 1) cuts.push(c);
  }
  return cuts;
}

/** The allowed cuts of a plan: block boundaries that close in a transformer, every closing cut elsewhere. */
export function pipelineCuts(structure: ModelStructure, inferred: InferredModel, layers: readonly Layer[]): number[] {
  const closing = closingCuts(inferred, layers, structure);
  if (!structure.transformer || structure.blocks.length === 0) return closing;
  const closes = new Set(closing);
  // The last block's boundary is not a cut: the final norm, the head and the loss stay with it.
  return structure.blocks.slice(0, -1).map((b) => b.end + 1).filter((c) => closes.has(c));
}

/**
 * Throws naming the values that would cross a pipeline part boundary where only one is sent.
 * `starts` are the parts' first layers in model order; `where` names the plan's source.
 */
export function checkCutsClose(inferred: InferredModel, layers: readonly Layer[], starts: readonly number[], where: string, structure?: ModelStructure): void {
  if (starts.length < 2) return;
  const carried = carriedBy(structure);
  const all = crossings(inferred, layers).filter((x) => !carried(x));
  for (const c of starts.slice(1)) {
    const across = all.filter((x) => x.at < c && x.lastRead >= c);
    if (across.length <= 1) continue;
    const [first, second] = across.sort((a, b) => b.at - a.at);
    if (first === undefined || second === undefined) continue;
    const writer = (x: Crossing): string => (x.at >= 0 ? ` (written by layer '${at(layers, x.at).name}')` : '');
    const reader = second.reader >= 0 ? ` and read by layer '${at(layers, second.reader).name}'` : '';
    throw new InputError(`${where}: the pipeline cut before layer '${at(layers, c).name}' does not close: besides '${first.value}'${writer(first)}, value '${second.value}'${writer(second)}${reader} would cross it, but a stage sends one tensor; cut where one tensor crosses (between blocks)`);
  }
}

/** One pipeline boundary's send: the values crossing it (the stream first), with their elements. */
export interface BoundarySend {
  /**
   * `carried`: passed along besides the residual stream. `hidden`: shaped as a hidden state (the
   * stream, an encoder's output, a decoder's embedding), so split by sequence under --sp as
   * Megatron-LM's pipeline sends it; a relative position bias [b, heads, q, k] is sent whole.
   */
  values: { name: string; elements: number; carried: boolean; hidden: boolean }[];
}

/** What each boundary between parts (`starts`, model order) sends: the stream and any carried values. */
export function pipelineSends(inferred: InferredModel, layers: readonly Layer[], starts: readonly number[], structure: ModelStructure): BoundarySend[] {
  const carried = carriedBy(structure);
  const all = crossings(inferred, layers);
  const elementsOf = (value: string): number => {
    const shape = inferred.values.get(value)?.shape ?? [];
    return shape.reduce<number>((a, d) => a * (typeof d === 'number' ? d : Number.NaN), 1);
  };
  // Hidden states: the shapes of the values blocks leave on the residual stream.
  const shapeKey = (value: string): string => (inferred.values.get(value)?.shape ?? []).map(String).join('x');
  const hiddenShapes = new Set(structure.blocks.map((b) => shapeKey(b.output)));
  return starts.slice(1).map((c) => {
    const across = all.filter((x) => x.at < c && x.lastRead >= c).sort((a, b) => Number(carried(a)) - Number(carried(b)) || b.at - a.at);
    return { values: across.map((x) => ({ name: x.value, elements: elementsOf(x.value), carried: carried(x), hidden: !carried(x) || hiddenShapes.has(shapeKey(x.value)) })) };
  });
}
