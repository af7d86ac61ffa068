/**
 * One tensor-parallel rank's share of a layer and the collectives its role needs per micro-batch
 * (sizes in the README, "Tensor and sequence parallelism"). With T ranks:
 * - column: output features N / T; backward all-reduce of the input gradient (the "f" operator);
 * - row: input features K / T; forward all-reduce of the output (the "g" operator);
 * - vocab: table rows / T; forward all-reduce of the looked-up embeddings;
 * - heads: attention products / T;
 * - replicated: everything on every rank;
 * - split: outputs / T, all-gathered in forward, input gradient reduce-scattered (legacy MODEL).
 * Sequence parallelism turns each all-reduce into an all-gather before the column layer and a
 * reduce-scatter after the row layer (and the reverse in backward), as Megatron-LM does.
 * Sizes are ASTRA-sim's comm_size: the whole buffer, except ALL_GATHER's per-rank shard.
 */
import { InputError } from '../errors.js';
import { makePasses, type Layer, type LayerPasses } from '../layers/types.js';
import type { SharedPasses } from '../layers/shared-passes.js';
import type { LayerCollectives, PlannedCollective, TpRole } from './types.js';

export interface ShareInput {
  layer: Layer;
  role: TpRole;
  tp: number;
  sequenceParallel: boolean;
  elementBytes: number;
  microBatch: number;
  needsInputGrad: boolean;
  lmHead: boolean;
  /**
   * Megatron-LM's vocabulary padding (training/tokenizer: _vocab_size_with_padding): the
   * vocabulary of the word embedding and the LM head rounded up to a multiple of this x T
   * (--make-vocab-size-divisible-by, 128 by default); 1: to a multiple of T only.
   */
  vocabDivisibleBy?: number;
  /** Column layers sharing one input reduce its gradient once: this one owns the reduction. */
  ownsInputGradient: boolean;
  /** Under sequence parallelism, the first of those layers in backward re-gathers the input. */
  regathersInput: boolean;
  /**
   * The model adds learned position or token-type embeddings to the looked-up words: under
   * sequence parallelism the word embedding all-reduces, then scatters (Megatron-LM).
   */
  addsEmbeddings?: boolean;
  /** Row layers whose partial sums another row layer reduces (parallel residual, MoE experts): false. */
  reducesOutput?: boolean;
  /** Rows (tokens) the layer's GEMMs run on when not its own: an expert's routed tokens. */
  tokenRows?: number | undefined;
  /**
   * Rows of the tokens the layer's collectives carry, when not its own: a routed expert's input
   * gradient and combined output cover the whole mixture's tokens (its router's rows).
   */
  collectiveRows?: number | undefined;
  /** One plan's GEMM passes by geometry, so layers of equal shares hold one object. */
  sharedPasses?: SharedPasses | undefined;
  /**
   * Context-parallel ranks C (plan/context-parallel.ts): each holds S/C of the sequence, so the
   * token rows (GEMM M: b x S, or S queries per head in the attention products), the vector work
   * and the embedding's output divide by C (default 1).
   */
  contextParallel?: number | undefined;
}

const NO_COLLECTIVE_LIST: PlannedCollective[] = [];
Object.freeze(NO_COLLECTIVE_LIST);
/** The collectives of a layer that needs none (most of them): one shared, frozen object. */
export const NO_COLLECTIVES: LayerCollectives = { beforeFwd: NO_COLLECTIVE_LIST, afterFwd: NO_COLLECTIVE_LIST, beforeBwd: NO_COLLECTIVE_LIST, afterIg: NO_COLLECTIVE_LIST };
Object.freeze(NO_COLLECTIVES);

/** A layer's collectives, added one by one (only with T > 1 and bytes to move); its own lists from the first. */
class CollectivesOfLayer {
  value = NO_COLLECTIVES;

  constructor(private readonly tp: number) {}

  add(where: keyof LayerCollectives, c: PlannedCollective): void {
    if (!(this.tp > 1 && c.bytes > 0)) return;
    if (this.value === NO_COLLECTIVES) this.value = { beforeFwd: [], afterFwd: [], beforeBwd: [], afterIg: [] };
    this.value[where].push(c);
  }
}

export interface LayerShare {
  passes: LayerPasses;
  weightParamsHeld: number;
  biasParamsHeld: number;
  collectives: LayerCollectives;
}

const ceilDiv = (a: number, b: number): number => Math.ceil(a / b);
/** Vocabulary rows one of T ranks holds: V padded to a multiple of divisibleBy x T, over T. */
const vocabShare = (v: number, tp: number, divisibleBy = 1): number => ceilDiv(v, divisibleBy * tp) * divisibleBy;
export const NO_PASSES: LayerPasses = { fwd: [], ig: [], wg: [] };

/** A count of a layer that does not divide over the tensor-parallel ranks (buildPlan adds the T that would). */
export class TpSplitError extends InputError {
  constructor(message: string, readonly count: number) {
    super(message);
  }
}

function exactSplit(what: string, value: number, tp: number, layer: Layer, flag = '--tp'): number {
  if (value % tp !== 0) throw new TpSplitError(`layer ${layer.name}: ${what} ${value} do not split over ${flag} ${tp}`, value);
  return value / tp;
}

