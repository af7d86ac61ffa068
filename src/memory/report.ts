/**
 * Memory one rank holds during a training step (README, "Memory per rank"): parameters,
 * gradients, optimizer state (each sharded over the data-parallel group by ZeRO stage), and the
 * activations kept for backward at the pipeline schedule's peak. All sizes in bytes.
 */
import { shardingRanks } from '../plan/held-params.js';
import { at, InputError } from '../errors.js';
import type { Optimizer } from '../cost/choices.js';
import type { LayerPlan, ParallelPlan, RecomputeMode, ZeroStage } from '../plan/types.js';
import { stageOfRank, worldSize } from '../plan/world.js';
import { activationBytesPerMicroBatch } from './activations.js';
import { stageMicroBatchesHeld } from './in-flight.js';

const FP32_BYTES = 4;
/** fp32 tensors of optimizer state per parameter (Adam's two moments, momentum's velocity). */
const OPTIMIZER_MOMENTS: Readonly<Record<Optimizer, number>> = { sgd: 0, momentum: 1, adam: 2 };

/**
 * Optimizer-state bytes per parameter: fp32 moments, plus an fp32 master copy of the weights when
 * they are trained in a narrower dtype (mixed precision, as in the ZeRO paper: Adam 4 + 4 + 4 = 12).
 */
export function optimizerBytesPerParam(optimizer: Optimizer, paramBytes: number): number {
  const master = paramBytes < FP32_BYTES ? FP32_BYTES : 0;
  return master + OPTIMIZER_MOMENTS[optimizer] * FP32_BYTES;
}

/** One pipeline stage as the memory model sees it (today's plans have one, holding every layer). */
export interface StageMemoryInput {
  layers: readonly LayerPlan[];
  /** Trainable parameters outside the layers held on this stage (norm gains and biases). */
  otherParams: number;
  /** Stage-sized micro-batches whose activations the stage holds at its peak (1 without pipelining). */
  microBatchesInFlight: number;
}

export interface MemoryOptions {
  optimizer: Optimizer;
  recompute?: RecomputeMode;
  /** Per pipeline stage; default: one stage with all layers and one micro-batch in flight. */
  stages?: readonly StageMemoryInput[];
}

export interface RankMemory {
  rank: number;
  stage: number;
  weightsBytes: number;
  gradientsBytes: number;
  optimizerBytes: number;
  activationsBytes: number;
  totalBytes: number;
}

export interface MemoryReport {
  ranks: RankMemory[];
  peakRank: number;
}

/** Parameters one rank of a stage holds before ZeRO sharding (a whole number: shares are rows of tensors). */
export function paramsHeld(stage: StageMemoryInput): number {
  return Math.round(stage.layers.reduce((a, l) => a + l.weightParamsHeld + l.biasParamsHeld, 0) + stage.otherParams);
}

const shardedOver = (params: number, dp: number, sharded: boolean): number => (sharded ? Math.ceil(params / dp) : params);

/** Per-rank memory of one training step. */
export function memoryReport(plan: ParallelPlan, options: MemoryOptions): MemoryReport {
  const stages = options.stages ?? [{ layers: plan.layers, otherParams: plan.otherParams, microBatchesInFlight: 1 }];
  if (stages.length !== plan.world.pp) throw new InputError(`memory: ${stages.length} stage inputs for --pp ${plan.world.pp}`);
  const zero: ZeroStage = plan.zero;
  // ZeRO shards over Megatron's data-parallel group with context parallelism (D x C).
  const dp = shardingRanks(plan);
  const perStage = stages.map((s) => {
    const params = paramsHeld(s);
    const weightsBytes = shardedOver(params, dp, zero >= 3) * plan.elementBytes;
    // Megatron-LM keeps the gradients in the width it reduces them in (fp32 main grads for bf16).
    const gradientsBytes = shardedOver(params, dp, zero >= 2) * plan.gradientBytes;
    const optimizerBytes = shardedOver(params, dp, zero >= 1) * optimizerBytesPerParam(options.optimizer, plan.elementBytes);
    const activationsBytes = Math.ceil(activationBytesPerMicroBatch(plan, s.layers, options.recompute ?? 'none') * s.microBatchesInFlight);
    return { weightsBytes, gradientsBytes, optimizerBytes, activationsBytes, totalBytes: weightsBytes + gradientsBytes + optimizerBytes + activationsBytes };
  });
  const ranks: RankMemory[] = [];
  for (let rank = 0; rank < worldSize(plan.world); rank++) {
    const stage = stageOfRank(rank, plan.world);
    ranks.push({ rank, stage, ...at(perStage, stage) });
  }
  const peakRank = ranks.reduce((best, r) => (r.totalBytes > at(ranks, best).totalBytes ? r.rank : best), 0);
  return { ranks, peakRank };
}

const GIB = 2 ** 30;

/** Throws an InputError naming the peak rank when its total exceeds `limitGiB` (GiB = 2^30 bytes). */
export function checkMemoryLimit(report: MemoryReport, limitGiB: number): void {
  if (!(limitGiB > 0) || !Number.isFinite(limitGiB)) throw new InputError(`--memory-limit ${limitGiB}: expected a positive number of GiB`);
  const peak = report.ranks[report.peakRank];
  if (peak !== undefined && peak.totalBytes > limitGiB * GIB) {
    throw new InputError(`rank ${peak.rank} (stage ${peak.stage}) needs ${(peak.totalBytes / GIB).toFixed(2)} GiB (${peak.totalBytes} bytes), over --memory-limit ${limitGiB} GiB`);
  }
}

/** Each pipeline stage's layers, parameters outside layers (the last stage's) and micro-batches held at its schedule's peak. */
export function stageMemoryInputs(plan: ParallelPlan): StageMemoryInput[] {
  const { pp } = plan.world;
  const { schedule, virtualStages } = plan.pipeline;
  return Array.from({ length: pp }, (_, p) => ({
    layers: plan.layers.filter((l) => l.stage === p),
    otherParams: p === pp - 1 ? plan.otherParams : 0,
    microBatchesInFlight: stageMicroBatchesHeld(schedule, p, pp, plan.batch.microBatches, virtualStages),
  }));
}

/** The plan's memory per rank, with its own pipeline stages and recomputation. */
export function planMemory(plan: ParallelPlan, optimizer: Optimizer): MemoryReport {
  return memoryReport(plan, { optimizer, recompute: plan.recompute, stages: stageMemoryInputs(plan) });
}
