/**
 * The parallel plan: how a training step is spread over a world of ranks. Megatron-LM's layout:
 * T tensor-parallel ranks (fastest), D data-parallel replicas, P pipeline stages, so
 * rank = t + T x (d + D x p). Each layer gets a tensor-parallel role (as Megatron-LM's
 * ColumnParallelLinear / RowParallelLinear / VocabParallelEmbedding name them), its per-rank share
 * of compute and parameters, and the collectives that role needs per micro-batch.
 */
import type { GemmWork } from '../layers/types.js';
import type { Layer, LayerPasses } from '../layers/types.js';
import type { ModelStructure } from '../structure/types.js';
import type { BoundarySend } from '../structure/cuts.js';
import type { AxisName } from './axes.js';

export const DTYPE_BYTES = { fp32: 4, fp16: 2, bf16: 2, int8: 1 } as const;
/** Parameters whose gradients are reduced: weights and biases (`--params all`), or weights only. */
export type ParamsCounted = 'all' | 'weights';

export type TrainingDType = keyof typeof DTYPE_BYTES;

export type CollectiveType = 'NONE' | 'ALLREDUCE' | 'ALLGATHER' | 'REDUCESCATTER' | 'ALLTOALL';

/**
 * Which ranks a collective spans, relative to the rank issuing it: the axes each spans are in
 * plan/axes.ts (GROUP_AXES); `dp` is Megatron's data-parallel group with context parallelism,
 * `mp` its model-parallel group (TP x PP), `ep`/`etp`/`edp` the expert grid's.
 */
export type GroupKind = 'tp' | 'cp' | 'dp' | 'pp' | 'mp' | 'ep' | 'etp' | 'edp' | 'embedding' | 'world';

export type ZeroStage = 0 | 1 | 2 | 3;

/**
 * The world's parallel axes (plan/axes.ts): tensor, data and pipeline parallel sizes; context
 * parallel (default 1), expert parallel and expert tensor parallel sizes (default 1 and TP), and
 * Megatron's axis order (default tp-cp-ep-dp-pp). World size = TP x CP x DP x PP.
 */
export interface WorldShape {
  tp: number;
  dp: number;
  pp: number;
  cp?: number;
  ep?: number;
  etp?: number;
  order?: readonly AxisName[];
}

export interface BatchPlan {
  /** Samples per optimizer step over all replicas. */
  globalBatch: number;
  /** Samples of one micro-batch on one replica (the batch the model's shapes are inferred at). */
  microBatch: number;
  /** Micro-batches per step per replica: globalBatch / (microBatch x dp). */
  microBatches: number;
}

/**
 * - column: output features split T ways (Q/K/V, MLP up and gate, LM head over the vocabulary);
 * - row: input features split T ways, outputs summed across the group (attention and MLP output);
 * - vocab: embedding table rows split T ways, lookups summed across the group;
 * - heads: attention score and context products, split by heads;
 * - replicated: every tensor-parallel rank runs all of it (norms, residual adds, position embeddings);
 * - sharded: vector work on activations already split T ways (GELU after a column layer, softmax
 *   of split heads, the loss on vocab-split logits): each rank does 1 / T of it;
 * - split: no transformer pattern (CNNs): outputs split T ways and all-gathered (the legacy MODEL split).
 */
export type TpRole = 'column' | 'row' | 'vocab' | 'heads' | 'replicated' | 'sharded' | 'split';
export const TP_ROLES: readonly TpRole[] = ['column', 'row', 'vocab', 'heads', 'replicated', 'sharded', 'split'];

export interface PlannedCollective {
  type: Exclude<CollectiveType, 'NONE'>;
  /** ASTRA-sim 2.x comm_size: ALL_GATHER the per-rank input shard; the others the whole buffer. */
  bytes: number;
  group: GroupKind;
  /** What it carries, for node names: 'out', 'ingrad', 'input', 'outgrad', 'loss-max', ... */
  label: string;
}

/** A layer's collectives per micro-batch, by where they sit around its compute. */
export interface LayerCollectives {
  /** Before the forward compute (sequence-parallel all-gather of the input; ZeRO-3 parameter gather). */
  beforeFwd: PlannedCollective[];
  /** After the forward compute (row-parallel sum; vocab-parallel lookup sum; the loss's reductions). */
  afterFwd: PlannedCollective[];
  /** Before the backward compute (sequence-parallel all-gather of the output gradient; ZeRO-3 gather). */
  beforeBwd: PlannedCollective[];
  /** After the input-gradient compute (column-parallel sum of the input gradient). */
  afterIg: PlannedCollective[];
}

export interface LayerPlan {
  layer: Layer;
  role: TpRole;
  /** Why this role: the pattern that matched, or the override. */
  reason: string;
  /** GEMMs one rank runs in each pass for one micro-batch. */
  passes: LayerPasses;
  /** Parameters one rank holds (before ZeRO sharding across data-parallel ranks). */
  weightParamsHeld: number;
  biasParamsHeld: number;
  collectives: LayerCollectives;
  /** Whether the layer computes an input gradient (not the first layer, not an embedding). */
  needsInputGrad: boolean;
  /** Pipeline stage holding the layer (0 without pipeline parallelism). */
  stage: number;
  /** Whether its forward is re-run before its backward (activation recomputation): its activations are not kept. */
  recompute: boolean;
  /**
   * An expert layer under expert parallelism (plan/expert-parallel.ts): whether the graph's rank
   * (EP rank 0) holds it (else its passes are empty and it holds nothing here), and what the EP
   * rank holding it holds (per ETP rank). Its gradients reduce over the expert data-parallel group.
   */
  expert?: { local: boolean; ownerWeightParams: number; ownerBiasParams: number };
}

