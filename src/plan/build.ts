/** Layers + graph + options -> ParallelPlan: roles, per-rank shares, collectives, groups. */
import { at, InputError, shown } from '../errors.js';
import { elementCount } from '../ir/dim.js';
import { isFloatDType } from '../ir/dtype.js';
import type { Layer } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';
import { analyseStructure } from '../structure/analyse.js';
import { checkCutsClose, pipelineCuts, pipelineSends } from '../structure/cuts.js';
import type { ModelStructure } from '../structure/types.js';
import { checkMicroBatches } from './limits.js';
import { InitializerSlots } from './initializer-slots.js';
import { SharedPasses } from '../layers/shared-passes.js';
import { type LayerShare, NO_COLLECTIVES, NO_PASSES, TpSplitError, shareOf } from './shard.js';
import { balancedStarts, stagesOf, startsFromFile } from './stages.js';
import { compileNamePattern, MAX_TP_PATTERNS, type NamePattern } from './tp-pattern.js';
import { assignTpRoles, type RoleAssignment } from './tp-roles.js';
import { axesOf } from './axes.js';
import { expertsOnRank, type ExpertOnRank } from './expert-parallel.js';
import { contextParallelOf } from './context-parallel.js';
import { DTYPE_BYTES, TP_ROLES, type BatchPlan, type CpCommType, type LayerPlan, type ParallelPlan, type ParamsCounted, type PipelinePlan, type PipelineScheduleKind, type RecomputeMode, type TpRole, type TrainingDType, type WorldShape, type ZeroStage } from './types.js';

export interface TpOverride {
  /** A `--tp-plan` glob (compileNamePattern); a RegExp also fits, for library callers. */
  pattern: NamePattern;
  role: TpRole;
}

export interface PlanOptions {
  world: WorldShape;
  batch: BatchPlan;
  sequenceParallel: boolean;
  zero: ZeroStage;
  dtype: TrainingDType;
  /**
   * With `ddp: 'torch'`, PyTorch DDP's bucket_cap_mb (25 by default): buckets of this many MiB of
   * gradients; with Megatron's DDP and `overlapGradReduce`, its bucket size instead of the default.
   */
  dpBucketMiB?: number;
  /**
   * Whose data parallelism: Megatron-LM's DDP (default; core/distributed/distributed_data_parallel.py:
   * one contiguous gradient buffer reduced after the pipeline schedule, by finalize_model_grads;
   * with `overlapGradReduce`, buckets of max(40 M, 1 M x D x C) elements reduced as backward fills them,
   * and none on pipeline stages after the first) or PyTorch DDP's buckets ('torch').
   */
  ddp?: 'megatron' | 'torch';
  overlapGradReduce?: boolean;
  /**
   * The width gradients are reduced in, as Megatron-LM chooses it (training/arguments.py, the
   * bf16 branch of validate_args): bf16 training accumulates and all-reduces gradients in fp32
   * unless --grad-reduce-in-bf16 ('param': the parameters' width); fp16 in fp16 unless
   * --accumulate-allreduce-grads-in-fp32 ('fp32'). Default 'megatron'.
   */
  gradReduce?: 'megatron' | 'fp32' | 'param';
  gradientParams?: ParamsCounted;
  /** `--tp-plan` entries, tried in order on each layer's name. */
  tpOverrides?: readonly TpOverride[];
  /** Force every layer to one role (the legacy MODEL / HYBRID split). */
  forceRole?: TpRole;
  /** Pipeline schedule and chunks per rank (1F1B with one chunk by default). */
  pipelineSchedule?: PipelineScheduleKind;
  virtualStages?: number;
  /**
   * How a transformer's blocks are cut into pipeline parts: 'even' (default), the same number of
   * blocks per part as Megatron-LM (num_layers divisible by the pipeline size), or 'balanced', the
   * cuts that minimise the slowest part's costed time. Models without blocks are balanced.
   */
  pipelineSplit?: 'even' | 'balanced';
  /** Megatron-LM's --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers: blocks of the first / last stage of the even split. */
  firstStageBlocks?: number;
  lastStageBlocks?: number;
  /** `--pp-stages`: the file name and its content (overrides the balanced cut). */
  stagesFile?: { file: string; text: string };
  /** One rank's forward + backward cycles of a layer per micro-batch, to balance stages (needed when pp > 1). */
  layerCycles?: (l: LayerPlan) => number;
  recompute?: RecomputeMode;
  /** Mixture of experts: top-k (default: the graph's TopK constant) and capacity factor (default 1: uniform routing). */
  moe?: { topK?: number; capacityFactor?: number };
  /** Context parallelism's K/V exchange with `world.cp` > 1 (plan/context-parallel.ts): p2p ring (default) or a2a. */
  cpCommType?: CpCommType;
  /**
   * Megatron-LM's --make-vocab-size-divisible-by: the word embedding's and LM head's vocabulary
   * padded to a multiple of this x T (default 128, Megatron's; 1 pads to a multiple of T only).
   */
  vocabDivisibleBy?: number;
}

