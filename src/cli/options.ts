/** Options shared by several commands, parsed into the pipeline's typed configuration. */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Option, type Command } from 'commander';
import { COST_MODELS, OPTIMIZER_TRAFFIC_FACTOR, type CostModelKind, type Optimizer } from '../cost/choices.js';
import type { BandwidthMode, HardwareProfile } from '../cost/types.js';
import { InputError } from '../errors.js';
import { parseDimOptions, type DimBindings } from '../shape/bind.js';
import { DTYPE_BYTES, PARALLELISMS, type ParallelConfig, type Parallelism, type TrainingDType } from '../workload/types.js';

/** The repository's `examples/` folder (found from src/cli or dist/src/cli). */
export function examplesDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'examples');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

/** MODEL is a path, or the name of a model shipped in examples/ ("resnet50"). */
export function resolveModelPath(model: string): string {
  if (existsSync(model)) return model;
  const examples = examplesDir();
  if (examples !== undefined && !model.includes('/')) {
    const candidate = join(examples, model.endsWith('.onnx') ? model : `${model}.onnx`);
    if (existsSync(candidate)) return candidate;
  }
  const shipped = examples === undefined ? [] : readdirSync(examples).filter((f) => f.endsWith('.onnx')).map((f) => f.replace(/\.onnx$/, ''));
  throw new InputError(`${model}: no such file${shipped.length > 0 ? ` (shipped models: ${shipped.join(', ')})` : ''}`);
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

export function positiveInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n <= 0) throw new InputError(`${flag} ${value}: expected a positive integer`);
    return n;
  };
}

export function addShapeOptions(cmd: Command): Command {
  return cmd
    .option('--dim <name=N>', 'bind a symbolic input dim (repeatable)', collect)
    .option('--batch <N>', 'set the leading dim of every graph input', positiveInt('--batch'));
}

export function bindingsFrom(opts: { dim?: string[]; batch?: number }): DimBindings {
  return { dims: parseDimOptions(opts.dim ?? []), batch: opts.batch };
}

export function addHardwareOptions(cmd: Command): Command {
  return addCostModelOptions(cmd.option('--hardware <name|file>', 'hardware profile: a name from hardware-profiles/, a .json file or a SCALE-sim .cfg', 'tpu-256'));
}

export function addCostModelOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--cost-model <model>', 'scalesim: SCALE-sim-exact cycles and stalls; ideal: ceil(MACs / PEs)').choices([...COST_MODELS]).default('scalesim'))
    .addOption(new Option('--optimizer <name>', 'optimizer step behind the weight-update time').choices(Object.keys(OPTIMIZER_TRAFFIC_FACTOR)).default('sgd'))
    .addOption(new Option('--bandwidth-mode <mode>', "override the profile's DRAM model: calc (reads never stall) or user (bandwidth-limited, with stalls)").choices(['calc', 'user']))
    .addOption(new Option('--vector-ops <on|off>', 'cost non-GEMM work (norms, softmax, activations, element-wise ops, pooling) on the vector unit as layers of its own; off: GEMM layers only').choices(['on', 'off']).default('on'));
}

export interface CostModelChoice {
  costModel?: CostModelKind;
  optimizer?: Optimizer;
  bandwidthMode?: BandwidthMode;
  /** 'on' (the command-line default) adds vector layers; absent means off, as for the library. */
  vectorOps?: 'on' | 'off';
}

/** Lowering options of `--vector-ops`. */
export function loweringFrom(opts: CostModelChoice): { vectorOps: boolean } {
  return { vectorOps: opts.vectorOps === 'on' };
}

/** The profile as the options want it (`--bandwidth-mode` overrides the file's mode). */
export function withCostOptions(profile: HardwareProfile, opts: CostModelChoice): HardwareProfile {
  return opts.bandwidthMode === undefined ? profile : { ...profile, bandwidthMode: opts.bandwidthMode };
}

export function addParallelOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('-p, --parallelism <strategy>', 'parallelism strategy').choices([...PARALLELISMS]).default('DATA'))
    .option('--npus <P>', 'number of NPUs', positiveInt('--npus'), 8)
    .option('--mp-group <G>', 'model-parallel group size (hybrid strategies)', positiveInt('--mp-group'))
    .addOption(new Option('--dtype <type>', 'training dtype: bytes per element of communicated tensors').choices(Object.keys(DTYPE_BYTES)).default('fp32'))
    .addOption(new Option('--params <which>', 'count biases in weight-gradient collectives (all) or weights only').choices(['all', 'weights']).default('all'));
}

export function parallelConfigFrom(opts: { parallelism: string; npus: number; mpGroup?: number; dtype: string; params: string }): ParallelConfig {
  const parallelism = opts.parallelism as Parallelism;
  if (parallelism.startsWith('HYBRID') && opts.mpGroup === undefined) {
    throw new InputError(`-p ${parallelism} needs --mp-group G (the model-parallel group size)`);
  }
  return {
    parallelism,
    npus: opts.npus,
    mpGroup: opts.mpGroup ?? (parallelism === 'MODEL' ? opts.npus : 1),
    dtype: opts.dtype as TrainingDType,
    params: opts.params as 'all' | 'weights',
  };
}