/** Fp32 bytes of one value per token: Megatron's vocab-parallel cross entropy reduces in float. */
const LOSS_BYTES_PER_TOKEN = 4;

/** Vector work with its elements and bytes divided `ways` ways (the busiest rank rounds up). */
function vectorShare(layer: Layer, ways: number, collectives: LayerCollectives): LayerShare {
  const work = layer.passes.vector;
  const own = layer.passes;
  // Undivided whole figures are the layer's own: its passes object serves the plan too.
  const undivided = work === undefined || (ways === 1 && Number.isInteger(work.elements) && Number.isInteger(work.bytesIn) && Number.isInteger(work.bytesOut));
  if (undivided && own.fwd.length === 0 && own.ig.length === 0 && own.wg.length === 0) return { passes: own, weightParamsHeld: layer.weightParams, biasParamsHeld: layer.biasParams, collectives };
  const vector = work && { ...work, elements: ceilDiv(work.elements, ways), bytesIn: ceilDiv(work.bytesIn, ways), bytesOut: ceilDiv(work.bytesOut, ways) };
  return { passes: { fwd: [], ig: [], wg: [], ...(vector ? { vector } : {}) }, weightParamsHeld: layer.weightParams, biasParamsHeld: layer.biasParams, collectives };
}

export function shareOf(s: ShareInput): LayerShare {
  const { layer, role, tp } = s;
  const cp = s.contextParallel ?? 1;
  if (layer.kind === 'vector') {
    // Norm parameters are replicated; the work follows the activations it reads.
    const ways = role === 'replicated' ? (s.sequenceParallel ? tp : 1) : tp;
    return vectorShare(layer, ways * cp, NO_COLLECTIVES);
  }
  const { n, k } = layer.gemm.fwd;
  // Context parallelism: this rank's S/C of the tokens (context-parallel.ts checked the rows divide).
  const rows = (s.collectiveRows ?? layer.gemm.fwd.m) / cp;
  // An expert runs on its routed tokens only; the combined output it reduces covers them all.
  const m = s.tokenRows !== undefined ? Math.ceil(s.tokenRows / cp) : layer.gemm.fwd.m / cp;
  const count = layer.gemmCount;
  const planned = new CollectivesOfLayer(tp);
  const bytes = s.elementBytes;
  const outBytes = layer.kind === 'embedding' ? (elementsOf(layer.outputShape) / cp) * bytes : rows * n * count * bytes;
  const inBytes = rows * k * count * bytes;
  switch (role) {
    case 'column': {
      // The LM head's vocabulary is padded as the embedding's (Megatron-LM): each rank holds its padded share.
      const nShare = s.lmHead ? vocabShare(n, tp, s.vocabDivisibleBy) : exactSplit('output features', n, tp, layer);
      const share = gemmPasses(s, m, nShare, k, count);
      if (s.sequenceParallel) {
        exactSplit('rows (sequence x micro-batch)', rows, tp, layer, '--tp (sequence parallelism)');
        if (s.ownsInputGradient) planned.add('beforeFwd', { type: 'ALLGATHER', bytes: inBytes / tp, group: 'tp', label: 'input' });
        if (s.regathersInput) planned.add('beforeBwd', { type: 'ALLGATHER', bytes: inBytes / tp, group: 'tp', label: 'input' });
        if (s.ownsInputGradient && s.needsInputGrad) planned.add('afterIg', { type: 'REDUCESCATTER', bytes: inBytes, group: 'tp', label: 'ingrad' });
      } else if (s.ownsInputGradient && s.needsInputGrad) {
        planned.add('afterIg', { type: 'ALLREDUCE', bytes: inBytes, group: 'tp', label: 'ingrad' });
      }
      if (s.lmHead) {
        // Vocab-parallel cross entropy: max logit, target logit and sum of exponentials per token.
        const lossBytes = m * LOSS_BYTES_PER_TOKEN;
        for (const label of ['loss-max', 'loss-target', 'loss-sumexp']) planned.add('afterFwd', { type: 'ALLREDUCE', bytes: lossBytes, group: 'tp', label });
      }
      const rowsHeld = nShare / n;
      // The head's padded rows, each a whole row of weights (a product of the fraction is not exact).
      const weightParamsHeld = s.lmHead ? (layer.weightParams / n) * nShare : layer.weightParams * rowsHeld;
      return { passes: share, weightParamsHeld, biasParamsHeld: layer.biasParams * rowsHeld, collectives: planned.value };
    }
    case 'row': {
      const share = gemmPasses(s, m, n, exactSplit('input features', k, tp, layer), count);
      if (s.reducesOutput === false) {
        // Another row layer reduces the summed outputs (and, under SP, gathers their gradient).
      } else if (s.sequenceParallel) {
        exactSplit('rows (sequence x micro-batch)', rows, tp, layer, '--tp (sequence parallelism)');
        planned.add('afterFwd', { type: 'REDUCESCATTER', bytes: outBytes, group: 'tp', label: 'out' });
        planned.add('beforeBwd', { type: 'ALLGATHER', bytes: outBytes / tp, group: 'tp', label: 'outgrad' });
      } else {
        planned.add('afterFwd', { type: 'ALLREDUCE', bytes: outBytes, group: 'tp', label: 'out' });
      }
      return { passes: share, weightParamsHeld: layer.weightParams / tp, biasParamsHeld: layer.biasParams, collectives: planned.value };
    }
    case 'vocab': {
      // Megatron-LM pads the vocabulary to a multiple of --make-vocab-size-divisible-by x T; each rank holds its share.
      const width = layer.outputShape[layer.outputShape.length - 1] ?? 1;
      const rowsHeld = vocabShare(layer.weightParams / width, tp, s.vocabDivisibleBy);
      if (!s.sequenceParallel) planned.add('afterFwd', { type: 'ALLREDUCE', bytes: outBytes, group: 'tp', label: 'out' });
      else {
        // megatron/core/models/common/embeddings/language_model_embedding.py:51: reduce-scatter the
        // lookup only without position and token-type embeddings (RoPE models); otherwise all-reduce,
        // add them, and scatter to the sequence shard. Either way backward all-gathers the
        // gradient's shards (tensor_parallel/mappings.py: the scatter's and the reduce-scatter's backward).
        planned.add('afterFwd', s.addsEmbeddings === true ? { type: 'ALLREDUCE', bytes: outBytes, group: 'tp', label: 'out' } : { type: 'REDUCESCATTER', bytes: outBytes, group: 'tp', label: 'out' });
        planned.add('beforeBwd', { type: 'ALLGATHER', bytes: outBytes / tp, group: 'tp', label: 'outgrad' });
      }
      return { passes: NO_PASSES, weightParamsHeld: rowsHeld * width, biasParamsHeld: 0, collectives: planned.value };
    }
    case 'heads': {
      const heads = count % s.microBatch === 0 ? count / s.microBatch : count;
      exactSplit('attention heads', heads, tp, layer);
      return { passes: gemmPasses(s, m, n, k, count / tp), weightParamsHeld: 0, biasParamsHeld: 0, collectives: planned.value };
    }
    case 'replicated':
      return { passes: gemmPasses(s, m, n, k, count), weightParamsHeld: layer.weightParams, biasParamsHeld: layer.biasParams, collectives: planned.value };
    case 'sharded':
      // A GEMM declared sharded (--tp-plan): its outputs split T ways with no collective of its own.
      return { passes: gemmPasses(s, m, ceilDiv(n, tp), k, count), weightParamsHeld: ceilDiv(layer.weightParams, tp), biasParamsHeld: ceilDiv(layer.biasParams, tp), collectives: planned.value };
    case 'split':
      return legacySplit(s, planned);
  }
}