/** Megatron-LM's default --make-vocab-size-divisible-by (training/arguments.py). */
export const MEGATRON_VOCAB_DIVISIBLE_BY = 128;

export interface PlanInput {
  inferred: InferredModel;
  layers: readonly Layer[];
  /** The model's structure (structure/analyse.ts), recognised once; analysed here when absent. */
  structure?: ModelStructure;
}

/**
 * Parses a `--tp-plan` file's content: `{ "LAYER-NAME-GLOB": "column|row|replicated|..." }`, tried
 * in file order (tp-pattern.ts: globs, matched in bounded time).
 */
export function parseTpPlan(file: string, text: string): TpOverride[] {
  const where = `--tp-plan ${file}`;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${where}: not valid JSON (${(e as Error).message})`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new InputError(`${where}: expected an object { "LAYER-NAME-GLOB": "${TP_ROLES.join('|')}" }`);
  const entries = Object.entries(json as Record<string, unknown>);
  if (entries.length > MAX_TP_PATTERNS) throw new InputError(`${where}: ${entries.length} keys, more than the limit of ${MAX_TP_PATTERNS}`);
  return entries.map(([pattern, role]) => {
    if (typeof role !== 'string' || !(TP_ROLES as readonly string[]).includes(role)) throw new InputError(`${where}: '${shown(pattern)}': role ${shown(String(JSON.stringify(role)))} is not one of ${TP_ROLES.join(', ')}`);
    return { pattern: compileNamePattern(pattern, where), role: role as TpRole };
  });
}

/**
 * The tensor-parallel sizes that split every layer, said when --tp does not: each must divide the
 * count that failed, so only its divisors are tried (a pass over the layers each, on the error path).
 */
/** The --tp sizes above 1 dividing `failedCount` that split every layer (tried on the error path only). */
function tpSizesThatSplit(failedCount: number, splits: (tp: number) => boolean): string {
  const sizes: number[] = [];
  for (let tp = 2; tp <= failedCount; tp++) if (failedCount % tp === 0 && splits(tp)) sizes.push(tp);
  if (sizes.length === 0) return 'no --tp above 1 splits every layer of this model';
  const listed = sizes.length === 1 ? String(sizes[0]) : `${sizes.slice(0, -1).join(', ')} or ${sizes[sizes.length - 1]}`;
  return `--tp ${listed} split${sizes.length === 1 ? 's' : ''} every layer of this model`;
}

export function buildPlan(input: PlanInput, options: PlanOptions): ParallelPlan {
  const { layers, inferred } = input;
  const structure = input.structure ?? analyseStructure(inferred, layers);
  const { world } = options;
  const elementBytes = DTYPE_BYTES[options.dtype];
  const gradReduce = options.gradReduce ?? 'megatron';
  const gradientBytes = gradReduce === 'fp32' || (gradReduce === 'megatron' && options.dtype === 'bf16') ? Math.max(elementBytes, DTYPE_BYTES.fp32) : elementBytes;
  const forced = options.forceRole;
  const legacy: RoleAssignment | undefined = forced === undefined ? undefined : { role: forced, reason: 'legacy strategy' };
  const found: RoleAssignment[] = legacy !== undefined ? layers.map(() => legacy) : assignTpRoles(structure, layers);
  const experts = expertShares(structure, layers, options);
  // Expert parallelism (plan/expert-parallel.ts): the expert grid's layout of every expert layer.
  const onRank = expertsOnRank({ structure, layers, world, sequenceParallel: options.sequenceParallel, elementBytes, routing: (mlp) => moeRouting(structure, layers, options, mlp) });
  const etp = axesOf(world).etp;
  const moeTopK = new Map(structure.mlps.flatMap((m, mlp) => (m.kind === 'moe' && m.experts !== undefined ? [[mlp, moeRouting(structure, layers, options, mlp).topK] as const] : [])));
  // Megatron-LM pads the vocabulary (default 128 x T); the legacy strategies ask for 1.
  const vocabDivisibleBy = options.vocabDivisibleBy ?? MEGATRON_VOCAB_DIVISIBLE_BY;
  const overrides = options.tpOverrides ?? [];
  const roles = overrides.length === 0 ? found : layers.map((l, i): RoleAssignment => {
    const override = overrides.find((o) => o.pattern.test(l.name));
    return override === undefined ? at(found, i) : { role: override.role, reason: `--tp-plan '${override.pattern.source}'` };
  });
  // A group of row layers reduces its summed outputs once, with its last layer (while all are row-parallel).
  const sumsReduced = new Set<number>();
  for (const whole of rowsSummedBeforeReduction(structure)) {
    // Under expert parallelism the experts' outputs come back through the dispatcher, not a TP sum.
    const group = whole.filter((i) => !onRank.has(i));
    if (group.every((i) => at(roles, i).role === 'row')) for (const i of group.slice(0, -1)) sumsReduced.add(i);
  }
  const sharedPasses = new SharedPasses();
  // Column layers of one block that read the same input reduce (and, under SP, gather) it once;
  // each decoder layer's cross-attention K/V reduces its own gradient of the encoder output.
  const blockOf = blockIndexOf(structure, layers.length);
  const columnKey = (i: number): string => `${at(layers, i).activationInputs[0] ?? `#${i}`}|${at(blockOf, i)}`;
  const columnsByInput = new Map<string, number[]>();
  roles.forEach((r, i) => {
    if (r.role !== 'column') return;
    const key = columnKey(i);
    const group = columnsByInput.get(key);
    if (group === undefined) columnsByInput.set(key, [i]);
    else group.push(i);
  });
  // Layers up to the first one with parameters read only the data: no input gradient.
  const firstTrained = layers.findIndex((l) => l.weightParams + l.biasParams > 0);
  const needsInputGradAt = (i: number): boolean => i > firstTrained && at(layers, i).kind !== 'embedding';
  const cp = axesOf(world).cp;
  const shareAt = (i: number, tp: number, passesCache?: SharedPasses): LayerShare => {
    const layer = at(layers, i);
    const role = at(roles, i);
    const expert = onRank.get(i);
    if (expert !== undefined) return expertShare(layer, role.role, expert, etp, elementBytes, options.batch.microBatch, needsInputGradAt(i), passesCache);
    const group = role.role === 'column' ? columnsByInput.get(columnKey(i)) : undefined;
    const routed = experts.get(i);
    return shareOf({
      layer,
      role: role.role,
      tp,
      sequenceParallel: options.sequenceParallel,
      elementBytes,
      microBatch: options.batch.microBatch,
      needsInputGrad: needsInputGradAt(i),
      lmHead: role.lmHead === true,
      vocabDivisibleBy,
      addsEmbeddings: structure.embeddings.position.length + structure.embeddings.tokenType.length > 0,
      // A layer outside every column group is its own group of one.
      ownsInputGradient: group === undefined || group[0] === i,
      regathersInput: group === undefined || group[group.length - 1] === i,
      reducesOutput: !sumsReduced.has(i),
      // Unset options as undefined (shareOf reads them so): no object spread per layer.
      tokenRows: routed?.tokenRows,
      collectiveRows: routed?.collectiveRows,
      sharedPasses: passesCache,
      contextParallel: cp > 1 ? cp : undefined,
    });
  };
  const splitsEveryLayer = (tp: number): boolean => {
    if (kvSplitError(structure, layers, tp) !== undefined) return false;
    try {
      for (let i = 0; i < layers.length; i++) shareAt(i, tp);
      return true;
    } catch (e) {
      if (e instanceof TpSplitError) return false;
      throw e;
    }
  };
  const kvError = legacy === undefined ? kvSplitError(structure, layers, world.tp) : undefined;
  if (kvError !== undefined) throw new InputError(`${kvError.message}; ${tpSizesThatSplit(kvError.count, splitsEveryLayer)}`);
  const contextParallel = contextParallelOf({ structure, layers, cp, tp: world.tp, commType: options.cpCommType ?? 'p2p', microBatch: options.batch.microBatch, elementBytes });
  let planned: LayerPlan[];
  try {
    planned = layers.map((layer, i): LayerPlan => {
      const role = at(roles, i);
      const share = shareAt(i, world.tp, sharedPasses);
      const reason = experts.has(i) ? `${role.reason} (${formatShare(experts.get(i)?.ofTokens ?? 1)} of the tokens)` : sumsReduced.has(i) ? `${role.reason} (its sum reduced once, with the block's last)` : role.reason;
      const expert = onRank.get(i);
      if (expert === undefined) {
        return { layer, role: role.role, reason, passes: share.passes, weightParamsHeld: share.weightParamsHeld, biasParamsHeld: share.biasParamsHeld, collectives: share.collectives, needsInputGrad: needsInputGradAt(i), stage: 0, recompute: false };
      }
      const held = expertHolding(expert, expert.local ? share : ownerShare(at(layers, i), role.role, expert, etp, elementBytes, options.batch.microBatch, needsInputGradAt(i)));
      const why = expert.local ? `${role.reason} (expert-parallel: ${expert.rows} rows from EP ${axesOf(world).ep} x ETP ${etp})` : `${role.reason} (an expert another EP rank holds)`;
      return { layer, role: role.role, reason: why, passes: share.passes, weightParamsHeld: share.weightParamsHeld, biasParamsHeld: share.biasParamsHeld, collectives: share.collectives, needsInputGrad: needsInputGradAt(i), stage: 0, recompute: false, expert: held };
    });
  } catch (e) {
    if (!(e instanceof TpSplitError)) throw e;
    throw new InputError(`${e.message}; ${tpSizesThatSplit(e.count, splitsEveryLayer)}`);
  }
  const recompute = options.recompute ?? 'none';
  markRecompute(planned, recompute, structure);
  const pipeline = pipelineOf(planned, options, structure, inferred);
  // Initializers the layers read, by slot (names outside the main graph's initializers in a set);
  // a weight read twice (a tied head) is counted once per stage.
  const slots = new InitializerSlots(inferred);
  const usedSlots = new Uint8Array(slots.count);
  const usedOthers = new Set<string>();
  let weightReadTwice = false;
  const read = (tensors: readonly string[]): void => {
    for (const t of tensors) {
      const slot = slots.slotOf(t);
      const before = slot >= 0 ? usedSlots[slot] === 1 : usedOthers.has(t);
      if (before) weightReadTwice = true;
      else if (slot >= 0) usedSlots[slot] = 1;
      else usedOthers.add(t);
    }
  };
  for (const l of layers) {
    read(l.weightTensors);
    read(l.biasTensors);
  }
  if (weightReadTwice) countSharedWeightsOnce(planned);
  // Single-element float initializers are constants (eps, scales), not parameters.
  let otherParams = 0;
  for (const [i, t] of inferred.model.graph.initializers.entries()) {
    if (usedSlots[slots.slotAt(i)] === 1 || !isFloatDType(t.dtype)) continue;
    const elements = elementCount(t.dims);
    if (elements > 1) otherParams += elements;
  }
  return {
    world,
    batch: options.batch,
    sequenceParallel: options.sequenceParallel,
    zero: options.zero,
    dtype: options.dtype,
    elementBytes,
    gradientBytes,
    gradientParams: options.gradientParams ?? 'all',
    ...dataParallelOf(options, gradientBytes),
    layers: planned,
    otherParams,
    pipeline,
    recompute,
    structure,
    vocabDivisibleBy,
    ...(moeTopK.size === 0 ? {} : { moeTopK }),
    ...(contextParallel === undefined ? {} : { contextParallel }),
  };
}

