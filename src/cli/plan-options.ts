/** The parallel-plan options of translate and inspect (resolved by plan-request.ts when a command runs). */
import { Option, type Command } from 'commander';
import { InputError } from '../errors.js';
import { positiveInt } from './options.js';

export interface PlanCliOptions {
  parallelism?: string;
  npus?: number;
  mpGroup?: number;
  tp?: number;
  dp?: number;
  pp?: number;
  sp?: boolean;
  zero?: string;
  globalBatch?: number;
  microBatch?: number;
  batch?: number;
  seq?: number;
  dpBucketMb?: number;
  tpPlan?: string;
  dtype: string;
  params: string;
  dim?: string[];
  input?: string[];
}

export function addPlanOptions(cmd: Command): Command {
  return cmd
    .option('--tp <T>', 'tensor-parallel ranks (Megatron-LM roles found in the graph)', positiveInt('--tp'))
    .option('--dp <D>', 'data-parallel replicas', positiveInt('--dp'))
    .option('--pp <P>', 'pipeline stages (1 for now)', positiveInt('--pp'))
    .option('--sp', 'sequence parallelism (with --tp): all-gather / reduce-scatter instead of all-reduce')
    .addOption(new Option('--zero <stage>', 'ZeRO stage: 0 plain data parallelism, 1 sharded optimizer state, 2 and gradients, 3 and parameters').choices(['0', '1', '2', '3']))
    .option('--global-batch <B>', 'samples per optimizer step over all replicas', positiveInt('--global-batch'))
    .option('--micro-batch <b>', 'samples per micro-batch per replica (B / (b x D) micro-batches per step)', positiveInt('--micro-batch'))
    .option('--seq <S>', "bind the model's symbolic sequence dim", positiveInt('--seq'))
    .option('--dp-bucket-mb <MiB>', 'data-parallel gradient bucket size, as PyTorch DDP bucket_cap_mb', (v) => {
      const n = Number(v);
      if (!(n > 0) || !Number.isFinite(n)) throw new InputError(`--dp-bucket-mb ${v}: expected a positive number`);
      return n;
    }, 25)
    .option('--tp-plan <file.json>', 'override tensor-parallel roles: { "LAYER-NAME-REGEX": "column|row|replicated" }');
}

