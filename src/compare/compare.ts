/**
 * The comparison stage: one analysed model costed on several hardware profiles, side by side.
 * Each layer runs on one NPU of each profile — whole (as `inspect` shows it), or the NPU's share
 * under a parallel split — the forward, input-gradient and weight-gradient passes in cycles,
 * converted to ns with that profile's own clock, so profiles with different clocks compare by
 * time, never by cycles.
 */
import { costLayerPasses } from '../cost/training.js';
import { processingElementsOf } from '../cost/multicore.js';
import type { CostModel, GemmCost } from '../cost/types.js';
import { at } from '../errors.js';
import type { Layer, LayerPasses } from '../layers/types.js';
import { passWork } from '../schedule/cost.js';
import type { Split } from '../plan/legacy.js';

/** What one NPU runs of a layer: its GEMMs per pass and the share of the layer's parameters it updates. */
export interface LayerShareView {
  passes: LayerPasses;
  paramFraction: number;
}

const PASSES = ['fwd', 'ig', 'wg'] as const;
export type PassName = (typeof PASSES)[number];

export interface PassFigures {
  cycles: number;
  stallCycles: number;
  /** cycles x 1000 / clock MHz, unrounded. */
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
  return { cycles: cost.cycles, stallCycles: cost.stallCycles, ns: (cost.cycles * 1000) / clockMHz };
}

function figures(passes: Record<PassName, PassFigures>, macs: number, pes: number, updateCycles: number): ProfileFigures {
  const totalCycles = PASSES.reduce((a, p) => a + passes[p].cycles, 0);
  const stallCycles = PASSES.reduce((a, p) => a + passes[p].stallCycles, 0);
  return {
    ...passes,
    totalCycles,
    totalNs: PASSES.reduce((a, p) => a + passes[p].ns, 0),
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


/** MACs of the three passes one NPU runs. */
const trainingMacs = (passes: LayerPasses): number => passWork(passes.fwd, 1).macs + passWork(passes.ig, 1).macs + passWork(passes.wg, 1).macs;

const wholeLayer = (layer: Layer): LayerShareView => ({ passes: layer.passes, paramFraction: 1 });

/** One layer on one NPU of a profile: the whole layer, or its share under a parallel plan. */
function layerOnProfile(layer: Layer, model: CostModel, share: LayerShareView): ProfileFigures {
  const paramBytes = (layer.weightBytes + layer.biasBytes) * share.paramFraction;
  const cost = costLayerPasses(share.passes, paramBytes, model);
  const { clockMHz } = model.profile;
  const passes = { fwd: passFigures(cost.fwd, clockMHz), ig: passFigures(cost.ig, clockMHz), wg: passFigures(cost.wg, clockMHz) };
  return figures(passes, trainingMacs(share.passes), processingElementsOf(model.profile), cost.updateCycles);
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
 * `shares` (from the parallel plan, the same one translate costs) give each layer's per-NPU
 * GEMMs; without them every layer runs whole.
 */
export function compareProfiles(modelName: string, layers: readonly Layer[], models: readonly CostModel[], split: Split = WHOLE, shares?: readonly LayerShareView[]): Comparison {
  const shareAt = (i: number): LayerShareView => shares?.[i] ?? wholeLayer(at(layers, i));
  const names = uniqueNames(models.map((m) => m.profile.name));
  const profiles = models.map((m, i): ProfileInfo => ({
    name: at(names, i),
    costModel: m.name,
    clockMHz: m.profile.clockMHz,
    processingElements: processingElementsOf(m.profile),
  }));
  const nameAt = (i: number): string => (i < 0 ? '' : at(profiles, i).name);
  const rows = layers.map((layer, i): LayerComparison => {
    const perProfile = models.map((m) => layerOnProfile(layer, m, shareAt(i)));
    return { name: layer.name, op: layer.op, macs: layer.macs, perProfile, winner: nameAt(fastest(perProfile.map((f) => f.totalNs))) };
  });
  const macs = layers.reduce((a, _, i) => a + trainingMacs(shareAt(i).passes), 0);
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