/**
 * An expert layer's share under expert parallelism: on its EP rank, a column or row layer over
 * ETP ranks on the rows the dispatcher brings (no TP reduction of its own: the dispatcher's
 * reduce-scatter and all-to-alls, on the mixture's first and last local layers, replace it); on
 * the graph's rank, nothing when another EP rank holds it.
 */
function expertShare(layer: Layer, role: TpRole, expert: ExpertOnRank, etp: number, elementBytes: number, microBatch: number, needsInputGrad: boolean, sharedPasses?: SharedPasses): LayerShare {
  if (!expert.local) return { passes: NO_PASSES, weightParamsHeld: 0, biasParamsHeld: 0, collectives: NO_COLLECTIVES };
  const vector = layer.passes.vector;
  if (expert.vectorShare !== undefined && vector !== undefined) {
    const part = (x: number): number => Math.ceil(x * (expert.vectorShare ?? 1));
    return { passes: { fwd: [], ig: [], wg: [], vector: { ...vector, elements: part(vector.elements), bytesIn: part(vector.bytesIn), bytesOut: part(vector.bytesOut) } }, weightParamsHeld: layer.weightParams, biasParamsHeld: layer.biasParams, collectives: NO_COLLECTIVES };
  }
  const share = ownerShare(layer, role, expert, etp, elementBytes, microBatch, needsInputGrad, sharedPasses);
  return { ...share, collectives: expert.collectives ?? NO_COLLECTIVES };
}