/** Megatron-LM's pipeline schedules: 1F1B (PipeDream-Flush), GPipe (all forwards, then all backwards), interleaved 1F1B. */
export const PIPELINE_SCHEDULES = ['1f1b', 'gpipe', 'interleaved'] as const;
export type PipelineScheduleKind = (typeof PIPELINE_SCHEDULES)[number];

/** Megatron-LM's --recompute-granularity: none, selective (attention core only), full (every layer). */
export const RECOMPUTE_MODES = ['none', 'selective', 'full'] as const;
export type RecomputeMode = (typeof RECOMPUTE_MODES)[number];

export interface PipelineStage {
  /** Plan layer indices the stage holds, ascending. */
  layers: number[];
  /** Its model chunks (one without interleaving): chunk v is the model's part s + v x P, layers ascending. */
  chunks: number[][];
  /** Costed time of the stage per micro-batch: forward + input gradient + weight gradient cycles of one rank. */
  cycles: number;
}

export interface PipelinePlan {
  schedule: PipelineScheduleKind;
  /** Model chunks per rank (Megatron-LM's virtual pipeline size; 1 unless interleaved). */
  virtualStages: number;
  stages: PipelineStage[];
  /** How the layers were cut: the cost-balancing rule, or the --pp-stages file. */
  partition: string;
  /**
   * Boundaries (after part g) that send more than the residual stream: the values crossing, the
   * stream first (an encoder-decoder's encoder output, a shared position bias). Absent when every
   * boundary sends one tensor, its part's last layer's output.
   */
  sends?: BoundarySend[];
}

export interface CommGroupDef {
  id: number;
  kind: GroupKind;
  ranks: number[];
  /** Other kinds whose group has the same members (one communicator, one id). */
  aliases?: GroupKind[];
}

/** Context parallelism's K/V exchange, as TransformerEngine names it (Megatron-LM's --cp-comm-type). */
export type CpCommType = 'p2p' | 'a2a';

/**
 * One self-attention under context parallelism (plan/context-parallel.ts): its core's layers, where
 * the exchange sits, and the bytes one rank moves per micro-batch (ASTRA-sim comm_size).
 */
export interface CpAttention {
  /** The attention core's layers in model order: the scores, the vector work between, the context product. */
  core: number[];
  /** The core's last layer, the context product: the whole core is issued at its place (after every projection it reads). */
  context: number;
  /** p2p: one rank's K and V chunk, b x S/C x K/V heads per TP rank x head dim x 2 x dtype. */
  kvBytes: number;
  /** a2a: one rank's Q (and the context, of the same size) and its K (and V): b x S/C x heads per TP rank x head dim x dtype. */
  qBytes: number;
  kBytes: number;
}

/** Context parallelism (Megatron-LM's --context-parallel-size): the sequence split C ways, attention's K/V exchanged. */
export interface ContextParallelPlan {
  size: number;
  commType: CpCommType;
  /** The model's self-attentions, in model order. */
  attentions: CpAttention[];
}

export interface ParallelPlan {
  world: WorldShape;
  batch: BatchPlan;
  sequenceParallel: boolean;
  zero: ZeroStage;
  dtype: TrainingDType;
  /** Bytes per element of activations and parameters communicated (the training dtype's). */
  elementBytes: number;
  /** Bytes per element of the gradients reduced over data parallelism (fp32 for bf16 training, as Megatron-LM). */
  gradientBytes: number;
  /** Which parameters' gradients are communicated: all, or weights only (ASTRA-sim's own ResNet-50 workload). */
  gradientParams: ParamsCounted;
  /** Data-parallel gradient bucket size in bytes (PyTorch DDP's bucket_cap_mb x 2^20). */
  dpBucketBytes: number;
  /**
   * How gradients are reduced over data parallelism: `overlap`, each bucket as soon as backward has
   * filled it (PyTorch DDP; Megatron-LM's --overlap-grad-reduce), else all after the pipeline
   * schedule (Megatron's finalize_model_grads); `bucketsAfterFirstStage`: pipeline stages after the
   * first bucket too (PyTorch) or keep one buffer (Megatron: bucketing off for pp_rank > 0).
   */
  ddp: { kind: 'megatron' | 'torch'; overlap: boolean; bucketsAfterFirstStage: boolean };
  layers: LayerPlan[];
  /** Trainable parameters outside every layer (norm gains and biases), replicated on every TP rank; the last pipeline stage holds them. */
  otherParams: number;
  /** Pipeline stages (one holding every layer without pipeline parallelism). */
  pipeline: PipelinePlan;
  recompute: RecomputeMode;
  /** The model's structure the plan was made from (blocks, attention cores, MLPs). */
  structure: ModelStructure;
  /** Megatron-LM's vocabulary padding: the vocabulary split as a multiple of this x T (1: of T). */
  vocabDivisibleBy: number;
  /** Each mixture's top-k as planned (--moe-topk, else the graph's), by MLP index into structure.mlps. */
  moeTopK?: ReadonlyMap<number, number>;
  /** With --cp 2 or more. */
  contextParallel?: ContextParallelPlan;
}

export type { GemmWork };
