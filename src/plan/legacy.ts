/**
 * The legacy strategies of ASTRA-sim's text workloads (-p DATA | MODEL | HYBRID_*): a strategy
 * keyword over N NPUs, how it splits a layer (D data-parallel replicas of G model-parallel
 * shards) and the collectives each pass then needs (formulas in the README, "Communication").
 * Kept for the text format's keyword, `--chakra-dims` and the `buildWorkload` library entry; the
 * CLI plans every strategy through `legacyWorld` and the parallel plan.
 *
 * A layer's work is split D ways by data (rows M, or the batch of a batched GEMM) and G ways by
 * model (output features N); non-divisible splits round up, so the busiest NPU is modelled.
 */
import { InputError } from '../errors.js';
import { elementCount } from '../ir/dim.js';
import type { Layer, LayerPasses } from '../layers/types.js';
import { makePasses } from '../layers/types.js';
import { type CollectiveType, DTYPE_BYTES, type TrainingDType } from './types.js';

export const PARALLELISMS = ['DATA', 'MODEL', 'HYBRID_DATA_MODEL', 'HYBRID_MODEL_DATA'] as const;
export type Parallelism = (typeof PARALLELISMS)[number];

/** Which NPUs take part: the model-parallel group, the data-parallel group, or all. */
export type CommGroup = 'model' | 'data' | 'all';

export interface Collective {
  type: CollectiveType;
  /** Per-NPU buffer size in bytes, as ASTRA-sim's comm_size (see README). */
  bytes: number;
  group: CommGroup;
}

export const NO_COLLECTIVE: Collective = { type: 'NONE', bytes: 0, group: 'all' };

export type ParamsCounted = 'all' | 'weights';

export interface ParallelConfig {
  parallelism: Parallelism;
  npus: number;
  /** Model-parallel group size G (hybrid only; MODEL uses all NPUs, DATA none). */
  mpGroup: number;
  dtype: TrainingDType;
  params: ParamsCounted;
}

/** How the NPUs split: D data-parallel replicas of G model-parallel shards. */
export interface Split {
  dataWays: number;
  modelWays: number;
}

export function splitOf(config: ParallelConfig): Split {
  const { npus, mpGroup, parallelism } = config;
  if (!Number.isSafeInteger(npus) || npus < 1) throw new InputError(`--npus must be a positive integer, got ${npus}`);
  switch (parallelism) {
    case 'DATA':
      return { dataWays: npus, modelWays: 1 };
    case 'MODEL':
      return { dataWays: 1, modelWays: npus };
    default: {
      if (!Number.isSafeInteger(mpGroup) || mpGroup < 1 || mpGroup > npus || npus % mpGroup !== 0) {
        throw new InputError(`--mp-group ${mpGroup} must divide --npus ${npus} for ${parallelism}`);
      }
      return { dataWays: npus / mpGroup, modelWays: mpGroup };
    }
  }
}

const ceilDiv = (a: number, b: number): number => Math.ceil(a / b);

export interface LayerShare {
  /** The GEMMs one NPU runs in each pass. */
  passes: LayerPasses;
  /** Output elements one NPU produces (forward), for the all-gather. */
  outputElementsPerNpu: number;
  /** Input-gradient elements one model group reduces (partial sums over its G shards). */
  inputGradElementsPerReplica: number;
  /** Parameters one NPU holds (weights, and biases when counted). */
  paramsPerNpu: number;
  weightParamsPerNpu: number;
  biasParamsPerNpu: number;
}