function ownerShare(layer: Layer, role: TpRole, expert: ExpertOnRank, etp: number, elementBytes: number, microBatch: number, needsInputGrad: boolean, sharedPasses?: SharedPasses): LayerShare {
  return shareOf({ layer, role, tp: etp, sequenceParallel: false, elementBytes, microBatch, needsInputGrad, lmHead: false, ownsInputGradient: false, regathersInput: false, reducesOutput: false, tokenRows: expert.rows, ...(sharedPasses === undefined ? {} : { sharedPasses }) });
}

/** What the EP rank holding an expert layer holds of it (`owner`: its share there; the conservation check counts it). */
function expertHolding(expert: ExpertOnRank, owner: LayerShare): NonNullable<LayerPlan['expert']> {
  return { local: expert.local, ownerWeightParams: owner.weightParamsHeld, ownerBiasParams: owner.biasParamsHeld };
}

/**
 * Megatron-LM splits K and V by query groups: T must divide the K/V heads
 * (megatron/training/arguments.py: num_query_groups % tensor_model_parallel_size == 0); a K
 * projection of 4 heads x 64 features would otherwise split into half heads. (The heads
 * themselves are checked where the products are split, plan/shard.ts.)
 */
function kvSplitError(structure: ModelStructure, layers: readonly Layer[], tp: number): { message: string; count: number } | undefined {
  if (tp <= 1) return undefined;
  for (const a of structure.attentions) {
    // Heads that do not split are refused where the products are split; here the narrower K/V.
    if (a.kvHeads % tp === 0 || a.heads % tp !== 0) continue;
    const kind = a.kvHeads === 1 ? 'multi-query attention: its 1 K/V head does' : `${a.kvHeads} K/V heads (query groups) do`;
    return { message: `layer ${at(layers, a.k >= 0 ? a.k : a.scores).name}: ${kind} not split over --tp ${tp} (Megatron-LM: num_query_groups must be a multiple of tensor_model_parallel_size)`, count: a.kvHeads };
  }
  return undefined;
}

