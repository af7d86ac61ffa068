/**
 * The plan options resolved into a plan request: the world shape (--tp/--dp/--pp or the legacy
 * -p/--npus/--mp-group), the batches, ZeRO, sequence parallelism; and the model analysed at the
 * micro-batch it will run at. Imported when a command runs.
 */
import { InputError, shown } from '../errors.js';
import { readRegularFile } from '../files.js';
import { isIntegerDType } from '../ir/dtype.js';
import { batchPlanOf, parseTpPlan, type PlanOptions, type TpOverride } from '../plan/build.js';
import { checkWorldSize } from '../plan/limits.js';
import { checkAxes, DEFAULT_AXIS_ORDER, parseAxisOrder, worldSize } from '../plan/axes.js';
import type { BatchPlan, CpCommType, ParamsCounted, PipelineScheduleKind, RecomputeMode, TrainingDType, WorldShape, ZeroStage } from '../plan/types.js';
import type { AnalysedModel } from '../pipeline.js';
import type { BatchScalingHeld } from '../layers/batch-scaling.js';
import { legacyWorld, PARALLELISMS, type Parallelism } from '../plan/legacy.js';
import type { PlanCliOptions } from './plan-options.js';

/**
 * The plan options the command line gives: `PlanOptions` but the batches (set once the model's
 * exported batch is read: analyseForPlan) and the cost hook (the command's cost model), plus the
 * legacy -p keyword when the plan came from it (the text format writes it).
 */
export interface PlanRequest extends Omit<PlanOptions, 'batch' | 'layerCycles' | 'forceRole' | 'gradientParams'> {
  legacy?: Parallelism;
  gradientParams: ParamsCounted;
}

/** -p in any case: data, Data, DATA. */
export function parseParallelism(value: string): Parallelism {
  const upper = value.toUpperCase();
  if (!(PARALLELISMS as readonly string[]).includes(upper)) throw new InputError(`-p ${value}: expected one of ${PARALLELISMS.join(', ')}`);
  return upper as Parallelism;
}

const DEFAULT_NPUS = 8;

/** Whether the options describe a --tp/--dp/... plan (not a legacy -p strategy). */
export function usesPlanFlags(opts: PlanCliOptions): boolean {
  const pipelineOpts = opts.ppStages !== undefined || opts.ppSchedule !== undefined || opts.vpp !== undefined || opts.ppSplit !== undefined || opts.decoderFirstPipelineNumLayers !== undefined || opts.decoderLastPipelineNumLayers !== undefined;
  const axisOpts = opts.cp !== undefined || opts.ep !== undefined || opts.etp !== undefined || opts.order !== undefined || opts.cpCommType !== undefined;
  return opts.tp !== undefined || opts.dp !== undefined || opts.pp !== undefined || opts.sp === true || opts.zero !== undefined || pipelineOpts || axisOpts;
}

