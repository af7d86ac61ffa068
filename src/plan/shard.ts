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
  /** Column layers sharing one input reduce its gradient once: this one owns the reduction. */
  ownsInputGradient: boolean;
  /** Under sequence parallelism, the first of those layers in backward re-gathers the input. */
  regathersInput: boolean;
}

export interface LayerShare {
  passes: LayerPasses;
  weightParamsHeld: number;
  biasParamsHeld: number;
  collectives: LayerCollectives;
}

const ceilDiv = (a: number, b: number): number => Math.ceil(a / b);
const NO_PASSES: LayerPasses = { fwd: [], ig: [], wg: [] };

function exactSplit(what: string, value: number, tp: number, layer: Layer, flag = '--tp'): number {
  if (value % tp !== 0) throw new InputError(`layer ${layer.name}: ${what} ${value} do not split over ${flag} ${tp}`);
  return value / tp;
}

/** Fp32 bytes of one value per token: Megatron's vocab-parallel cross entropy reduces in float. */
const LOSS_BYTES_PER_TOKEN = 4;

/** Vector work with its elements and bytes divided `ways` ways (the busiest rank rounds up). */
function vectorShare(layer: Layer, ways: number, collectives: LayerCollectives): LayerShare {
  const work = layer.passes.vector;
  const vector = work && { ...work, elements: ceilDiv(work.elements, ways), bytesIn: ceilDiv(work.bytesIn, ways), bytesOut: ceilDiv(work.bytesOut, ways) };
  return { passes: { fwd: [], ig: [], wg: [], ...(vector ? { vector } : {}) }, weightParamsHeld: layer.weightParams, biasParamsHeld: layer.biasParams, collectives };
}