/** Each layer's block index (-1 outside every block). */
function blockIndexOf(structure: ModelStructure, count: number): Int32Array {
  const block = new Int32Array(count).fill(-1);
  structure.blocks.forEach((b, k) => {
    block.fill(k, b.start, b.end + 1);
  });
  return block;
}

/**
 * Row-parallel layers whose partial outputs are summed before the residual add, so reduced once:
 * a parallel residual's attention and MLP outputs (GPT-NeoX all-reduces attn + mlp together), the
 * experts of a mixture (Megatron-core combines the experts' outputs, then reduces). Each group
 * ascending; its last layer carries the reduction.
 */
function rowsSummedBeforeReduction(structure: ModelStructure): number[][] {
  const groups: number[][] = [];
  for (const b of structure.blocks) {
    if (b.mlp === undefined) continue;
    const mlp = structure.mlps[b.mlp];
    const downs = mlp === undefined ? [] : [...mlp.down].sort((x, y) => x - y);
    const self = structure.attentions[b.attentions[0] ?? -1];
    const attnOut = b.residual === 'parallel' && self !== undefined && self.out >= 0 ? [self.out] : [];
    const group = [...attnOut, ...(mlp?.kind === 'moe' ? downs : downs.slice(-1))];
    if (group.length > 1) groups.push(group);
  }
  return groups;
}

/**
 * Share of the tokens each expert's GEMMs run on: top-k of E experts under uniform routing
 * (Megatron-core's token dispatcher sends each token to k experts), times the capacity factor,
 * at most all of them. The graph's dense form computes every expert on every token, so its GEMMs
 * are scaled by that share; the routed (index) form already runs each expert on its uniform share
 * for the graph's top-k (shape/routing.ts), so only a different top-k or a capacity factor
 * rescales it. Either way an expert runs on ceil(T x k x capacity / E) of the router's T tokens,
 * at most T, computed with the numerator first so that an exact share stays exact.
 */
function expertShares(structure: ModelStructure, layers: readonly Layer[], options: PlanOptions): Map<number, ExpertShare> {
  const shares = new Map<number, ExpertShare>();
  structure.mlps.forEach((m, mlp) => {
    if (m.kind !== 'moe' || m.experts === undefined) return;
    const experts = m.experts.length;
    const { topK, capacity } = moeRouting(structure, layers, options, mlp);
    const ofTokens = Math.min(1, (topK * capacity) / experts);
    const routerRows = at(layers, m.router ?? at(m.down, 0)).gemm.fwd.m;
    const tokenRows = Math.max(1, Math.min(routerRows, Math.ceil((routerRows * topK * capacity) / experts)));
    // A routed (index-form) expert's gradient and output reductions carry all the router's tokens.
    const share: ExpertShare = { tokenRows, ofTokens, ...(m.dispatch === 'routed' ? { collectiveRows: routerRows } : {}) };
    for (const i of [...m.up, ...m.gate, ...m.down]) shares.set(i, share);
  });
  return shares;
}

/** A mixture's top-k (--moe-topk, else the graph's TopK, else every expert) and capacity factor (--moe-capacity-factor, default 1). */
function moeRouting(structure: ModelStructure, layers: readonly Layer[], options: PlanOptions, mlp: number): { topK: number; capacity: number } {
  const m = at(structure.mlps, mlp);
  const experts = m.experts?.length ?? 1;
  const topK = options.moe?.topK ?? m.topK ?? experts;
  if (!Number.isInteger(topK) || topK < 1 || topK > experts) throw new InputError(`--moe-topk ${topK}: the MoE layer at '${at(layers, m.router ?? at(m.down, 0)).name}' has ${experts} experts; top-k must be 1 to ${experts}`);
  return { topK, capacity: options.moe?.capacityFactor ?? 1 };
}