export function planRequestOf(opts: PlanCliOptions): PlanRequest {
  const modern = usesPlanFlags(opts);
  let world: WorldShape;
  let legacy: Parallelism | undefined;
  if (modern) {
    if (opts.parallelism !== undefined) throw new InputError(`-p ${opts.parallelism} and --tp/--cp/--ep/--dp/--pp/--sp/--zero describe the same thing: give one or the other`);
    if (opts.mpGroup !== undefined) throw new InputError(`--mp-group belongs to -p HYBRID_*; with --tp/--dp use --tp for the tensor-parallel size`);
    const tp = opts.tp ?? 1;
    const pp = opts.pp ?? 1;
    if (opts.ppStages !== undefined && pp < 2) throw new InputError(`--pp-stages needs --pp 2 or more`);
    if (opts.ppSplit !== undefined && pp < 2) throw new InputError(`--pp-split ${opts.ppSplit} needs --pp 2 or more`);
    if (opts.ppSplit !== undefined && opts.ppStages !== undefined) throw new InputError(`--pp-split ${opts.ppSplit} and --pp-stages both say where to cut: give one`);
    const uneven = opts.decoderFirstPipelineNumLayers !== undefined || opts.decoderLastPipelineNumLayers !== undefined;
    if (uneven && pp < 2) throw new InputError(`--decoder-first/last-pipeline-num-layers need --pp 2 or more`);
    if (uneven && opts.ppStages !== undefined) throw new InputError(`--decoder-first/last-pipeline-num-layers and --pp-stages both say where to cut: give one`);
    if (opts.ppSchedule !== undefined && opts.ppSchedule !== '1f1b' && pp < 2) throw new InputError(`--pp-schedule ${opts.ppSchedule} needs --pp 2 or more`);
    if (opts.vpp !== undefined && opts.ppSchedule !== 'interleaved') throw new InputError(`--vpp ${opts.vpp} needs --pp-schedule interleaved`);
    const cp = opts.cp ?? 1;
    const model = `--tp ${tp}${cp > 1 ? ` x --cp ${cp}` : ''} x --pp ${pp}`;
    const dp = opts.dp ?? (opts.npus !== undefined ? opts.npus / (tp * cp * pp) : 1);
    if (!Number.isSafeInteger(dp) || dp < 1) throw new InputError(`--npus ${opts.npus} is not a multiple of ${model}`);
    world = { tp, dp, pp, ...axesRequest(opts) };
    const ranks = tp * cp * dp * pp;
    if (opts.npus !== undefined && opts.npus !== ranks) throw new InputError(`--npus ${opts.npus} disagrees with --tp ${tp}${cp > 1 ? ` x --cp ${cp}` : ''} x --dp ${dp} x --pp ${pp} = ${ranks}`);
    checkAxes(world);
    if (opts.sp === true && tp < 2) throw new InputError(`--sp splits the sequence over the tensor-parallel group: it needs --tp 2 or more`);
    if (opts.tpPlan !== undefined && tp < 2) throw new InputError(`--tp-plan ${opts.tpPlan} sets tensor-parallel roles: it needs --tp 2 or more`);
  } else {
    if (opts.tpPlan !== undefined) {
      throw new InputError(`--tp-plan ${opts.tpPlan} sets the roles of a --tp plan${opts.parallelism === undefined ? ': it needs --tp 2 or more' : `; -p ${opts.parallelism} splits every layer its own way: give one or the other`}`);
    }
    legacy = parseParallelism(opts.parallelism ?? 'DATA');
    world = legacyWorld({ parallelism: legacy, npus: opts.npus ?? DEFAULT_NPUS, mpGroup: opts.mpGroup });
  }
  checkWorldSize(world, modern ? `--tp ${world.tp}${(world.cp ?? 1) > 1 ? ` x --cp ${world.cp}` : ''} x --dp ${world.dp} x --pp ${world.pp}` : `--npus ${worldSize(world)}`, opts.limits !== false);
  const tpOverrides = opts.tpPlan === undefined ? undefined : readTpPlan(opts.tpPlan);
  return {
    gradReduce: gradReduceOf(opts, legacy !== undefined),
    // Megatron-LM's vocabulary padding; the legacy strategies keep the model's vocabulary.
    ...(opts.makeVocabSizeDivisibleBy !== undefined || legacy !== undefined ? { vocabDivisibleBy: legacy !== undefined ? 1 : opts.makeVocabSizeDivisibleBy } : {}),
    world,
    ...(legacy === undefined ? {} : { legacy }),
    sequenceParallel: opts.sp === true,
    zero: Number(opts.zero ?? 0) as ZeroStage,
    dtype: opts.dtype as TrainingDType,
    gradientParams: opts.params as ParamsCounted,
    ...dataParallelRequest(opts, legacy !== undefined),
    ...(tpOverrides === undefined ? {} : { tpOverrides }),
    ...(opts.ppSchedule === undefined ? {} : { pipelineSchedule: opts.ppSchedule as PipelineScheduleKind }),
    ...(opts.ppSplit === undefined ? {} : { pipelineSplit: opts.ppSplit as 'even' | 'balanced' }),
    ...(opts.decoderFirstPipelineNumLayers === undefined ? {} : { firstStageBlocks: opts.decoderFirstPipelineNumLayers }),
    ...(opts.decoderLastPipelineNumLayers === undefined ? {} : { lastStageBlocks: opts.decoderLastPipelineNumLayers }),
    ...(opts.vpp === undefined ? {} : { virtualStages: opts.vpp }),
    ...(opts.ppStages === undefined ? {} : { stagesFile: { file: opts.ppStages, text: readOptionFile('--pp-stages', opts.ppStages) } }),
    ...(opts.recompute === undefined ? {} : { recompute: opts.recompute as RecomputeMode }),
    ...(opts.cpCommType === undefined ? {} : { cpCommType: opts.cpCommType as CpCommType }),
    ...(opts.moeTopk === undefined && opts.moeCapacityFactor === undefined ? {} : {
      moe: { ...(opts.moeTopk === undefined ? {} : { topK: opts.moeTopk }), ...(opts.moeCapacityFactor === undefined ? {} : { capacityFactor: opts.moeCapacityFactor }) },
    }),
  };
}

