/**
 * Tensor-parallel roles found from the graph, not from layer names (Megatron-LM's scheme):
 * - attention: the weight GEMMs whose outputs reach an attention product (QK^T, AV) through
 *   reshapes, splits, scaling and rotary arithmetic are column-parallel (Q, K, V, fused or not);
 *   the first weight GEMM the context reaches through reshapes is row-parallel (output projection);
 *   the products themselves are split by heads;
 * - MLP: a weight GEMM fed through a nonlinearity by other weight GEMMs is row-parallel, those
 *   feeding it (up, and gate in gated MLPs) column-parallel;
 * - the largest embedding looked up by a graph input is vocab-parallel, and the weight GEMM that
 *   maps back onto its vocabulary (tied or not) is the column-parallel LM head;
 * - without attention in the model (CNNs, RNNs) nothing matches: the legacy MODEL split.
 */
import { at } from '../errors.js';
import { valueLinks, type Node } from '../ir/graph.js';
import type { Layer } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';
import type { TpRole } from './types.js';

export interface RoleAssignment {
  role: TpRole;
  reason: string;
  /** The column-parallel LM head, which also carries the vocab-parallel loss's reductions. */
  lmHead?: boolean;
}

/** Ops between a projection and an attention product: layout changes, scaling, rotary, masking. */
const ATTENTION_PATH = new Set([
  'Reshape', 'Transpose', 'Split', 'Slice', 'Squeeze', 'Unsqueeze', 'Concat', 'Mul', 'Add', 'Sub', 'Div', 'Neg', 'Cast',
  'CastLike', 'Identity', 'Softmax', 'Where', 'Expand', 'Dropout', 'Gather', 'RotaryEmbedding', 'com.microsoft::RotaryEmbedding', 'Flatten',
]);
/** Ops between the attention context and its output projection. */
const LAYOUT_ONLY = new Set(['Reshape', 'Transpose', 'Identity', 'Cast', 'Dropout', 'Squeeze', 'Unsqueeze', 'Flatten', 'Contiguous']);
/** Ops of an MLP's activation (GELU and its tanh/erf expansions, SiLU, gating). */
const MLP_PATH = new Set([
  'Gelu', 'com.microsoft::Gelu', 'com.microsoft::FastGelu', 'com.microsoft::BiasGelu', 'com.microsoft::QuickGelu', 'Relu', 'Sigmoid',
  'HardSigmoid', 'HardSwish', 'Tanh', 'Erf', 'Softplus', 'Mish', 'Elu', 'LeakyRelu', 'Mul', 'Div', 'Add', 'Sub', 'Pow', 'Sqrt', 'Neg', 'Exp', 'Cast',
  'Identity', 'Dropout', 'Clip',
]);
const NONLINEAR = new Set([
  'Gelu', 'com.microsoft::Gelu', 'com.microsoft::FastGelu', 'com.microsoft::BiasGelu', 'com.microsoft::QuickGelu', 'Relu', 'Sigmoid',
  'HardSigmoid', 'HardSwish', 'Tanh', 'Erf', 'Softplus', 'Mish', 'Elu', 'LeakyRelu', 'Clip',
]);
const INDEX_PATH = new Set(['Cast', 'Identity', 'Reshape', 'Unsqueeze', 'Squeeze', 'Flatten']);
/** Ops that compute a linear layer's product (convolutions never take a transformer role). */
const LINEAR_OPS = new Set(['MatMul', 'Gemm', 'FusedMatMul', 'MatMulInteger', 'QLinearMatMul', 'Einsum', 'Attention']);

const key = (n: Node): string => (n.domain === '' ? n.opType : `${n.domain}::${n.opType}`);

class GraphIndex {
  readonly producer: ReadonlyMap<string, Node>;
  readonly consumers: ReadonlyMap<string, readonly Node[]>;
  /** Layer index by the graph value it writes (sub-layers of fused nodes excluded). */
  readonly layerByOutput = new Map<string, number>();
  readonly graphInputs: Set<string>;

  constructor(inferred: InferredModel, layers: readonly Layer[]) {
    ({ producer: this.producer, consumers: this.consumers } = valueLinks(inferred.order));
    // Vector work (scaling, masking, softmax, GELU) is walked through, not stopped at.
    layers.forEach((l, i) => {
      if (l.kind !== 'vector' && !this.layerByOutput.has(l.output)) this.layerByOutput.set(l.output, i);
    });
    this.graphInputs = new Set(inferred.model.graph.inputs.map((i) => i.name));
  }