/** The data-parallel gradient reduction: bucket size and when buckets are reduced (see PlanOptions.ddp). */
function dataParallelOf(options: PlanOptions, gradientBytes: number): Pick<ParallelPlan, 'dpBucketBytes' | 'ddp'> {
  const ddp = options.ddp ?? 'megatron';
  if (ddp === 'torch') return { dpBucketBytes: Math.round((options.dpBucketMiB ?? 25) * 2 ** 20), ddp: { kind: 'torch', overlap: true, bucketsAfterFirstStage: true } };
  if (options.overlapGradReduce !== true) return { dpBucketBytes: Number.POSITIVE_INFINITY, ddp: { kind: 'megatron', overlap: false, bucketsAfterFirstStage: false } };
  // training/training.py resolve_ddp_bucket_size: max(40 M, 1 M x the data-parallel-with-context-parallel size).
  const elements = Math.max(40_000_000, 1_000_000 * options.world.dp * (options.world.cp ?? 1));
  const bytes = options.dpBucketMiB !== undefined ? Math.round(options.dpBucketMiB * 2 ** 20) : elements * gradientBytes;
  return { dpBucketBytes: bytes, ddp: { kind: 'megatron', overlap: true, bucketsAfterFirstStage: false } };
}

interface ExpertShare {
  /** Rows (tokens) the expert's GEMMs run on. */
  tokenRows: number;
  /** Share of all the mixture's tokens (shown in the role's reason). */
  ofTokens: number;
  /** A routed expert's collectives carry its router's rows. */
  collectiveRows?: number;
}

function formatShare(share: number): string {
  return `${Number((share * 100).toFixed(2))}%`;
}

/**
 * A weight an earlier layer of the same pipeline stage already holds (a tied LM head) is one
 * parameter: its gradient is reduced and updated once, with the first holder. On different
 * stages each holds a copy (Megatron-LM's tied embedding, all-reduced between the two stages).
 */
function countSharedWeightsOnce(layers: LayerPlan[]): void {
  // Tensor names held, per stage: no key string per layer and tensor.
  const heldByStage: Set<string>[] = [];
  for (const l of layers) {
    const { weightTensors, biasTensors } = l.layer;
    if (weightTensors.length + biasTensors.length === 0) continue;
    let held = heldByStage[l.stage];
    if (held === undefined) {
      held = new Set();
      heldByStage[l.stage] = held;
    }
    // Biases too: exporters merge equal initializers (torch's zero-initialised norm shifts become one tensor).
    const sharedOf = (tensors: readonly string[]): number => {
      let shared = 0;
      for (const t of tensors) if (held.has(t)) shared += l.layer.tensorParams?.get(t) ?? 0;
      return shared;
    };
    const sharedWeights = sharedOf(weightTensors);
    const sharedBiases = sharedOf(biasTensors);
    for (const t of weightTensors) held.add(t);
    for (const t of biasTensors) held.add(t);
    if (sharedWeights > 0 && l.layer.weightParams > 0) l.weightParamsHeld *= (l.layer.weightParams - sharedWeights) / l.layer.weightParams;
    if (sharedBiases > 0 && l.layer.biasParams > 0) l.biasParamsHeld *= (l.layer.biasParams - sharedBiases) / l.layer.biasParams;
  }
}

/**
 * Full: the transformer blocks' layers, as Megatron-LM checkpoints each transformer layer
 * (`--recompute-granularity full`: transformer_block.py's `_checkpointed_forward` wraps the layers,
 * not the embedding, the final norm, the head or the loss); every layer of a model without
 * blocks. Selective: each attention core (the scores and context products and the vector work
 * between them).
 */
function markRecompute(layers: LayerPlan[], mode: RecomputeMode, structure: ModelStructure): void {
  if (mode === 'full') {
    if (structure.blocks.length === 0) for (const l of layers) l.recompute = true;
    for (const b of structure.blocks) for (let i = b.start; i <= b.end; i++) at(layers, i).recompute = true;
  }
  if (mode !== 'selective') return;
  for (const a of structure.attentions) {
    for (const i of [a.scores, a.context, ...a.core]) at(layers, i).recompute = true;
  }
}