/**
 * --cp, --ep, --etp, --order and --cp-comm-type as the world's extra axes (plan/axes.ts); only
 * those given, so a plan without them is the plain TP x DP x PP world. An axis --order leaves out
 * must have size 1, as Megatron's RankGenerator requires.
 */
function axesRequest(opts: PlanCliOptions): Pick<WorldShape, 'cp' | 'ep' | 'etp' | 'order'> {
  if (opts.cpCommType !== undefined && (opts.cp ?? 1) < 2) throw new InputError(`--cp-comm-type ${opts.cpCommType} is context parallelism's K/V exchange: it needs --cp 2 or more`);
  const order = opts.order === undefined ? undefined : parseAxisOrder(opts.order);
  if (opts.order !== undefined) {
    const named = new Set(opts.order.toLowerCase().split('-'));
    const sizes: Record<string, number | undefined> = { tp: opts.tp, cp: opts.cp, ep: opts.ep, dp: opts.dp, pp: opts.pp };
    for (const [axis, size] of Object.entries(sizes)) {
      if (!named.has(axis) && size !== undefined && size > 1) throw new InputError(`--order ${opts.order} leaves out ${axis} and --${axis} is ${size}: name every axis of size > 1 (Megatron-LM appends only axes of size 1)`);
    }
  }
  return {
    ...(opts.cp === undefined || opts.cp === 1 ? {} : { cp: opts.cp }),
    ...(opts.ep === undefined || opts.ep === 1 ? {} : { ep: opts.ep }),
    ...(opts.etp === undefined || opts.etp === (opts.tp ?? 1) ? {} : { etp: opts.etp }),
    ...(order === undefined || order.every((n, i) => n === DEFAULT_AXIS_ORDER[i]) ? {} : { order }),
  };
}

/** --ddp, --overlap-grad-reduce and --dp-bucket-mb; the legacy -p strategies keep PyTorch DDP's buckets. */
function dataParallelRequest(opts: PlanCliOptions, legacy: boolean): Pick<PlanOptions, 'ddp' | 'overlapGradReduce' | 'dpBucketMiB'> {
  const ddp = (opts.ddp ?? (legacy ? 'torch' : 'megatron')) as 'megatron' | 'torch';
  if (ddp === 'torch' && opts.overlapGradReduce === true) throw new InputError(`--overlap-grad-reduce is Megatron-LM's DDP; PyTorch DDP (--ddp torch) always overlaps its buckets`);
  if (ddp === 'megatron' && opts.overlapGradReduce !== true && opts.dpBucketMb !== undefined) {
    throw new InputError(`--dp-bucket-mb ${opts.dpBucketMb}: Megatron-LM's DDP reduces one gradient buffer unless --overlap-grad-reduce; give that, or --ddp torch for PyTorch DDP's buckets`);
  }
  return { ddp, ...(opts.overlapGradReduce === true ? { overlapGradReduce: true } : {}), ...(opts.dpBucketMb !== undefined ? { dpBucketMiB: opts.dpBucketMb } : {}) };
}

