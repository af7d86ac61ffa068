/**
 * The comparison stage: one analysed model costed on several hardware profiles, side by side.
 * Each layer runs on one NPU of each profile — whole (as `inspect` shows it), or the NPU's share
 * under a parallel split, as the costed plan of each profile has it — the forward, input-gradient and weight-gradient passes in cycles,
 * converted to ns with that profile's own clock, so profiles with different clocks compare by
 * time, never by cycles.
 */
import type { GemmCost } from '../cost/types.js';
import type { CostedPlan } from '../costed/costed-plan.js';
import { processingElementsOf } from '../cost/multicore.js';
import { at } from '../errors.js';
import { sumOverPasses } from '../passes.js';
import type { Split } from '../plan/legacy.js';
import { cyclesToNs } from '../units.js';

const PASSES = ['fwd', 'ig', 'wg'] as const;
export type PassName = (typeof PASSES)[number];

export interface PassFigures {
  cycles: number;
  stallCycles: number;
  /** Exact ns, unrounded (src/units.ts cyclesToNs): the figures are summed and set side by side. */
  ns: number;
}

/** One layer (or the whole model) on one profile. */
export interface ProfileFigures {
  fwd: PassFigures;
  ig: PassFigures;
  wg: PassFigures;
  totalCycles: number;
  totalNs: number;
  /** 100 x MACs of the three passes / (cycles x PEs): SCALE-sim's overall utilisation. */
  utilPct: number;
  /** Share of the cycles spent stalled on DRAM, in percent. */
  stallSharePct: number;
  /** Optimizer step for the layer's parameters (not part of totalNs). */
  updateCycles: number;
}

export interface ProfileInfo {
  name: string;
  costModel: string;
  clockMHz: number;
  processingElements: number;
}

export interface LayerComparison {
  name: string;
  op: string;
  macs: number;
  /** In the order of `Comparison.profiles`. */
  perProfile: ProfileFigures[];
  /** Name of the profile with the shortest time (first one on ties); '' when all take 0. */
  winner: string;
}

export interface Comparison {
  model: string;
  /** How the layers were split over NPUs; each figure is one NPU's (D = 1, G = 1: whole layers). */
  split: Split;
  profiles: ProfileInfo[];
  layers: LayerComparison[];
  totals: ProfileFigures[];
  winner: string;
  /** Total time of each profile over the fastest one's (1 = fastest). */
  slowdown: number[];
}

function passFigures(cost: GemmCost, clockMHz: number): PassFigures {
  return { cycles: cost.cycles, stallCycles: cost.stallCycles, ns: cyclesToNs(cost.cycles, clockMHz) };
}

function figures(passes: Record<PassName, PassFigures>, macs: number, pes: number, updateCycles: number): ProfileFigures {
  const totalCycles = sumOverPasses(passes, (p) => p.cycles);
  const stallCycles = sumOverPasses(passes, (p) => p.stallCycles);
  return {
    ...passes,
    totalCycles,
    totalNs: sumOverPasses(passes, (p) => p.ns),
    utilPct: totalCycles > 0 ? (100 * macs) / (totalCycles * pes) : 0,
    stallSharePct: totalCycles > 0 ? (100 * stallCycles) / totalCycles : 0,
    updateCycles,
  };
}

const WHOLE: Split = { dataWays: 1, modelWays: 1 };

/** "one NPU" or "one NPU's share (4 data x 2 model ways)", for titles. */
export function describeSplit(split: Split): string {
  if (split.dataWays === 1 && split.modelWays === 1) return 'one NPU';
  return `one NPU's share (${split.dataWays} data x ${split.modelWays} model ways)`;
}

/** MACs of the three passes one NPU runs of layer `i`. */
const trainingMacs = (costed: CostedPlan, i: number): number => sumOverPasses(at(costed.layers, i), (p) => p.macs);

/** Every core's processing elements (a GPU profile's cores x arrays x rows x cols). */
const processingElements = (c: CostedPlan): number => processingElementsOf(c.profile);

/** Layer `i` on one NPU of a profile: its share under the plan (the whole layer on one NPU). */
function layerOnProfile(costed: CostedPlan, i: number): ProfileFigures {
  const c = at(costed.layers, i);
  const { clockMHz } = costed;
  const passes = { fwd: passFigures(c.fwd.cost, clockMHz), ig: passFigures(c.ig.cost, clockMHz), wg: passFigures(c.wg.cost, clockMHz) };
  return figures(passes, trainingMacs(costed, i), processingElements(costed), at(costed.shareUpdateCycles, i));
}

function sumFigures(rows: readonly ProfileFigures[], macs: number, pes: number): ProfileFigures {
  const pass = (p: PassName): PassFigures => ({
    cycles: rows.reduce((a, r) => a + r[p].cycles, 0),
    stallCycles: rows.reduce((a, r) => a + r[p].stallCycles, 0),
    ns: rows.reduce((a, r) => a + r[p].ns, 0),
  });
  const update = rows.reduce((a, r) => a + r.updateCycles, 0);
  return figures({ fwd: pass('fwd'), ig: pass('ig'), wg: pass('wg') }, macs, pes, update);
}

/** Index of the smallest value (first on ties), or -1 when every value is 0. */
function fastest(times: readonly number[]): number {
  if (times.every((t) => t === 0)) return -1;
  return times.reduce((best, t, i) => (t < at(times, best) ? i : best), 0);
}

/**
 * One plan (the one translate costs; one NPU: whole layers) costed on each profile: `costed` has
 * a costed plan per profile, all of the same plan.
 */
export function compareProfiles(modelName: string, costed: readonly CostedPlan[], split: Split = WHOLE): Comparison {
  const names = uniqueNames(costed.map((c) => c.profile.name));
  const profiles = costed.map((c, i): ProfileInfo => ({
    name: at(names, i),
    costModel: c.costModel,
    clockMHz: c.clockMHz,
    processingElements: processingElements(c),
  }));
  const nameAt = (i: number): string => (i < 0 ? '' : at(profiles, i).name);
  const first = at(costed, 0);
  const rows = first.modelLayers.map((layer, i): LayerComparison => {
    const perProfile = costed.map((c) => layerOnProfile(c, i));
    return { name: layer.name, op: layer.op, macs: layer.macs, perProfile, winner: nameAt(fastest(perProfile.map((f) => f.totalNs))) };
  });
  const macs = first.modelLayers.reduce((a, _, i) => a + trainingMacs(first, i), 0);
  const totals = profiles.map((p, i) => sumFigures(rows.map((r) => at(r.perProfile, i)), macs, p.processingElements));
  const best = fastest(totals.map((t) => t.totalNs));
  const bestNs = best < 0 ? 0 : at(totals, best).totalNs;
  return {
    model: modelName,
    split,
    profiles,
    layers: rows,
    totals,
    winner: nameAt(best),
    slowdown: totals.map((t) => (bestNs > 0 ? t.totalNs / bestNs : 1)),
  };
}

/**
 * Unique profile names: a duplicate (two files both named "x") gets "#2", "#3"..., skipping
 * suffixed names already taken (a profile literally named "x#2").
 */
export function uniqueNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((name) => {
    let unique = name;
    for (let k = 2; taken.has(unique); k++) unique = `${name}#${k}`;
    taken.add(unique);
    return unique;
  });
}