function pipelineOf(layers: LayerPlan[], options: PlanOptions, structure: ModelStructure, inferred: InferredModel): PipelinePlan {
  const pp = options.world.pp;
  const schedule = options.pipelineSchedule ?? '1f1b';
  const virtualStages = schedule === 'interleaved' ? options.virtualStages ?? 2 : 1;
  if (schedule !== 'interleaved' && (options.virtualStages ?? 1) !== 1) throw new InputError(`--vpp ${options.virtualStages} needs --pp-schedule interleaved`);
  if (schedule === 'interleaved') {
    if (pp < 2) throw new InputError(`--pp-schedule interleaved needs --pp 2 or more`);
    if (virtualStages < 2) throw new InputError(`--pp-schedule interleaved needs --vpp 2 or more (model chunks per rank)`);
    if (options.batch.microBatches % pp !== 0) throw new InputError(`--pp-schedule interleaved: ${options.batch.microBatches} micro-batches per step is not a multiple of --pp ${pp} (Megatron-LM requires it)`);
  }
  const parts = pp * virtualStages;
  const cycles = pp === 1 ? undefined : layers.map((l) => {
    if (options.layerCycles === undefined) throw new Error('internal error: pipeline stages need layer cycles');
    return options.layerCycles(l);
  });
  // The layers for the cuts: none for one stage (a 100k-element copy the chain's plan never read).
  const names = options.stagesFile !== undefined || parts > 1 ? layers.map((l) => l.layer) : [];
  let starts: number[];
  let partition: string;
  if (options.stagesFile !== undefined) {
    starts = startsFromFile(options.stagesFile.file, options.stagesFile.text, names, parts);
    checkCutsClose(inferred, names, starts, options.stagesFile.file, structure);
    partition = `--pp-stages ${options.stagesFile.file}`;
  } else if (parts === 1) {
    starts = [0];
    partition = 'one stage';
  } else {
    const cuts = pipelineCuts(structure, inferred, names);
    // balancedStarts would refuse too, in parts and cuts; the user gave --pp (and --vpp): say the largest that fits.
    const pieces = cuts.filter((c) => c > 0 && c < layers.length).length + 1;
    if (parts > pieces) {
      const largest = Math.floor(pieces / virtualStages);
      const chunks = virtualStages > 1 ? ` x --vpp ${virtualStages} = ${parts} model chunks` : ' stages';
      const fits = largest >= 2 ? `the largest --pp${virtualStages > 1 ? ` with --vpp ${virtualStages}` : ''} is ${largest}` : `no pipeline of --vpp ${virtualStages} chunks per rank fits`;
      const where = structure.transformer ? 'at its block boundaries' : 'where one tensor crosses';
      throw new InputError(`--pp ${pp}${chunks}: the model cuts into at most ${pieces} parts ${where}; ${fits}`);
    }
    const even = structure.transformer && structure.blocks.length > 0 && (options.pipelineSplit ?? 'even') === 'even';
    const uneven = options.firstStageBlocks !== undefined || options.lastStageBlocks !== undefined;
    if (uneven && !even) throw new InputError(`--decoder-first/last-pipeline-num-layers set the blocks of Megatron-LM's even split: they apply to a transformer with --pp-split even`);
    if (uneven && virtualStages > 1) throw new InputError(`--decoder-first/last-pipeline-num-layers with --pp-schedule interleaved is not modelled; give the stages by hand with --pp-stages`);
    const blocksPerStage = uneven ? unevenBlocks(structure.blocks.length, pp, options.firstStageBlocks, options.lastStageBlocks) : undefined;
    starts = blocksPerStage !== undefined ? startsOfBlocks(structure, blocksPerStage) : even ? evenStarts(structure, parts, pp, virtualStages) : balancedStarts(cycles ?? layers.map(() => 0), cuts, parts);
    checkCutsClose(inferred, names, starts, 'the pipeline plan', structure);
    partition = blocksPerStage !== undefined
      ? `${blocksPerStage.join(' / ')} blocks per stage, as Megatron-LM splits the layers with --decoder-first/last-pipeline-num-layers`
      : even
      ? `${structure.blocks.length / parts} blocks per part, as Megatron-LM splits the layers`
      : structure.transformer ? 'block boundaries, min-max of forward + backward cycles (dynamic programme)' : 'cuts where one tensor crosses, min-max of forward + backward cycles (dynamic programme)';
  }
  const stages = stagesOf(starts, layers.length, pp, cycles);
  stages.forEach((s, p) => {
    // Every layer starts on stage 0.
    if (p > 0) for (const i of s.layers) at(layers, i).stage = p;
  });
  // Boundaries that pass more than the stream (carried values) send them too.
  const sends = starts.length > 1 && structure.transformer ? pipelineSends(inferred, names, starts, structure) : [];
  return { schedule, virtualStages, stages, partition, ...(sends.some((x) => x.values.some((v) => v.carried)) ? { sends } : {}) };
}

/**
 * Megatron-LM's uneven split (core/transformer/transformer_layer.py, get_transformer_layer_offset;
 * --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers): the first and / or
 * the last stage hold the blocks given, the other stages the rest evenly (which must divide).
 */
