/** Layers + graph + options -> ParallelPlan: roles, per-rank shares, collectives, groups. */
import { at, InputError, shown } from '../errors.js';
import { elementCount } from '../ir/dim.js';
import { isFloatDType } from '../ir/dtype.js';
import type { Layer } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';
import { checkMicroBatches } from './limits.js';
import { compileNamePattern, MAX_TP_PATTERNS, type NamePattern } from './tp-pattern.js';
import { SharedPasses, shareOf } from './shard.js';
import { allowedCuts, balancedStarts, stagesOf, startsFromFile } from './stages.js';
import { assignTpRoles, type RoleAssignment } from './tp-roles.js';
import { DTYPE_BYTES, TP_ROLES, type BatchPlan, type LayerPlan, type ParallelPlan, type PipelinePlan, type PipelineScheduleKind, type RecomputeMode, type TpRole, type TrainingDType, type WorldShape, type ZeroStage } from './types.js';

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
  /** PyTorch DDP's bucket_cap_mb (25 by default): buckets of this many MiB of gradients. */
  dpBucketMiB: number;
  gradientParams?: 'all' | 'weights';
  /** `--tp-plan` entries, tried in order on each layer's name. */
  tpOverrides?: readonly TpOverride[];
  /** Force every layer to one role (the legacy MODEL / HYBRID split). */
  forceRole?: TpRole;
  /** Pipeline schedule and chunks per rank (1F1B with one chunk by default). */
  pipelineSchedule?: PipelineScheduleKind;
  virtualStages?: number;
  /** `--pp-stages`: the file name and its content (overrides the balanced cut). */
  stagesFile?: { file: string; text: string };
  /** One rank's forward + backward cycles of a layer per micro-batch, to balance stages (needed when pp > 1). */
  layerCycles?: (l: LayerPlan) => number;
  recompute?: RecomputeMode;
}

export interface PlanInput {
  inferred: InferredModel;
  layers: readonly Layer[];
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
    if (typeof role !== 'string' || !(TP_ROLES as readonly string[]).includes(role)) throw new InputError(`${where}: role of '${shown(pattern)}' must be one of ${TP_ROLES.join(', ')}`);
    return { pattern: compileNamePattern(pattern, where), role: role as TpRole };
  });
}

export function buildPlan(input: PlanInput, options: PlanOptions): ParallelPlan {
  const { layers, inferred } = input;
  const { world } = options;
  const elementBytes = DTYPE_BYTES[options.dtype];
  const forced = options.forceRole;
  const legacy: RoleAssignment | undefined = forced === undefined ? undefined : { role: forced, reason: 'legacy strategy' };
  const found: RoleAssignment[] = legacy !== undefined ? layers.map(() => legacy) : assignTpRoles(inferred, layers);
  const overrides = options.tpOverrides ?? [];
  const roles = overrides.length === 0 ? found : layers.map((l, i): RoleAssignment => {
    const override = overrides.find((o) => o.pattern.test(l.name));
    return override === undefined ? at(found, i) : { role: override.role, reason: `--tp-plan '${override.pattern.source}'` };
  });
  const sharedPasses = new SharedPasses();
  // Column layers that read the same input reduce (and, under SP, gather) it once.
  const columnsByInput = new Map<string, number[]>();
  roles.forEach((r, i) => {
    if (r.role !== 'column') return;
    const key = at(layers, i).activationInputs[0] ?? `#${i}`;
    const group = columnsByInput.get(key);
    if (group === undefined) columnsByInput.set(key, [i]);
    else group.push(i);
  });
  // Layers up to the first one with parameters read only the data: no input gradient.
  const firstTrained = layers.findIndex((l) => l.weightParams + l.biasParams > 0);
  const planned = layers.map((layer, i): LayerPlan => {
    const role = at(roles, i);
    const group = role.role === 'column' ? columnsByInput.get(layer.activationInputs[0] ?? `#${i}`) ?? [i] : [i];
    const needsInputGrad = i > firstTrained && layer.kind !== 'embedding';
    const share = shareOf({
      layer,
      role: role.role,
      tp: world.tp,
      sequenceParallel: options.sequenceParallel,
      elementBytes,
      microBatch: options.batch.microBatch,
      needsInputGrad,
      lmHead: role.lmHead === true,
      ownsInputGradient: group[0] === i,
      regathersInput: group[group.length - 1] === i,
      sharedPasses,
    });
    return { layer, role: role.role, reason: role.reason, passes: share.passes, weightParamsHeld: share.weightParamsHeld, biasParamsHeld: share.biasParamsHeld, collectives: share.collectives, needsInputGrad, stage: 0, recompute: false };
  });
  const recompute = options.recompute ?? 'none';
  markRecompute(planned, recompute);
  const pipeline = pipelineOf(planned, options);
  // Initializers the layers read; a weight read twice (a tied head) is counted once per stage.
  const used = new Set<string>();
  let weightReadTwice = false;
  for (const l of layers) {
    for (const t of l.weightTensors) {
      const before = used.size;
      used.add(t);
      if (used.size === before) weightReadTwice = true;
    }
    for (const t of l.biasTensors) used.add(t);
  }
  if (weightReadTwice) countSharedWeightsOnce(planned);
  // Single-element float initializers are constants (eps, scales), not parameters.
  const otherParams = inferred.model.graph.initializers
    .filter((t) => !used.has(t.name) && isFloatDType(t.dtype) && elementCount(t.dims) > 1)
    .reduce((a, t) => a + elementCount(t.dims), 0);
  return {
    world,
    batch: options.batch,
    sequenceParallel: options.sequenceParallel,
    zero: options.zero,
    dtype: options.dtype,
    elementBytes,
    gradientParams: options.gradientParams ?? 'all',
    dpBucketBytes: Math.round(options.dpBucketMiB * 2 ** 20),
    layers: planned,
    otherParams,
    pipeline,
    recompute,
  };
}