export function shareOf(s: ShareInput): LayerShare {
  const { layer, role, tp } = s;
  if (layer.kind === 'vector') {
    // Norm parameters are replicated; the work follows the activations it reads.
    const ways = role === 'replicated' ? (s.sequenceParallel ? tp : 1) : tp;
    return vectorShare(layer, ways, { beforeFwd: [], afterFwd: [], beforeBwd: [], afterIg: [] });
  }
  const { m, n, k } = layer.gemm.fwd;
  const count = layer.gemmCount;
  const collectives: LayerCollectives = { beforeFwd: [], afterFwd: [], beforeBwd: [], afterIg: [] };
  const add = (where: keyof LayerCollectives, c: PlannedCollective): void => {
    if (tp > 1 && c.bytes > 0) collectives[where].push(c);
  };
  const bytes = s.elementBytes;
  const outBytes = layer.kind === 'embedding' ? elementsOf(layer.outputShape) * bytes : m * n * count * bytes;
  const inBytes = m * k * count * bytes;
  const passes = (gemm: { m: number; n: number; k: number }, c: number): LayerPasses => (layer.kind === 'embedding' ? NO_PASSES : makePasses(gemm, c).passes);
  switch (role) {
    case 'column': {
      // The LM head's vocabulary need not divide: the busiest rank holds ceil(V / T) rows.
      const nShare = s.lmHead ? ceilDiv(n, tp) : exactSplit('output features', n, tp, layer);
      const share = passes({ m, n: nShare, k }, count);
      if (s.sequenceParallel) {
        exactSplit('rows (sequence x micro-batch)', m, tp, layer, '--tp (sequence parallelism)');
        if (s.ownsInputGradient) add('beforeFwd', { type: 'ALLGATHER', bytes: inBytes / tp, group: 'tp', label: 'input' });
        if (s.regathersInput) add('beforeBwd', { type: 'ALLGATHER', bytes: inBytes / tp, group: 'tp', label: 'input' });
        if (s.ownsInputGradient && s.needsInputGrad) add('afterIg', { type: 'REDUCESCATTER', bytes: inBytes, group: 'tp', label: 'ingrad' });
      } else if (s.ownsInputGradient && s.needsInputGrad) {
        add('afterIg', { type: 'ALLREDUCE', bytes: inBytes, group: 'tp', label: 'ingrad' });
      }
      if (s.lmHead) {
        // Vocab-parallel cross entropy: max logit, target logit and sum of exponentials per token.
        const lossBytes = m * LOSS_BYTES_PER_TOKEN;
        for (const label of ['loss-max', 'loss-target', 'loss-sumexp']) add('afterFwd', { type: 'ALLREDUCE', bytes: lossBytes, group: 'tp', label });
      }
      const rowsHeld = nShare / n;
      return { passes: share, weightParamsHeld: layer.weightParams * rowsHeld, biasParamsHeld: layer.biasParams * rowsHeld, collectives };
    }
    case 'row': {
      const share = passes({ m, n, k: exactSplit('input features', k, tp, layer) }, count);
      if (s.sequenceParallel) {
        exactSplit('rows (sequence x micro-batch)', m, tp, layer, '--tp (sequence parallelism)');
        add('afterFwd', { type: 'REDUCESCATTER', bytes: outBytes, group: 'tp', label: 'out' });
        add('beforeBwd', { type: 'ALLGATHER', bytes: outBytes / tp, group: 'tp', label: 'outgrad' });
      } else {
        add('afterFwd', { type: 'ALLREDUCE', bytes: outBytes, group: 'tp', label: 'out' });
      }
      return { passes: share, weightParamsHeld: layer.weightParams / tp, biasParamsHeld: layer.biasParams, collectives };
    }
    case 'vocab': {
      // Megatron-LM pads the vocabulary to a multiple of T; the busiest rank holds ceil(V / T) rows.
      const width = layer.outputShape[layer.outputShape.length - 1] ?? 1;
      const rowsHeld = ceilDiv(layer.weightParams / width, tp);
      add('afterFwd', s.sequenceParallel ? { type: 'REDUCESCATTER', bytes: outBytes, group: 'tp', label: 'out' } : { type: 'ALLREDUCE', bytes: outBytes, group: 'tp', label: 'out' });
      return { passes: NO_PASSES, weightParamsHeld: rowsHeld * width, biasParamsHeld: 0, collectives };
    }
    case 'heads': {
      const heads = count % s.microBatch === 0 ? count / s.microBatch : count;
      exactSplit('attention heads', heads, tp, layer);
      return { passes: passes({ m, n, k }, count / tp), weightParamsHeld: 0, biasParamsHeld: 0, collectives };
    }
    case 'replicated':
      return { passes: passes({ m, n, k }, count), weightParamsHeld: layer.weightParams, biasParamsHeld: layer.biasParams, collectives };
    case 'sharded':
      // A GEMM declared sharded (--tp-plan): its outputs split T ways with no collective of its own.
      return { passes: passes({ m, n: ceilDiv(n, tp), k }, count), weightParamsHeld: ceilDiv(layer.weightParams, tp), biasParamsHeld: ceilDiv(layer.biasParams, tp), collectives };
    case 'split':
      return legacySplit(s, collectives, add);
  }
}

/** The legacy MODEL split (README, "Communication"): outputs split T ways and all-gathered. */
function legacySplit(s: ShareInput, collectives: LayerCollectives, add: (where: keyof LayerCollectives, c: PlannedCollective) => void): LayerShare {
  const { layer, tp } = s;
  const bytes = s.elementBytes;
  const weightParamsHeld = ceilDiv(layer.weightParams, tp);
  const biasParamsHeld = ceilDiv(layer.biasParams, tp);
  if (layer.kind === 'embedding') {
    const width = layer.outputShape[layer.outputShape.length - 1] ?? 1;
    const rows = elementsOf(layer.outputShape.slice(0, -1));
    add('afterFwd', { type: 'ALLGATHER', bytes: rows * ceilDiv(width, tp) * bytes, group: 'tp', label: 'out' });
    return { passes: NO_PASSES, weightParamsHeld, biasParamsHeld, collectives };
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
  return { passes: makePasses(gemm, perRankCount).passes, weightParamsHeld, biasParamsHeld, collectives };
}

function elementsOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