function unevenBlocks(blocks: number, pp: number, first: number | undefined, last: number | undefined): number[] {
  const flags = `${first === undefined ? '' : `--decoder-first-pipeline-num-layers ${first}`}${first !== undefined && last !== undefined ? ' and ' : ''}${last === undefined ? '' : `--decoder-last-pipeline-num-layers ${last}`}`;
  const middleStages = pp - (first === undefined ? 0 : 1) - (last === undefined ? 0 : 1);
  const middleBlocks = blocks - (first ?? 0) - (last ?? 0);
  if (middleStages < 0 || middleBlocks < 0 || (middleStages === 0 && middleBlocks !== 0) || (middleStages > 0 && middleBlocks % middleStages !== 0)) {
    throw new InputError(`${flags} with --pp ${pp}: the model's ${blocks} transformer blocks leave ${middleBlocks} for ${middleStages} other stage${middleStages === 1 ? '' : 's'}, which must split them evenly (Megatron-LM)`);
  }
  const per = middleStages === 0 ? 0 : middleBlocks / middleStages;
  const out = Array.from({ length: pp }, () => per);
  if (first !== undefined) out[0] = first;
  if (last !== undefined) out[pp - 1] = last;
  if (out.some((n) => n < 1)) throw new InputError(`${flags} with --pp ${pp}: every stage needs at least one of the model's ${blocks} transformer blocks (${out.join(' / ')})`);
  return out;
}

/** Part starts of a split with `blocksPerPart[k]` blocks in part k (the embedding with the first, the head with the last). */
function startsOfBlocks(structure: ModelStructure, blocksPerPart: readonly number[]): number[] {
  let before = 0;
  return blocksPerPart.map((n, k) => {
    const start = k === 0 ? 0 : at(structure.blocks, before - 1).end + 1;
    before += n;
    return start;
  });
}

/**
 * Megatron-LM's split: each of the P x V parts holds blocks / parts transformer layers
 * (core/transformer/transformer_block.py get_num_layers_to_build; the embedding with the first
 * part, the final norm and head with the last), and the blocks must divide.
 */
function evenStarts(structure: ModelStructure, parts: number, pp: number, virtualStages: number): number[] {
  const blocks = structure.blocks.length;
  if (blocks % parts !== 0) {
    const fits = Array.from({ length: blocks }, (_, i) => i + 1).filter((p) => p >= 2 && blocks % (p * virtualStages) === 0);
    const chunks = virtualStages > 1 ? ` x --vpp ${virtualStages} = ${parts} model chunks` : '';
    const valid = fits.length > 0 ? `--pp ${fits.join(', ')} split them evenly` : 'no --pp splits them evenly';
    throw new InputError(`--pp ${pp}${chunks}: the model's ${blocks} transformer blocks do not split evenly (Megatron-LM: the layers must divide by the pipeline size); ${valid}, or --pp-split balanced cuts by costed time`);
  }
  const per = blocks / parts;
  return Array.from({ length: parts }, (_, k) => (k === 0 ? 0 : at(structure.blocks, k * per - 1).end + 1));
}

/**
 * Global batch, micro-batch and micro-batches from the options (README, "Batches"): `--batch` is
 * one replica's samples per step, `--global-batch` all replicas', `--micro-batch` one forward's.
 * Unset values follow from the others; the default is the model's exported batch per replica.
 */
export function batchPlanOf(opts: { batch?: number; globalBatch?: number; microBatch?: number; limits?: boolean }, dp: number, exportedBatch: number): BatchPlan {
  const { batch, globalBatch, microBatch } = opts;
  if (batch !== undefined && globalBatch !== undefined && batch * dp !== globalBatch) {
    throw new InputError(`--batch ${batch} (per replica) x ${dp} data-parallel replicas is ${batch * dp}, not --global-batch ${globalBatch}`);
  }
  const perReplicaTotal = globalBatch ?? (batch !== undefined ? batch * dp : (microBatch ?? exportedBatch) * dp);
  if (perReplicaTotal < dp) throw new InputError(`--global-batch ${perReplicaTotal} leaves a data-parallel replica with less than one sample (${dp} replicas)`);
  if (perReplicaTotal % dp !== 0) throw new InputError(`--global-batch ${perReplicaTotal} does not divide over ${dp} data-parallel replicas`);
  const perReplica = perReplicaTotal / dp;
  const micro = microBatch ?? perReplica;
  if (perReplica % micro !== 0) {
    throw new InputError(`${perReplica} samples per replica (global batch ${perReplicaTotal} / ${dp} replicas) do not split into micro-batches of ${micro}`);
  }
  checkMicroBatches(perReplica / micro, `--global-batch ${perReplicaTotal} / (--micro-batch ${micro} x --dp ${dp})`, opts.limits !== false);
  return { globalBatch: perReplicaTotal, microBatch: micro, microBatches: perReplica / micro };
}
