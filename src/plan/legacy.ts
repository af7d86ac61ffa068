/**
 * The legacy strategies of ASTRA-sim's text workloads (-p DATA | MODEL | HYBRID_*): a keyword
 * over P NPUs (G the model-parallel group of the hybrids) names a world of the parallel plan, in
 * one table (`LEGACY_STRATEGIES`); the plan then splits every layer (plan/shard.ts), and the text
 * format's per-layer table is flattened from it (schedule/layer-table.ts). The keyword itself only
 * tells ASTRA-sim 1.0 and `--chakra-dims` which network dimension each group runs on.
 */
import { InputError } from '../errors.js';
import type { CollectiveType, ParamsCounted, TrainingDType, WorldShape } from './types.js';

export const PARALLELISMS = ['DATA', 'MODEL', 'HYBRID_DATA_MODEL', 'HYBRID_MODEL_DATA'] as const;
export type Parallelism = (typeof PARALLELISMS)[number];

/**
 * Each keyword's world over P NPUs: DATA is D = P replicas, MODEL is T = P tensor-parallel shards,
 * the hybrids D = P / G replicas of T = G shards. `modelGroup`: the G the keyword implies (`all`:
 * P) or that it needs given (`given`).
 */
export const LEGACY_STRATEGIES: Readonly<Record<Parallelism, { modelGroup: 1 | 'all' | 'given' }>> = {
  DATA: { modelGroup: 1 },
  MODEL: { modelGroup: 'all' },
  HYBRID_DATA_MODEL: { modelGroup: 'given' },
  HYBRID_MODEL_DATA: { modelGroup: 'given' },
};

/** The legacy options a world is made of (`ParallelConfig` without the dtype and parameter count). */
export interface LegacyStrategy {
  parallelism: Parallelism;
  npus: number;
  /** G: given for HYBRID_*; DATA implies 1 and MODEL P (giving those is allowed). */
  mpGroup?: number | undefined;
}

/** The world of a legacy strategy (T = G, D = P / G, no pipeline); a one-line InputError naming the option otherwise. */
export function legacyWorld({ parallelism, npus, mpGroup }: LegacyStrategy): WorldShape {
  if (!Number.isSafeInteger(npus) || npus < 1) throw new InputError(`--npus must be a positive integer, got ${npus}`);
  const implied = LEGACY_STRATEGIES[parallelism].modelGroup;
  let g: number;
  if (implied === 'given') {
    if (mpGroup === undefined) throw new InputError(`-p ${parallelism} needs --mp-group G (the model-parallel group size)`);
    if (!Number.isSafeInteger(mpGroup) || mpGroup < 1 || npus % mpGroup !== 0) throw new InputError(`--mp-group ${mpGroup} must divide --npus ${npus} for ${parallelism}`);
    g = mpGroup;
  } else {
    g = implied === 'all' ? npus : implied;
    if (mpGroup !== undefined && mpGroup !== g) throw new InputError(`--mp-group ${mpGroup} does not apply to -p ${parallelism} (only to HYBRID_*)`);
  }
  return { tp: g, dp: npus / g, pp: 1 };
}

/** The keyword the text format writes for a plan's world: the first whose G is the world's T (DATA for T = 1, MODEL for D = 1). */
export function keywordOfWorld(world: WorldShape): Parallelism {
  const npus = world.tp * world.dp;
  const impliedG = (k: Parallelism): number => {
    const g = LEGACY_STRATEGIES[k].modelGroup;
    return g === 'given' ? world.tp : g === 'all' ? npus : g;
  };
  return PARALLELISMS.find((k) => impliedG(k) === world.tp) ?? 'DATA';
}

/** Which NPUs take part in a table collective: the model-parallel group, the data-parallel group, or all. */
export type CommGroup = 'model' | 'data' | 'all';

/** A collective of the legacy per-layer table (one per pass and layer). */
export interface Collective {
  type: CollectiveType;
  /** Per-NPU buffer size in bytes, as ASTRA-sim's comm_size (see README). */
  bytes: number;
  group: CommGroup;
}

export const NO_COLLECTIVE: Collective = { type: 'NONE', bytes: 0, group: 'all' };

/** A legacy strategy as the library's `workloadOf` takes it. */
export interface ParallelConfig extends LegacyStrategy {
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