/**
 * The gradients' reduction width: Megatron-LM's defaults and flags (plan/build.ts, `gradReduce`);
 * the legacy -p strategies reduce in the parameters' width, as ASTRA-sim's own workloads do.
 */
function gradReduceOf(opts: PlanCliOptions, legacy: boolean): PlanOptions['gradReduce'] {
  if (opts.gradReduceInBf16 === true && opts.accumulateAllreduceGradsInFp32 === true) throw new InputError(`--grad-reduce-in-bf16 and --accumulate-allreduce-grads-in-fp32 ask for two widths: give one`);
  if (opts.gradReduceInBf16 === true && opts.dtype !== 'bf16') throw new InputError(`--grad-reduce-in-bf16 applies to --dtype bf16 (the gradients are ${opts.dtype})`);
  if (opts.accumulateAllreduceGradsInFp32 === true) return 'fp32';
  if (opts.gradReduceInBf16 === true || legacy) return 'param';
  return 'megatron';
}

function readTpPlan(file: string): TpOverride[] {
  return parseTpPlan(file, readOptionFile('--tp-plan', file, MAX_TP_PLAN_BYTES));
}

/** Largest --tp-plan file (a plan naming every layer of GPT-3 is ~100 KiB). */
const MAX_TP_PLAN_BYTES = 1024 * 1024;

function readOptionFile(option: string, file: string, maxBytes?: number): string {
  return readRegularFile(file, `${option} ${shown(file)}`, 'the file', maxBytes);
}

export interface AnalysedRun {
  analysed: AnalysedModel;
  batch: BatchPlan;
  /** Whether the per-replica batch was defaulted (no --batch/--global-batch/--micro-batch). */
  batchDefaulted: boolean;
  /** Invariant (b) when the run is re-batched: every batch-dependent layer's MACs scale with it. */
  batchScaling?: BatchScalingHeld | undefined;
}

/**
 * Reads the model once to learn its exported batch and sequence dims, then analyses it at the
 * micro-batch it runs at (a static export re-batched if needed).
 */
export async function analyseForPlan(path: string, opts: PlanCliOptions, dp: number, lowering: { vectorOps: boolean } = { vectorOps: false }): Promise<AnalysedRun> {
  const { inferModel, analyseInferred } = await import('../pipeline.js');
  const { inferShapes } = await import('../shape/infer.js');
  const { bindingsFrom } = await import('./options.js');
  const bindings = bindingsFrom({ dim: opts.dim, input: opts.input });
  const dims = new Map(bindings.dims);
  const probe = inferModel(path, { ...bindings, dims });
  const { model, values, initializerNames } = probe.inferred;
  const inputs = model.graph.inputs.filter((i) => !initializerNames.has(i.name));
  // The declared shapes: a --dim binding is not the export's fixing the sequence length.
  if (opts.seq !== undefined) bindSequence(path, inputs.map((i) => ({ name: i.name, info: i.type.kind === 'tensor' ? i.type : undefined })), opts.seq, dims);
  const first = inputs[0];
  const lead = first === undefined ? undefined : values.get(first.name)?.shape?.[0];
  const exported = typeof lead === 'number' ? lead : 1;
  const batch = batchPlanOf({ batch: opts.batch, globalBatch: opts.globalBatch, microBatch: opts.microBatch, limits: opts.limits !== false }, dp, exported);
  // A --dim that binds the batch dim and a batch flag that sets another micro-batch: the flag would win unsaid.
  const declaredLead = first?.type.kind === 'tensor' ? first.type.shape?.[0] : undefined;
  const boundLead = declaredLead === undefined || typeof declaredLead === 'number' ? undefined : bindings.dims.get(declaredLead.toString());
  if (first !== undefined && boundLead !== undefined && boundLead !== batch.microBatch) {
    const by = opts.microBatch !== undefined ? `--micro-batch ${opts.microBatch}` : opts.batch !== undefined ? `--batch ${opts.batch}` : `--global-batch ${opts.globalBatch}`;
    throw new InputError(
      `--dim ${String(declaredLead)}=${boundLead} and ${by} conflict: the first binds the batch dim of input '${first.name}' to ${boundLead}, the second makes micro-batches of ${batch.microBatch}; give the micro-batch with --micro-batch alone`,
    );
  }
  const needsBatch = typeof lead !== 'number' || lead !== batch.microBatch;
  // The probe's shapes are the run's when neither the batch nor the sequence changed: lower them.
  const runBindings = { ...bindings, dims, ...(needsBatch ? { batch: batch.microBatch } : {}) };
  // Otherwise the shapes again at the run's bindings, from the model already read (the file is
  // decoded once; LoadedModel is immutable).
  const inferred = !needsBatch && opts.seq === undefined ? probe : { loaded: probe.loaded, inferred: inferShapes(probe.loaded, runBindings) };
  const analysed = analyseInferred(inferred, lowering);
  const batchScaling = (await import('../layers/batch-scaling.js')).batchScalingOf(analysed, runBindings);
  return { analysed, batch, batchDefaulted: opts.batch === undefined && opts.globalBatch === undefined && opts.microBatch === undefined, batchScaling };
}