  /**
   * Layers reached walking backwards from `value` through ops in `through`; stops at any layer's
   * output. `sawNonlinear` reports whether the walk crossed an op of NONLINEAR.
   */
  layersBehind(value: string, through: ReadonlySet<string>, initializers: ReadonlySet<string>): { layers: Set<number>; sawNonlinear: boolean } {
    const layers = new Set<number>();
    let sawNonlinear = false;
    const seen = new Set<string>();
    const stack = [value];
    for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
      if (seen.has(v) || initializers.has(v)) continue;
      seen.add(v);
      const layer = this.layerByOutput.get(v);
      if (layer !== undefined) {
        layers.add(layer);
        continue;
      }
      const node = this.producer.get(v);
      if (node === undefined || !through.has(key(node))) continue;
      if (NONLINEAR.has(key(node))) sawNonlinear = true;
      for (const i of node.inputs) if (i !== '') stack.push(i);
    }
    return { layers, sawNonlinear };
  }

  /** Layers whose activation input is reached walking forwards from `value` through `through`. */
  layersAhead(value: string, through: ReadonlySet<string>, layerByInput: ReadonlyMap<string, number[]>): Set<number> {
    const found = new Set<number>();
    const seen = new Set<string>();
    const stack = [value];
    for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
      if (seen.has(v)) continue;
      seen.add(v);
      const direct = layerByInput.get(v);
      if (direct !== undefined && direct.length > 0) {
        for (const l of direct) found.add(l);
        continue;
      }
      for (const node of this.consumers.get(v) ?? []) if (through.has(key(node))) for (const o of node.outputs) if (o !== '') stack.push(o);
    }
    return found;
  }
}

export function assignTpRoles(inferred: InferredModel, layers: readonly Layer[]): RoleAssignment[] {
  // Every pattern starts from an attention product: without one (CNNs, RNNs, MLPs) the graph need not be walked.
  if (!layers.some((l) => l.kind === 'activation-gemm')) return layers.map((l) => fallback(l, false));
  const index = new GraphIndex(inferred, layers);
  const initializers = inferred.initializerNames;
  const roles: (RoleAssignment | undefined)[] = layers.map(() => undefined);
  const isLinear = (i: number): boolean => {
    const l = at(layers, i);
    return l.kind === 'gemm' && LINEAR_OPS.has(l.op);
  };
  const layerByInput = new Map<string, number[]>();
  layers.forEach((l, i) => {
    if (l.kind !== 'gemm') return;
    for (const a of l.activationInputs) {
      const readers = layerByInput.get(a);
      if (readers === undefined) layerByInput.set(a, [i]);
      else readers.push(i);
    }
  });

  // Attention: fused nodes (com.microsoft::Attention) first, then products of two activations.
  let attention = false;
  layers.forEach((l, i) => {
    if (l.kind !== 'activation-gemm') return;
    attention = true;
    roles[i] = { role: 'heads', reason: 'attention product' };
    const sameNode = layers.filter((x) => x.node === l.node && x.kind === 'gemm').map((x) => layers.indexOf(x));
    for (const q of sameNode) roles[q] = { role: 'column', reason: 'fused QKV projection' };
    for (const operand of l.activationInputs) {
      for (const p of index.layersBehind(operand, ATTENTION_PATH, initializers).layers) {
        if (isLinear(p) && roles[p] === undefined) roles[p] = { role: 'column', reason: 'Q/K/V projection (feeds an attention product)' };
      }
    }
  });
  if (attention) {
    // The context product is the one whose output reaches a projection through layout ops only.
    layers.forEach((l) => {
      if (l.kind !== 'activation-gemm') return;
      for (const o of index.layersAhead(l.output, LAYOUT_ONLY, layerByInput)) {
        if (isLinear(o) && roles[o] === undefined) roles[o] = { role: 'row', reason: `attention output projection (reads ${l.name})` };
      }
    });
    // MLPs: a weight GEMM fed through a nonlinearity by other weight GEMMs.
    layers.forEach((l, i) => {
      if (!isLinear(i) || roles[i] !== undefined) return;
      for (const input of l.activationInputs) {
        const behind = index.layersBehind(input, MLP_PATH, initializers);
        const feeders = [...behind.layers].filter((p) => isLinear(p) && roles[p] === undefined);
        if (!behind.sawNonlinear || feeders.length === 0 || feeders.length !== behind.layers.size) continue;
        roles[i] = { role: 'row', reason: 'MLP down projection' };
        for (const p of feeders) roles[p] = { role: 'column', reason: feeders.length > 1 ? 'MLP gate/up projection' : 'MLP up projection' };
      }
    });
    assignEmbeddingsAndHead(index, layers, roles, initializers);
    assignVectorWork(index, layers, roles, initializers);
  }
  return layers.map((l, i) => roles[i] ?? fallback(l, attention));
}

