/**
 * The model-structure stage: lowered layers + the graph -> ModelStructure (structure/types.ts),
 * recognised once from data flow and read by every later stage. In order:
 * 1. attentions (structure/attention.ts), then MLPs and mixtures of experts (structure/mlp.ts);
 * 2. embeddings: the largest table looked up by a graph input is the word embedding, others are
 *    position or token-type embeddings; heads: the projection back onto the word vocabulary (tied
 *    to the table or not) is the LM head, other linear layers after the last block are a pooler
 *    (hidden -> hidden) or a classifier;
 * 3. blocks: each attention (with the cross-attentions after it) and the MLP that follows, from the
 *    first norm feeding them to the value they leave on the residual stream, with their residual
 *    topology (pre-norm, post-norm, parallel attention and MLP);
 * 4. where vector work sits: inside an attention core, on activations split by a column-parallel
 *    layer, or on the residual stream.
 * Without an attention product nothing is a transformer and every layer is 'other' or 'stream'.
 */
import { at } from '../errors.js';
import type { Layer } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';
import { opRowOf } from '../shape/rules/index.js';
import type { LoweringName } from '../shape/op-table.js';
import { findAttentions, type IsLinear } from './attention.js';
import { StructureGraph } from './graph.js';
import { findMlps, groupExperts } from './mlp.js';
import type { AttentionStructure, BlockStructure, EmbeddingStructure, HeadStructure, LayerPart, MlpStructure, ModelStructure, ResidualTopology, VectorRegion } from './types.js';

/** Lowerings whose layers are linear projections (convolutions and recurrences are not). */
const LINEAR_LOWERINGS: ReadonlySet<LoweringName> = new Set(['gemm', 'matmul', 'qlinear-matmul', 'einsum', 'ms-attention']);

export function analyseStructure(inferred: InferredModel, layers: readonly Layer[]): ModelStructure {
  const parts: LayerPart[] = layers.map(initialPart);
  const noEmbeddings: EmbeddingStructure = { word: -1, position: [], tokenType: [], vocab: 0, width: 0 };
  // Every transformer pattern starts from an attention product: without one the graph need not be walked.
  if (!layers.some((l) => l.kind === 'activation-gemm')) return { parts, attentions: [], mlps: [], blocks: [], embeddings: noEmbeddings, heads: [], transformer: false };
  const graph = new StructureGraph(inferred, layers);
  const nodes = new Map(inferred.order.map((n) => [n.name, n]));
  const isLinear: IsLinear = (i) => {
    const l = layers[i];
    if (l === undefined || l.kind !== 'gemm') return false;
    const node = nodes.get(l.node);
    const lowering = node === undefined ? undefined : opRowOf(node)?.lowering;
    return lowering !== undefined && LINEAR_LOWERINGS.has(lowering);
  };
  const attentions = findAttentions(graph, isLinear);
  if (attentions.length === 0) return { parts, attentions: [], mlps: [], blocks: [], embeddings: noEmbeddings, heads: [], transformer: false };
  const taken = new Set<number>();
  attentions.forEach((a, ai) => {
    const mark = (i: number, role: Extract<LayerPart, { kind: 'attention' }>['role']): void => {
      if (i < 0 || taken.has(i)) return;
      taken.add(i);
      parts[i] = { kind: 'attention', role, attention: ai };
    };
    mark(a.scores, 'scores');
    mark(a.context, 'context');
    if (a.projection === 'qkv' || a.projection === 'fused-node') mark(a.q, 'qkv');
    else {
      mark(a.q, 'q');
      if (a.projection === 'kv') mark(a.k, 'kv');
      else {
        mark(a.k, 'k');
        mark(a.v, 'v');
      }
    }
    mark(a.out, 'out');
    for (const c of a.core) parts[c] = { kind: 'vector', region: 'core' };
  });
  const barrier = (i: number): boolean => {
    const c = layers[i]?.vector?.opClass;
    return c === 'layernorm' || c === 'softmax';
  };
  const mlps = findMlps(graph, isLinear, taken, barrier);
  mlps.forEach((m, mi) => {
    for (const i of m.up) parts[i] = { kind: 'mlp', role: 'up', mlp: mi };
    for (const i of m.gate) parts[i] = { kind: 'mlp', role: 'gate', mlp: mi };
    for (const i of m.down) parts[i] = { kind: 'mlp', role: 'down', mlp: mi };
    for (const i of [...m.up, ...m.gate, ...m.down]) taken.add(i);
  });
  for (const [moe, router] of groupExperts(graph, isLinear, mlps, taken)) {
    parts[router] = { kind: 'router', mlp: moe };
    taken.add(router);
  }
  const embeddings = findEmbeddings(graph, parts);
  const blocks = findBlocks(graph, parts, attentions, mlps);
  const heads = findHeads(graph, parts, embeddings, blocks, isLinear, taken);
  labelStacks(blocks, heads, attentions);
  markVectorRegions(graph, parts);
  const cross = attentions.find((a) => a.kind === 'cross');
  return { parts, attentions, mlps, blocks, embeddings, heads, transformer: true, ...(cross?.source !== undefined ? { encoderOutput: cross.source } : {}) };
}

