/** The parallel-plan options of translate and inspect (resolved by plan-request.ts when a command runs). */
import { Option, type Command } from 'commander';
import { InputError } from '../errors.js';
import { positiveInt } from './options.js';
import { PIPELINE_SCHEDULES, RECOMPUTE_MODES } from '../plan/types.js';
import { AXES, AXIS_NAMES, DEFAULT_AXIS_ORDER, EXPERT_TP } from '../plan/axes.js';

export interface PlanCliOptions {
  parallelism?: string;
  npus?: number;
  mpGroup?: number;
  tp?: number;
  cp?: number;
  ep?: number;
  etp?: number;
  dp?: number;
  pp?: number;
  order?: string;
  cpCommType?: string;
  sp?: boolean;
  zero?: string;
  globalBatch?: number;
  microBatch?: number;
  batch?: number;
  seq?: number;
  dpBucketMb?: number;
  ddp?: string;
  overlapGradReduce?: boolean;
  tpPlan?: string;
  ppStages?: string;
  ppSchedule?: string;
  ppSplit?: string;
  vpp?: number;
  recompute?: string;
  moeTopk?: number;
  /** false with --no-limits. */
  limits?: boolean;
  moeCapacityFactor?: number;
  makeVocabSizeDivisibleBy?: number;
  decoderFirstPipelineNumLayers?: number;
  decoderLastPipelineNumLayers?: number;
  gradReduceInBf16?: boolean;
  accumulateAllreduceGradsInFp32?: boolean;
  dtype: string;
  params: string;
  dim?: string[];
  input?: string[];
}

export function addPlanOptions(cmd: Command): Command {
  // One flag per parallel axis, from the axis table (plan/axes.ts), in Megatron's order.
  for (const name of AXIS_NAMES) {
    const axis = AXES[name];
    cmd.option(`${axis.flag} <${name.toUpperCase()}>`, axis.help, positiveInt(axis.flag));
  }
  return cmd
    .option(`${EXPERT_TP.flag} <ETP>`, EXPERT_TP.help, positiveInt(EXPERT_TP.flag))
    .option('--order <axes>', `the axes' rank order, first fastest, as Megatron-LM's (default ${DEFAULT_AXIS_ORDER.join('-')})`)
    .addOption(new Option('--cp-comm-type <kind>', "context parallelism's K/V exchange, as TransformerEngine: p2p (a ring of C - 1 send/recv steps; default) or a2a (Ulysses all-to-alls around the attention core)").choices(['p2p', 'a2a']))
    .option('--pp-stages <file.json>', 'pipeline stages by hand: an array of P (x V) arrays of layer names, in model order')
    .option('--decoder-first-pipeline-num-layers <N>', "Megatron-LM's flag: the first pipeline stage holds N transformer blocks, the stages without such a flag the rest evenly", positiveInt('--decoder-first-pipeline-num-layers'))
    .option('--decoder-last-pipeline-num-layers <N>', "Megatron-LM's flag: the last pipeline stage holds N transformer blocks", positiveInt('--decoder-last-pipeline-num-layers'))
    .addOption(new Option('--pp-split <how>', "pipeline cut of a transformer: even (the same number of blocks per stage, as Megatron-LM; default) or balanced (cuts minimising the slowest stage's costed time)").choices(['even', 'balanced']))
    .addOption(new Option('--pp-schedule <kind>', 'pipeline schedule, as Megatron-LM: 1f1b, gpipe, interleaved (1F1B over --vpp chunks per rank)').choices([...PIPELINE_SCHEDULES]))
    .option('--vpp <V>', 'model chunks per rank for --pp-schedule interleaved (default 2)', positiveInt('--vpp'))
    .addOption(new Option('--recompute <mode>', 'activation recomputation, as Megatron-LM: none, selective (attention core), full (every transformer layer)').choices([...RECOMPUTE_MODES]))
    .option('--sp', 'sequence parallelism (with --tp): all-gather / reduce-scatter instead of all-reduce')
    .addOption(new Option('--zero <stage>', 'ZeRO stage: 0 plain data parallelism, 1 sharded optimizer state, 2 and gradients, 3 and parameters').choices(['0', '1', '2', '3']))
    .option('--global-batch <B>', 'samples per optimizer step over all replicas', positiveInt('--global-batch'))
    .option('--micro-batch <b>', 'samples per micro-batch per replica (B / (b x D) micro-batches per step)', positiveInt('--micro-batch'))
    .option('--seq <S>', "bind the model's symbolic sequence dim", positiveInt('--seq'))
    .addOption(new Option('--ddp <impl>', "data parallelism: megatron (one gradient buffer reduced after the pipeline schedule, as Megatron-LM's DDP; buckets with --overlap-grad-reduce) or torch (PyTorch DDP's buckets, reduced during the last backward)").choices(['megatron', 'torch']))
    .option('--overlap-grad-reduce', "Megatron-LM's flag: reduce gradient buckets of max(40 M, 1 M x D x C) elements as backward fills them (first pipeline stage; one buffer after it)")
    .option('--dp-bucket-mb <MiB>', 'data-parallel gradient bucket size: PyTorch DDP bucket_cap_mb with --ddp torch (default 25), the bucket size with --overlap-grad-reduce', (v) => {
      const n = Number(v);
      if (!(n > 0) || !Number.isFinite(n)) throw new InputError(`--dp-bucket-mb ${v}: expected a positive number`);
      return n;
    })
    .option('--grad-reduce-in-bf16', "Megatron-LM's flag: reduce bf16 training's gradients in bf16 (default: in fp32, as Megatron does)")
    .option('--accumulate-allreduce-grads-in-fp32', "Megatron-LM's flag: reduce fp16 training's gradients in fp32 (default: in fp16)")
    .option('--tp-plan <file.json>', 'override tensor-parallel roles: { "LAYER-NAME-GLOB": "column|row|replicated" } (globs: * any characters, ? one)')
    .option('--no-limits', 'lift the bounds on world size, micro-batches, iterations and trace size (README, "Limits")')
    .option('--make-vocab-size-divisible-by <N>', "Megatron-LM's flag: pad the vocabulary of the word embedding and the LM head to a multiple of N x T (default 128, as Megatron; 1: a multiple of T)", positiveInt('--make-vocab-size-divisible-by'))
    .option('--moe-topk <k>', "mixture of experts: experts per token (default: the graph's TopK constant)", positiveInt('--moe-topk'))
    .option('--moe-capacity-factor <f>', 'mixture of experts: tokens an expert runs on, as a multiple of the uniform share top-k / experts (default 1)', (v) => {
      const n = Number(v);
      if (!(n > 0) || !Number.isFinite(n)) throw new InputError(`--moe-capacity-factor ${v}: expected a positive number`);
      return n;
    });
}