/** Any op between layers: vector work is sharded when what it reads is already split T ways. */
const ANY_PATH = new Set([...ATTENTION_PATH, ...MLP_PATH]);

function assignVectorWork(index: GraphIndex, layers: readonly Layer[], roles: (RoleAssignment | undefined)[], initializers: ReadonlySet<string>): void {
  layers.forEach((l, i) => {
    if (l.kind !== 'vector') return;
    const behind = l.activationInputs.flatMap((a) => [...index.layersBehind(a, ANY_PATH, initializers).layers]);
    const split = behind.find((p) => roles[p]?.role === 'column' || roles[p]?.role === 'heads');
    roles[i] = split !== undefined
      ? { role: 'sharded', reason: `reads ${at(layers, split).name}'s split output` }
      : { role: 'replicated', reason: 'on the full hidden state (split by sequence under --sp)' };
  });
}

function assignEmbeddingsAndHead(index: GraphIndex, layers: readonly Layer[], roles: (RoleAssignment | undefined)[], initializers: ReadonlySet<string>): void {
  const lookedUpByInput = (l: Layer): boolean => {
    let v = l.activationInputs[0];
    for (let hops = 0; v !== undefined && hops < 8; hops++) {
      if (index.graphInputs.has(v) && !initializers.has(v)) return true;
      const node = index.producer.get(v);
      if (node === undefined || !INDEX_PATH.has(key(node))) return false;
      v = node.inputs[0];
    }
    return false;
  };
  const embeddings = layers.map((l, i) => ({ l, i })).filter(({ l }) => l.kind === 'embedding');
  const candidates = embeddings.filter(({ l }) => lookedUpByInput(l)).sort((a, b) => b.l.weightParams - a.l.weightParams);
  const word = candidates[0];
  for (const { i } of embeddings) roles[i] = { role: 'replicated', reason: 'position/type embedding' };
  if (word === undefined) return;
  roles[word.i] = { role: 'vocab', reason: 'word embedding (vocab-parallel)' };
  const width = word.l.outputShape[word.l.outputShape.length - 1] ?? 1;
  const vocab = word.l.weightParams / width;
  const table = word.l.weightTensors[0];
  // The LM head: tied to the table, or the last projection onto the vocabulary.
  let head = layers.findIndex((l) => l.kind === 'gemm' && table !== undefined && l.weightTensors.includes(table));
  if (head < 0) {
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = at(layers, i);
      if (l.kind === 'gemm' && roles[i] === undefined && l.gemm.fwd.n === vocab && l.gemm.fwd.k === width) {
        head = i;
        break;
      }
    }
  }
  if (head >= 0) roles[head] = { role: 'column', reason: 'LM head (column-parallel over the vocabulary)', lmHead: true };
}

/** The fallback roles, one shared object each (a model of 100k layers needs no 100k copies). */
const FALLBACK = {
  embedding: { role: 'replicated', reason: 'embedding' },
  vector: { role: 'split', reason: 'vector work on the split outputs' },
  transformer: { role: 'split', reason: 'no Megatron pattern: outputs split and all-gathered' },
  other: { role: 'split', reason: 'no transformer pattern: outputs split and all-gathered' },
} as const satisfies Record<string, RoleAssignment>;
for (const r of Object.values(FALLBACK)) Object.freeze(r);

function fallback(l: Layer, transformer: boolean): RoleAssignment {
  if (transformer && l.kind === 'embedding') return FALLBACK.embedding;
  if (l.kind === 'vector') return FALLBACK.vector;
  return transformer ? FALLBACK.transformer : FALLBACK.other;
}