/** --seq: the second dim of the token-id inputs (integer tensors [batch, sequence, ...]). */
export function bindSequence(path: string, inputs: { name: string; info: { dtype: number; shape?: readonly unknown[] | undefined } | undefined }[], seq: number, dims: Map<string, number>): void {
  const tokens = inputs.flatMap(({ name, info }) => {
    const shape = info?.shape;
    return info !== undefined && isIntegerDType(info.dtype) && shape !== undefined && shape.length >= 2 ? [{ name, sequence: shape[1] }] : [];
  });
  if (tokens.length === 0) throw new InputError(`${path}: --seq: the model has no integer [batch, sequence] input; bind its dims with --dim`);
  for (const { name, sequence: d } of tokens) {
    if (typeof d === 'number') {
      if (d !== seq) throw new InputError(`${path}: --seq ${seq}: input '${name}' has its sequence length fixed at ${d} by the export`);
    } else {
      const bound = dims.get(String(d));
      if (bound !== undefined && bound !== seq) throw new InputError(`--seq ${seq} and --dim ${String(d)}=${bound} conflict: both bind the sequence dim of input '${name}'; give one`);
      dims.set(String(d), seq);
    }
  }
}

/**
 * The warning of a pipeline that runs one micro-batch per step: its stages run one after another.
 * GPipe's and 1F1B's bubble is (P - 1) / (m + P - 1) of the step (Narayanan et al., SC'21), here
 * (P - 1) / P.
 */
export function pipelineBatchWarnings(world: WorldShape, batch: BatchPlan): string[] {
  const p = world.pp;
  if (p < 2 || batch.microBatches > 1) return [];
  const replicas = `${world.dp} replica${world.dp > 1 ? 's' : ''}`;
  return [
    `--pp ${p} with 1 micro-batch per step (global batch ${batch.globalBatch} over ${replicas}, micro-batch ${batch.microBatch}): ` +
      `the stages run one after another, a pipeline bubble of (P - 1) / (m + P - 1) = ${p - 1}/${p} = ${((100 * (p - 1)) / p).toFixed(1)}% of the step; ` +
      `set --micro-batch so that each replica runs ${p} or more micro-batches`,
  ];
}

/** The summary's word on invariant (b), when the run was re-batched. */
export function batchScalingNote(held: BatchScalingHeld | undefined): string {
  return held === undefined ? '' : ` (batch scaling checked: ${held.layers} layer${held.layers === 1 ? '' : 's'} x${held.batch / held.referenceBatch})`;
}
