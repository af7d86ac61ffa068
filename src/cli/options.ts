/** Options shared by several commands, parsed into the pipeline's typed configuration. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { COST_MODELS, DEFAULT_PROFILE_NAME, OPTIMIZER_TRAFFIC_FACTOR, type CostModelKind, type Optimizer } from '../cost/choices.js';
import type { BandwidthMode, HardwareProfile } from '../cost/types.js';
import { InputError, shown } from '../errors.js';
import { parseDimOptions, parseInputOptions, type DimBindings } from '../shape/bind.js';
import { legacyWorld, PARALLELISMS, type ParallelConfig, type Parallelism } from '../plan/legacy.js';
import { DTYPE_BYTES, type ParamsCounted, type TrainingDType } from '../plan/types.js';
import { writeStderr } from './stdio.js';

/**
 * Lets every option with fixed choices (`-p DATA`, `--format csv`, ...) take them in any case:
 * `-p data` means `-p DATA`. Applied once to the whole program, so new options get it too.
 */
export function acceptChoicesInAnyCase(cmd: Command): void {
  for (const option of cmd.options) {
    const choices = option.argChoices;
    if (choices === undefined) continue;
    option.argParser((value: string) => {
      const match = choices.includes(value) ? value : choices.find((c) => c.toLowerCase() === value.toLowerCase());
      if (match === undefined) throw new InvalidArgumentError(`Allowed choices are ${choices.join(', ')}.`);
      return match;
    });
  }
  for (const sub of cmd.commands) acceptChoicesInAnyCase(sub);
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** A parser of a positive integer option; with `max`, larger values are refused naming the limit. */
export function positiveInt(flag: string, max?: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n <= 0) throw new InputError(`${flag} ${shown(value)}: expected a positive integer`);
    if (max !== undefined && n > max) throw new InputError(`${flag} ${value}: more than the limit of ${max.toLocaleString('en-US')}`);
    return n;
  };
}

/** --memory-limit GiB (translate and memory): a positive number. */
export function memoryLimitGiB(value: string): number {
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new InputError(`--memory-limit ${value}: expected a positive number of GiB`);
  return n;
}

export function addShapeOptions(cmd: Command): Command {
  return cmd
    .option('--dim <name=N>', "bind a symbolic input dim (repeatable); unnamed dims are INPUT.AXIS (x.1), run-time sizes '?Op:value'", collect)
    .option('--batch <N>', 'set the leading dim of every graph input', positiveInt('--batch'))
    .option('--input <name=value>', 'give a graph input\'s value, a number or a list such as [1,2,3] (repeatable): If conditions and shape computations that read it fold', collect);
}

export function bindingsFrom(opts: { dim?: string[]; batch?: number; input?: string[] }): DimBindings {
  return { dims: parseDimOptions(opts.dim ?? []), batch: opts.batch, inputs: parseInputOptions(opts.input ?? []) };
}

export function addHardwareOptions(cmd: Command): Command {
  return addCostModelOptions(cmd.option('--hardware <name|file>', 'hardware profile: a name from hardware-profiles/, a .json file or a SCALE-sim .cfg', DEFAULT_PROFILE_NAME));
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

/** `--hardware NAME|FILE`, with the profile's warnings (implausible values) shown on stderr. */
export async function loadProfile(nameOrPath: string): Promise<HardwareProfile> {
  const { loadHardwareProfile } = await import('../cost/hardware.js');
  const warnings: string[] = [];
  const profile = await loadHardwareProfile(nameOrPath, warnings);
  for (const line of warnings) writeStderr(`modtrans: warning: ${line}\n`);
  return profile;
}

/** The profile as the options want it (`--bandwidth-mode` overrides the file's mode). */
export function withCostOptions(profile: HardwareProfile, opts: CostModelChoice): HardwareProfile {
  return opts.bandwidthMode === undefined ? profile : { ...profile, bandwidthMode: opts.bandwidthMode };
}

/** The legacy strategy options; the plan options (--tp, --dp, ...) are in plan-options.ts. */
export function addParallelOptions(cmd: Command): Command {
  return cmd
    .option('-p, --parallelism <strategy>', `legacy strategy: ${PARALLELISMS.join(', ')} (any case; default DATA when no --tp/--dp is given)`)
    .option('--npus <P>', 'number of NPUs (default 8 with -p; with --tp/--dp it must equal T x D x P)', positiveInt('--npus'))
    .option('--mp-group <G>', 'model-parallel group size (HYBRID_* strategies)', positiveInt('--mp-group'))
    .addOption(new Option('--dtype <type>', 'training dtype: bytes per element of activations, gradients and parameters communicated').choices(Object.keys(DTYPE_BYTES)).default('fp32'))
    .addOption(new Option('--params <which>', 'count biases in weight-gradient collectives (all) or weights only').choices(['all', 'weights']).default('all'));
}

/** The legacy options as a `ParallelConfig`; G is the world's (plan/legacy.ts, which checks the options). */
export function parallelConfigFrom(opts: { parallelism: string; npus: number; mpGroup?: number; dtype: string; params: string }): ParallelConfig {
  const parallelism = opts.parallelism as Parallelism;
  const world = legacyWorld({ parallelism, npus: opts.npus, mpGroup: opts.mpGroup });
  return { parallelism, npus: opts.npus, mpGroup: world.tp, dtype: opts.dtype as TrainingDType, params: opts.params as ParamsCounted };
}