/**
 * The part every layer starts as, one frozen object per kind shared by all layers (parts are
 * replaced, never changed): a 100k-layer graph otherwise keeps 100k small objects to the end.
 */
const INITIAL_PARTS = {
  norm: Object.freeze({ kind: 'norm' }),
  stream: Object.freeze({ kind: 'vector', region: 'stream' }),
  embedding: Object.freeze({ kind: 'embedding', role: 'other' }),
  other: Object.freeze({ kind: 'other' }),
} as const satisfies Record<string, LayerPart>;

const SPLIT_PART: LayerPart = Object.freeze({ kind: 'vector', region: 'split' });

function initialPart(l: Layer): LayerPart {
  if (l.kind === 'vector') return l.vector?.opClass === 'layernorm' ? INITIAL_PARTS.norm : INITIAL_PARTS.stream;
  return l.kind === 'embedding' ? INITIAL_PARTS.embedding : INITIAL_PARTS.other;
}

/** The word embedding (the largest table looked up by a graph input) and the others. */
function findEmbeddings(graph: StructureGraph, parts: LayerPart[]): EmbeddingStructure {
  const layers = graph.layers;
  const lookedUpBy = (l: Layer): string | undefined => {
    let v = l.activationInputs[0];
    for (let hops = 0; v !== undefined && hops < 8; hops++) {
      if (graph.graphInputs.has(v)) return v;
      const node = graph.producer.get(v);
      if (node === undefined || graph.flow(node) !== 'layout') return undefined;
      v = node.inputs[0];
    }
    return undefined;
  };
  const tables = layers.flatMap((l, i) => (l.kind === 'embedding' ? [{ i, l, input: lookedUpBy(l) }] : []));
  const word = tables.filter((t) => t.input !== undefined).sort((a, b) => b.l.weightParams - a.l.weightParams || a.i - b.i)[0];
  const result: EmbeddingStructure = { word: -1, position: [], tokenType: [], vocab: 0, width: 0 };
  const stream = word === undefined ? undefined : joinedValues(graph, word.l.output);
  for (const t of tables) {
    if (word !== undefined && t.l.weightTensors[0] === word.l.weightTensors[0]) {
      // The word table, looked up once per stack (an encoder-decoder's shared embedding).
      parts[t.i] = { kind: 'embedding', role: 'word' };
      if (result.word < 0) result.word = t.i;
    } else if (stream !== undefined && !joins(graph, t.l.output, stream)) {
      // A table that never joins the word embedding's stream (rotary cos/sin gathered by position
      // ids, a relative position bias added to the scores) is no position or token-type embedding.
      parts[t.i] = { kind: 'embedding', role: 'other' };
    } else if (t.input !== undefined) {
      parts[t.i] = { kind: 'embedding', role: 'token-type' };
      result.tokenType.push(t.i);
    } else {
      parts[t.i] = { kind: 'embedding', role: 'position' };
      result.position.push(t.i);
    }
  }
  if (word !== undefined) {
    const width = word.l.outputShape[word.l.outputShape.length - 1] ?? 1;
    result.width = width;
    result.vocab = width > 0 ? word.l.weightParams / width : 0;
  }
  return result;
}

/** Values reached from `value` across layout and linear ops (sums, scales), stopping at GEMM and embedding layers. */
function joinedValues(graph: StructureGraph, value: string): Set<string> {
  const reached = new Set<string>();
  const stack = [value];
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    if (reached.has(v)) continue;
    reached.add(v);
    for (const node of graph.consumers.get(v) ?? []) {
      const flow = graph.flow(node);
      if (flow !== 'layout' && flow !== 'linear') continue;
      for (const o of node.outputs) if (o !== '' && !graph.cornerByOutput.has(o)) stack.push(o);
    }
  }
  return reached;
}