/**
 * A weight an earlier layer of the same pipeline stage already holds (a tied LM head) is one
 * parameter: its gradient is reduced and updated once, with the first holder. On different
 * stages each holds a copy (Megatron-LM's tied embedding, all-reduced between the two stages).
 */
function countSharedWeightsOnce(layers: LayerPlan[]): void {
  // Weight names held, per stage: no key string per layer and tensor.
  const heldByStage: Set<string>[] = [];
  for (const l of layers) {
    const tensors = l.layer.weightTensors;
    if (tensors.length === 0) continue;
    let held = heldByStage[l.stage];
    if (held === undefined) {
      held = new Set();
      heldByStage[l.stage] = held;
    }
    let shared = 0;
    for (const t of tensors) if (held.has(t)) shared += l.layer.tensorParams?.get(t) ?? 0;
    for (const t of tensors) held.add(t);
    if (shared > 0 && l.layer.weightParams > 0) l.weightParamsHeld *= (l.layer.weightParams - shared) / l.layer.weightParams;
  }
}

/** Full: every layer; selective: the attention core (the 'heads' products and the vector work between a pair of them). */
function markRecompute(layers: LayerPlan[], mode: RecomputeMode): void {
  if (mode === 'full') for (const l of layers) l.recompute = true;
  if (mode !== 'selective') return;
  const heads = layers.flatMap((l, i) => (l.role === 'heads' ? [i] : []));
  for (const i of heads) at(layers, i).recompute = true;
  for (let k = 0; k + 1 < heads.length; k += 2) {
    for (let i = at(heads, k) + 1; i < at(heads, k + 1); i++) {
      const l = at(layers, i);
      if (l.layer.kind === 'vector') l.recompute = true;
    }
  }
}

function pipelineOf(layers: LayerPlan[], options: PlanOptions): PipelinePlan {
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
  const cycles = pp === 1 ? layers.map(() => 0) : layers.map((l) => {
    if (options.layerCycles === undefined) throw new Error('internal error: pipeline stages need layer cycles');
    return options.layerCycles(l);
  });
  const names = layers.map((l) => l.layer);
  let starts: number[];
  let partition: string;
  if (options.stagesFile !== undefined) {
    starts = startsFromFile(options.stagesFile.file, options.stagesFile.text, names, parts);
    partition = `--pp-stages ${options.stagesFile.file}`;
  } else if (parts === 1) {
    starts = [0];
    partition = 'one stage';
  } else {
    starts = balancedStarts(cycles, allowedCuts(names, layers.map((l) => l.reason)), parts);
    partition = 'block boundaries, min-max of forward + backward cycles (dynamic programme)';
  }
  const stages = stagesOf(starts, layers.length, pp, cycles);
  stages.forEach((s, p) => {
    for (const i of s.layers) at(layers, i).stage = p;
  });
  return { schedule, virtualStages, stages, partition };
}

/**
 * Global batch, micro-batch and micro-batches from the options (README, "Batches"): `--batch` is
 * one replica's samples per step, `--global-batch` all replicas', `--micro-batch` one forward's.
 * Unset values follow from the others; the default is the model's exported batch per replica.
 */
export function batchPlanOf(opts: { batch?: number; globalBatch?: number; microBatch?: number }, dp: number, exportedBatch: number): BatchPlan {
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
  checkMicroBatches(perReplica / micro, `--global-batch ${perReplicaTotal} / (--micro-batch ${micro} x --dp ${dp})`);
  return { globalBatch: perReplicaTotal, microBatch: micro, microBatches: perReplica / micro };
}