/** The legacy MODEL split (README, "Legacy strategies"): outputs split T ways and all-gathered. */
function legacySplit(s: ShareInput, planned: CollectivesOfLayer): LayerShare {
  const { layer, tp } = s;
  const add = (where: keyof LayerCollectives, c: PlannedCollective): void => planned.add(where, c);
  const bytes = s.elementBytes;
  const weightParamsHeld = ceilDiv(layer.weightParams, tp);
  const biasParamsHeld = ceilDiv(layer.biasParams, tp);
  if (layer.kind === 'embedding') {
    const width = layer.outputShape[layer.outputShape.length - 1] ?? 1;
    const rows = elementsOf(layer.outputShape.slice(0, -1));
    add('afterFwd', { type: 'ALLGATHER', bytes: rows * ceilDiv(width, tp) * bytes, group: 'tp', label: 'out' });
    return { passes: NO_PASSES, weightParamsHeld, biasParamsHeld, collectives: planned.value };
  }
  const { m, n, k } = layer.gemm.fwd;
  const count = layer.gemmCount;
  const batched = layer.kind === 'activation-gemm' && count > 1;
  const gemm = batched ? { m, n, k } : { m, n: ceilDiv(n, tp), k };
  const perRankCount = batched ? ceilDiv(count, tp) : count;
  add('afterFwd', { type: 'ALLGATHER', bytes: gemm.m * gemm.n * perRankCount * bytes, group: 'tp', label: 'out' });
  // Both operands of an activation product need gradients (dA: m x k, dB: k x n).
  const inputGrad = batched ? count * (m * k + k * n) : m * k * count;
  if (s.needsInputGrad) add('afterIg', { type: 'REDUCESCATTER', bytes: inputGrad * bytes, group: 'tp', label: 'ingrad' });
  return { passes: gemmPasses(s, gemm.m, gemm.n, gemm.k, perRankCount), weightParamsHeld, biasParamsHeld, collectives: planned.value };
}

/** A GEMM layer's passes on one rank (an embedding has none). */
function gemmPasses(s: ShareInput, m: number, n: number, k: number, count: number): LayerPasses {
  if (s.layer.kind === 'embedding') return NO_PASSES;
  return s.sharedPasses === undefined ? makePasses({ m, n, k }, count).passes : s.sharedPasses.passesOf(m, n, k, count);
}


function elementsOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