/** Whether a table's lookup is summed into the stream (the values `joinedValues` found from the word embedding). */
function joins(graph: StructureGraph, value: string, stream: ReadonlySet<string>): boolean {
  for (const v of joinedValues(graph, value)) if (stream.has(v)) return true;
  return false;
}

/** The LM head (tied to the word table, or the last projection onto the vocabulary), pooler and classifiers. */
function findHeads(graph: StructureGraph, parts: LayerPart[], e: EmbeddingStructure, blocks: BlockStructure[], isLinear: IsLinear, taken: Set<number>): HeadStructure[] {
  const layers = graph.layers;
  const heads: HeadStructure[] = [];
  const table = e.word >= 0 ? at(layers, e.word).weightTensors[0] : undefined;
  let lm = table === undefined ? -1 : layers.findIndex((l, i) => isLinear(i) && !taken.has(i) && l.weightTensors.includes(table));
  const tied = lm >= 0;
  if (lm < 0 && e.vocab > 0) {
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = at(layers, i);
      if (isLinear(i) && !taken.has(i) && l.gemm.fwd.n === e.vocab && l.gemm.fwd.k === e.width) {
        lm = i;
        break;
      }
    }
  }
  if (lm >= 0) {
    parts[lm] = { kind: 'head', role: 'lm' };
    taken.add(lm);
    heads.push({ layer: lm, role: 'lm', tiedTo: tied ? e.word : -1 });
  }
  const lastBlockEnd = blocks.length > 0 ? at(blocks, blocks.length - 1).end : -1;
  layers.forEach((l, i) => {
    if (i <= lastBlockEnd || taken.has(i) || !isLinear(i)) return;
    // A pooler maps the hidden state onto itself; anything else after the blocks classifies.
    const role = l.gemm.fwd.n === l.gemm.fwd.k ? 'pooler' : 'classifier';
    parts[i] = { kind: 'head', role };
    taken.add(i);
    heads.push({ layer: i, role, tiedTo: -1 });
  });
  return heads.sort((a, b) => a.layer - b.layer);
}

/** Parts whose outputs are split over the tensor-parallel group by features or heads. */
function splitsOutput(p: LayerPart | undefined): boolean {
  if (p === undefined) return false;
  if (p.kind === 'attention') return p.role !== 'out';
  if (p.kind === 'mlp') return p.role !== 'down';
  return p.kind === 'head' && p.role === 'lm';
}

/** Vector work reading (through other vector work) a split output is on split activations. */
function markVectorRegions(graph: StructureGraph, parts: LayerPart[]): void {
  const layers = graph.layers;
  const splitValue = new Map<string, boolean>();
  const isSplit = (value: string, depth: number): boolean => {
    const known = splitValue.get(value);
    if (known !== undefined) return known;
    let split = false;
    const layer = graph.layerByOutput.get(value);
    if (layer !== undefined) {
      const p = parts[layer];
      split = p?.kind === 'vector' ? p.region !== 'stream' : splitsOutput(p);
    } else if (depth < 64) {
      const node = graph.producer.get(value);
      if (node !== undefined) split = node.inputs.some((i) => graph.isData(i) && isSplit(i, depth + 1));
    }
    splitValue.set(value, split);
    return split;
  };
  layers.forEach((l, i) => {
    const p = at(parts, i);
    if (p.kind !== 'vector' || p.region === 'core') return;
    const region: VectorRegion = l.activationInputs.some((a) => isSplit(a, 0)) ? 'split' : 'stream';
    parts[i] = region === 'stream' ? INITIAL_PARTS.stream : SPLIT_PART;
    splitValue.set(l.output, region === 'split');
  });
}

interface Unit {
  first: number;
  attention?: number;
  mlp?: number;
}

