/**
 * Activation bytes one rank keeps per micro-batch for the backward pass (README, "Memory per
 * rank"), derived from the lowered layers:
 * - a weight GEMM keeps its activation input (for the weight gradient);
 * - an activation GEMM (QK^T, AV) keeps both operands (each gradient needs the other);
 * - softmax keeps its output; GELU, norms, transcendental functions, max-pools and products of two
 *   activations keep their inputs; dropout keeps a 1-byte mask per element; additions, casts and
 *   scalings by constants keep nothing; an embedding keeps its indices;
 * - a tensor kept by several layers (the input of Q, K and V) is counted once.
 * Each kept tensor is counted in the training dtype (masks and indices excepted) on one
 * tensor-parallel rank: layers working on split activations (row, heads, sharded, split vector
 * work) keep 1 / T; those on the full hidden state (column inputs, replicated vector work) keep it
 * all, or 1 / T under sequence parallelism (Megatron-LM keeps the sequence shard and re-gathers it).
 * Under context parallelism each rank keeps the tensors of its S/C of the sequence: 1 / C of each.
 */
import { at } from '../errors.js';
import type { Layer } from '../layers/types.js';
import { backwardKeepsOf } from '../shape/op-table.js';
import { OP_TABLE } from '../shape/rules/index.js';
import type { LayerPlan, ParallelPlan, RecomputeMode } from '../plan/types.js';

/** One tensor a layer keeps for backward. */
export interface KeptTensor {
  /** The graph value (or `LAYER#mask`): tensors kept by several layers are counted once. */
  key: string;
  /** Bytes on one tensor-parallel rank for one micro-batch. */
  bytes: number;
  /** Part of the attention core (QK^T, softmax, dropout, AV), recomputed by selective recomputation. */
  attentionCore: boolean;
}

const MASK_BYTES = 1;

const product = (dims: readonly number[]): number => dims.reduce((a, b) => a * b, 1);

/** Elements of a layer's activation inputs: the output's elements scaled by the bytes ratio (one dtype in and out). */
function inputElements(layer: Layer): number {
  const out = product(layer.outputShape);
  return layer.outputActivationBytes > 0 ? Math.round((out * layer.inputActivationBytes) / layer.outputActivationBytes) : out;
}

/** Ways a tensor kept by a layer of this role is split over the tensor-parallel group. */
function splitWays(plan: ParallelPlan, l: LayerPlan): number {
  const tp = plan.world.tp;
  const fullStateWays = plan.sequenceParallel ? tp : 1;
  switch (l.role) {
    case 'row':
    case 'heads':
      return tp;
    case 'sharded':
    case 'split':
      // Vector work and batched products run on 1 / T of the activations; a weight GEMM split by
      // its outputs reads the whole input.
      return l.layer.kind === 'gemm' ? 1 : tp;
    case 'column':
    case 'replicated':
      return fullStateWays;
    case 'vocab':
      return 1;
  }
}

/**
 * Tensors one layer keeps, before de-duplication; `coreValue` tells which graph values the
 * attention core produces (undefined: the layer is outside the core).
 */
export function keptTensors(plan: ParallelPlan, l: LayerPlan, coreValue?: (value: string) => boolean): KeptTensor[] {
  const layer = l.layer;
  if (l.expert !== undefined) return expertKept(plan, l);
  const bytes = plan.elementBytes;
  // Context parallelism: every kept tensor is of this rank's S/C of the sequence.
  const cp = plan.world.cp ?? 1;
  const ways = splitWays(plan, l) * cp;
  const share = (elements: number, perElement = bytes): number => Math.ceil((elements * perElement) / ways);
  // In the AV product only the probabilities are the core's; V comes from outside it.
  const kept = (key: string, b: number): KeptTensor => ({ key, bytes: b, attentionCore: coreValue !== undefined && (layer.kind !== 'activation-gemm' || coreValue(key)) });
  switch (layer.kind) {
    case 'embedding':
      return [kept(layer.activationInputs[0] ?? `${layer.name}#in`, Math.ceil(layer.inputActivationBytes / cp))];
    case 'gemm':
      return [kept(layer.activationInputs.join('+') || `${layer.name}#in`, share(inputElements(layer)))];
    case 'activation-gemm': {
      const { m, n, k } = layer.gemm.fwd;
      const count = layer.gemmCount;
      const [a, b] = layer.activationInputs;
      return [kept(a ?? `${layer.name}#a`, share(m * k * count)), kept(b ?? `${layer.name}#b`, share(k * n * count))];
    }
    case 'vector':
      return vectorKept(layer, share, kept);
  }
}

/**
 * An expert layer under expert parallelism keeps its input on the rows the dispatcher brought
 * (its GEMM's M on this rank, K of its share: a row layer's input split over ETP); an expert
 * another EP rank holds keeps nothing here.
 */
function expertKept(plan: ParallelPlan, l: LayerPlan): KeptTensor[] {
  if (l.expert?.local === false) return [];
  const layer = l.layer;
  const key = layer.activationInputs.join('+') || `${layer.name}#in`;
  if (layer.kind === 'vector') {
    const v = l.passes.vector;
    return v === undefined ? [] : [{ key: `${layer.name}#expert-in`, bytes: v.bytesIn, attentionCore: false }];
  }
  const gemm = l.passes.fwd[0];
  if (gemm === undefined) return [];
  return [{ key: `${key}#expert`, bytes: gemm.gemm.m * gemm.gemm.k * gemm.count * plan.elementBytes, attentionCore: false }];
}