/** One NPU's share of a layer. Batched GEMMs split their batch count, others rows and columns. */
export function shareOf(layer: Layer, split: Split): LayerShare {
  if (layer.kind === 'vector') return vectorShareOf(layer, split);
  const { dataWays: d, modelWays: g } = split;
  const weightParamsPerNpu = ceilDiv(layer.weightParams, g);
  const biasParamsPerNpu = ceilDiv(layer.biasParams, g);
  if (layer.kind === 'embedding') {
    // Output [..., width]: rows split by data, the embedding width by model.
    const width = layer.outputShape[layer.outputShape.length - 1] ?? 1;
    const rows = elementCount(layer.outputShape.slice(0, -1));
    return {
      passes: { fwd: [], ig: [], wg: [] },
      outputElementsPerNpu: ceilDiv(rows, d) * ceilDiv(width, g),
      inputGradElementsPerReplica: 0,
      paramsPerNpu: weightParamsPerNpu + biasParamsPerNpu,
      weightParamsPerNpu,
      biasParamsPerNpu,
    };
  }
  const { m, n, k } = layer.gemm.fwd;
  const count = layer.gemmCount;
  const batched = layer.kind === 'activation-gemm' && count > 1;
  // Batched products (attention) split their batch x heads over every NPU; others split rows by
  // data and output features by model.
  const gemm = batched ? { m, n, k } : { m: ceilDiv(m, d), n: ceilDiv(n, g), k };
  const perNpuCount = batched ? ceilDiv(count, d * g) : count;
  return {
    passes: makePasses(gemm, perNpuCount).passes,
    outputElementsPerNpu: gemm.m * gemm.n * perNpuCount,
    // Both operands of an activation product need gradients (dA: m x k, dB: k x n).
    inputGradElementsPerReplica: batched ? ceilDiv(count, d) * (m * k + k * n) : gemm.m * k * count,
    paramsPerNpu: weightParamsPerNpu + biasParamsPerNpu,
    weightParamsPerNpu,
    biasParamsPerNpu,
  };
}

/**
 * Vector work splits over all D x G NPUs (each works on its shard of rows or heads, as with
 * sequence parallelism) and needs no activation collective; its parameters (a norm's scale and
 * shift) are replicated on every NPU, so their gradient all-reduce carries all of them.
 */
function vectorShareOf(layer: Layer, split: Split): LayerShare {
  const ways = split.dataWays * split.modelWays;
  const work = layer.passes.vector;
  const vector = work && { ...work, elements: ceilDiv(work.elements, ways), bytesIn: ceilDiv(work.bytesIn, ways), bytesOut: ceilDiv(work.bytesOut, ways) };
  return {
    passes: { fwd: [], ig: [], wg: [], ...(vector ? { vector } : {}) },
    outputElementsPerNpu: 0,
    inputGradElementsPerReplica: 0,
    paramsPerNpu: layer.weightParams + layer.biasParams,
    weightParamsPerNpu: layer.weightParams,
    biasParamsPerNpu: layer.biasParams,
  };
}

export interface LegacyCollectives {
  fwd: Collective;
  ig: Collective;
  wg: Collective;
}

/**
 * The three collectives of a layer. `needsInputGrad` is false for the first layer (its input is
 * the data, which needs no gradient) and for embeddings (integer indices).
 */
export function collectivesOf(layer: Layer, share: LayerShare, split: Split, config: ParallelConfig, needsInputGrad: boolean): LegacyCollectives {
  const bytes = DTYPE_BYTES[config.dtype];
  const modelGroup = config.parallelism === 'MODEL' ? 'all' : 'model';
  const dataGroup = config.parallelism === 'DATA' ? 'all' : 'data';
  const params = config.params === 'all' ? share.weightParamsPerNpu + share.biasParamsPerNpu : share.weightParamsPerNpu;
  const fwd: Collective = split.modelWays > 1 && share.outputElementsPerNpu > 0
    ? { type: 'ALLGATHER', bytes: share.outputElementsPerNpu * bytes, group: modelGroup }
    : NO_COLLECTIVE;
  const ig: Collective = split.modelWays > 1 && needsInputGrad && layer.kind !== 'embedding' && share.inputGradElementsPerReplica > 0
    ? { type: 'REDUCESCATTER', bytes: share.inputGradElementsPerReplica * bytes, group: modelGroup }
    : NO_COLLECTIVE;
  const wg: Collective = split.dataWays > 1 && params > 0
    ? { type: 'ALLREDUCE', bytes: params * bytes, group: dataGroup }
    : NO_COLLECTIVE;
  return { fwd, ig, wg };
}