/** Blocks: each attention with the cross-attentions after it and the MLP that follows. */
function findBlocks(graph: StructureGraph, parts: LayerPart[], attentions: AttentionStructure[], mlps: MlpStructure[]): BlockStructure[] {
  const layers = graph.layers;
  const firstOf = (ids: number[]): number => Math.min(...ids.filter((i) => i >= 0));
  const units: Unit[] = [
    ...attentions.map((a, i) => ({ first: firstOf([a.q, a.k, a.v, a.scores]), attention: i })),
    ...mlps.flatMap((m, i) => (m.expertOf !== undefined || m.sharedOf !== undefined ? [] : [{ first: firstOf(m.kind === 'moe' && m.router !== undefined ? [m.router, ...m.up, ...m.gate] : [...m.up, ...m.gate]), mlp: i }])),
  ].sort((a, b) => a.first - b.first);
  const groups: { attentions: number[]; mlp?: number }[] = [];
  for (const u of units) {
    const open = groups[groups.length - 1];
    if (u.attention !== undefined) {
      const cross = at(attentions, u.attention).kind === 'cross';
      if (open !== undefined && open.mlp === undefined && open.attentions.length > 0 && cross) open.attentions.push(u.attention);
      else groups.push({ attentions: [u.attention] });
    } else if (u.mlp !== undefined) {
      if (open !== undefined && open.mlp === undefined && open.attentions.length > 0) open.mlp = u.mlp;
      else groups.push({ attentions: [], mlp: u.mlp });
    }
  }
  const postNorm = groups.some((g) => residualOf(graph, attentions, mlps, g) === 'post-norm');
  const blocks: BlockStructure[] = [];
  groups.forEach((g, b) => {
    const next = groups[b + 1];
    const limit = next === undefined ? layers.length : blockFirstLayer(graph, parts, attentions, mlps, next, postNorm);
    const mlp = g.mlp === undefined ? undefined : at(mlps, g.mlp);
    const closing = Math.max(...g.attentions.map((a) => at(attentions, a).out), ...(mlp?.down ?? []), ...(mlp?.shared ?? []).flatMap((e) => at(mlps, e).down));
    const end = closing < 0 ? limit - 1 : streamEnd(graph, closing, limit, postNorm);
    // A block starts where the one before ended; the first block, and the decoder's first after the
    // encoder (the encoder's final norm and the decoder's embeddings lie between), at its own first layer.
    const opensDecoder = b > 0 && g.attentions.some((a) => at(attentions, a).kind === 'cross') && !(groups[b - 1]?.attentions ?? []).some((a) => at(attentions, a).kind === 'cross');
    const start = b === 0 || opensDecoder ? blockFirstLayer(graph, parts, attentions, mlps, g, postNorm) : at(blocks, b - 1).end + 1;
    const norms: number[] = [];
    for (let i = start; i <= end; i++) if (at(parts, i).kind === 'norm') norms.push(i);
    const cross = g.attentions.some((a) => at(attentions, a).kind === 'cross');
    blocks.push({
      start, end, stack: cross ? 'decoder' : 'encoder', residual: residualOf(graph, attentions, mlps, g), attentions: g.attentions,
      ...(g.mlp !== undefined ? { mlp: g.mlp } : {}), norms, output: at(layers, end).output,
    });
  });
  return blocks;
}

/**
 * Blocks from the first one with cross-attention on are the decoder's, those before it the
 * encoder's. A single stack is a decoder when its self-attention is causal, an encoder when its
 * mask comes from a graph input only (BERT's padding mask, even under an MLM head); otherwise
 * (a folded static mask, or none) a decoder when it ends in an LM head.
 */
function labelStacks(blocks: BlockStructure[], heads: readonly HeadStructure[], attentions: readonly AttentionStructure[]): void {
  const firstDecoder = blocks.findIndex((b) => b.stack === 'decoder');
  const masks = new Set(attentions.filter((a) => a.kind === 'self').map((a) => a.mask));
  const single = masks.has('causal') ? 'decoder' : masks.has('padding') && !masks.has('static') ? 'encoder' : heads.some((h) => h.role === 'lm') ? 'decoder' : 'encoder';
  blocks.forEach((b, i) => {
    b.stack = firstDecoder < 0 ? single : i >= firstDecoder ? 'decoder' : 'encoder';
  });
}