function vectorKept(layer: Layer, share: (elements: number, perElement?: number) => number, kept: (key: string, b: number) => KeptTensor): KeptTensor[] {
  const work = layer.vector;
  if (work === undefined) return [];
  const out = product(layer.outputShape);
  const activations = layer.activationInputs;
  // What the op keeps is its op-table row's fact (shape/op-table.ts, BackwardKeeps).
  switch (backwardKeepsOf(OP_TABLE.get(layer.op))) {
    case 'mask':
      return [kept(`${layer.name}#mask`, share(out, MASK_BYTES))];
    case 'output':
      return [kept(layer.output, share(out))];
    case 'nothing':
      return [];
    case 'operands':
      if (activations.length < 2) return [];
      break;
    case 'input':
      break;
  }
  return [kept(activations.join('+') || `${layer.name}#in`, share(inputElements(layer)))];
}

/**
 * Layers of `layers` inside an attention core (structure/): its vector work (scale, mask,
 * softmax, dropout) and the context product AV that ends it; and the values the core produces,
 * from the scores QK^T on (QK^T itself keeps Q and K, which are not the core's).
 */
function attentionCore(plan: ParallelPlan, layers: readonly LayerPlan[]): { core: Set<number>; coreValues: Set<string> } {
  const position = positionsIn(plan, layers);
  const core = new Set<number>();
  const coreValues = new Set<string>();
  for (const a of plan.structure.attentions) {
    coreValues.add(at(plan.layers, a.scores).layer.output);
    for (const i of [...a.core, a.context]) {
      const p = position.get(i);
      if (p !== undefined) core.add(p);
      if (i !== a.context) coreValues.add(at(plan.layers, i).layer.output);
    }
  }
  return { core, coreValues };
}

/** Plan layer index -> position in `layers` (a stage's layers, or all of them). */
function positionsIn(plan: ParallelPlan, layers: readonly LayerPlan[]): Map<number, number> {
  const index = new Map<LayerPlan, number>();
  plan.layers.forEach((l, i) => {
    index.set(l, i);
  });
  const position = new Map<number, number>();
  layers.forEach((l, p) => {
    const i = index.get(l);
    if (i !== undefined) position.set(i, p);
  });
  return position;
}

/** Per-micro-batch activation bytes of the given layers on one tensor-parallel rank, without recomputation. */
export function activationBytesPerMicroBatch(plan: ParallelPlan, layers: readonly LayerPlan[], recompute: RecomputeMode = 'none'): number {
  if (recompute === 'full') return fullRecomputeBytes(plan, layers);
  const { core, coreValues } = attentionCore(plan, layers);
  const isCoreValue = (v: string): boolean => coreValues.has(v);
  const byKey = new Map<string, number>();
  layers.forEach((l, i) => {
    for (const t of keptTensors(plan, l, core.has(i) ? isCoreValue : undefined)) {
      // Selective recomputation reruns the attention core from Q, K and V, so keeps none of its tensors.
      if (recompute === 'selective' && t.attentionCore) continue;
      byKey.set(t.key, Math.max(byKey.get(t.key) ?? 0, t.bytes));
    }
  });
  let total = 0;
  for (const b of byKey.values()) total += b;
  return total;
}

/**
 * Full recomputation: each transformer block keeps only its input (the hidden state entering its
 * first norm), on the full state or its sequence shard under --sp; layers outside every block
 * (embeddings, the final norm, the LM head, the loss) keep their tensors as without recomputation.
 */
function fullRecomputeBytes(plan: ParallelPlan, layers: readonly LayerPlan[]): number {
  const blocks = transformerBlocks(plan, layers);
  const inBlock = new Set<number>();
  let total = 0;
  for (const { start, end } of blocks) {
    for (let i = start; i <= end; i++) inBlock.add(i);
    const first = at(layers, start);
    const ways = (plan.sequenceParallel ? plan.world.tp : 1) * (plan.world.cp ?? 1);
    total += Math.ceil((inputElements(first.layer) * plan.elementBytes) / ways);
  }
  const outside = layers.filter((_, i) => !inBlock.has(i));
  return total + (outside.length > 0 ? activationBytesPerMicroBatch(plan, outside, 'none') : 0);
}

/**
 * The model's transformer blocks (structure/) as position ranges in `layers`: each from its first
 * layer (the norm before its attention, pre-norm) to the value it leaves on the residual stream.
 * A block only partly in `layers` (a stage's) is cut to the part there.
 */
export function transformerBlocks(plan: ParallelPlan, layers: readonly LayerPlan[]): { start: number; end: number }[] {
  const position = positionsIn(plan, layers);
  const blocks: { start: number; end: number }[] = [];
  for (const b of plan.structure.blocks) {
    const inside: number[] = [];
    for (let i = b.start; i <= b.end; i++) {
      const p = position.get(i);
      if (p !== undefined) inside.push(p);
    }
    if (inside.length > 0) blocks.push({ start: Math.min(...inside), end: Math.max(...inside) });
  }
  return blocks;
}