/** The first layer of a block: its first projection, or (pre-norm) the norm feeding it. */
function blockFirstLayer(graph: StructureGraph, parts: LayerPart[], attentions: AttentionStructure[], mlps: MlpStructure[], g: { attentions: number[]; mlp?: number }, postNorm: boolean): number {
  const layers = graph.layers;
  const projections = [
    ...g.attentions.flatMap((a) => {
      const x = at(attentions, a);
      // A cross-attention's K and V read the encoder's output, not this block's stream.
      return (x.kind === 'cross' ? [x.q] : [x.q, x.k, x.v]).filter((i) => i >= 0);
    }),
    ...(g.mlp === undefined ? [] : [...at(mlps, g.mlp).up, ...at(mlps, g.mlp).gate, ...(at(mlps, g.mlp).router !== undefined ? [at(mlps, g.mlp).router as number] : [])]),
  ];
  let first = projections.length > 0 ? Math.min(...projections) : at(attentions, at(g.attentions, 0)).scores;
  // Post-norm: the norm before the first block is the embeddings' (BERT's embedding LayerNorm).
  if (postNorm) return first;
  // Pre-norm: the norm the first projection reads starts the block.
  if (!postNorm) for (const p of projections) {
    const input = at(layers, p).activationInputs[0];
    const source = input === undefined ? undefined : graph.layerByOutput.get(graph.root(input));
    if (source !== undefined && at(parts, source).kind === 'norm' && source < first) first = source;
  }
  return first;
}

/**
 * The last layer of a block: from its closing projection along the only reader of each value
 * (bias add, dropout, the residual add) until a value has several readers (the residual stream);
 * a post-norm model's norm after the residual add belongs to the block.
 */
function streamEnd(graph: StructureGraph, closing: number, limit: number, postNorm: boolean): number {
  const layers = graph.layers;
  let end = closing;
  for (;;) {
    const readers = graph.readersThroughLayout(at(layers, end).output);
    const only = readers[0];
    if (readers.length !== 1 || only === undefined || only >= limit || only <= end) return end;
    const next = at(layers, only);
    if (next.kind !== 'vector') return end;
    if (next.vector?.opClass === 'layernorm' && !postNorm) return end;
    end = only;
  }
}

/** How a block's residual stream runs: the MLP reading the block's input (parallel), or after a norm of the sum (post-norm), or pre-norm. */
function residualOf(graph: StructureGraph, attentions: AttentionStructure[], mlps: MlpStructure[], g: { attentions: number[]; mlp?: number }): ResidualTopology {
  const layers = graph.layers;
  const self = g.attentions[0] === undefined ? undefined : at(attentions, g.attentions[0]);
  if (self === undefined || self.out < 0) return 'none';
  const attnOut = at(layers, self.out).output;
  if (g.mlp !== undefined) {
    const m = at(mlps, g.mlp);
    const first = m.router ?? at(m.gate.length > 0 ? m.gate : m.up, 0);
    const input = at(layers, first).activationInputs[0];
    // Parallel: the MLP's input does not depend on the attention's output.
    if (input !== undefined && !dependsOn(graph, input, attnOut, self.out)) return 'parallel';
  }
  // The residual add after the attention: does it add the value Q reads (post-norm) or the norm's input (pre-norm)?
  const qIn = self.q >= 0 ? at(layers, self.q).activationInputs[0] : undefined;
  if (qIn === undefined) return 'none';
  // Walked over the graph's ops, not vector layers, so it holds with --vector-ops off too.
  let v = attnOut;
  for (let hops = 0; hops < 32; hops++) {
    const consumers = graph.consumers.get(v) ?? [];
    const add = consumers.find((n) => graph.flow(n) === 'linear' && n.inputs.filter((i) => graph.isData(i)).length >= 2);
    if (add !== undefined) {
      const others = add.inputs.filter((i) => graph.isData(i)).map((a) => graph.root(a)).filter((a) => a !== graph.root(v));
      return others.includes(graph.root(qIn)) ? 'post-norm' : 'pre-norm';
    }
    const only = consumers[0];
    const flow = only === undefined ? 'opaque' : graph.flow(only);
    if (consumers.length !== 1 || only === undefined || (flow !== 'layout' && flow !== 'linear')) return 'none';
    v = only.outputs[0] ?? '';
  }
  return 'none';
}

/** Whether `value` is computed from `source` (the output of layer `sourceLayer`), walking back over layers and ops. */
function dependsOn(graph: StructureGraph, value: string, source: string, sourceLayer: number): boolean {
  const seen = new Set<string>();
  const stack = [value];
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    if (v === source) return true;
    if (seen.has(v) || !graph.isData(v)) continue;
    seen.add(v);
    const layer = graph.layerByOutput.get(v);
    if (layer !== undefined && layer < sourceLayer) continue;
    const node = graph.producer.get(v);
    if (node !== undefined) for (const i of node.inputs) stack.push(i);
  }
  return false;
}
