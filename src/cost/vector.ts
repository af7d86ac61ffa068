/**
 * Non-GEMM work (norms, softmax, activations, element-wise ops, pooling, reductions) on the
 * vector unit, as a roofline: a pass takes
 *   max(ceil(elements x ops per element / vectorLanes), ceil(bytes moved / vectorBytesPerCycle))
 * cycles. Ops per element come from a per-class table (README, "Non-GEMM work"); a profile may
 * override it with `vectorOpsPerElement`.
 */
import type { VectorOpClass } from '../ir/op-class.js';
import type { VectorWork } from '../layers/types.js';
import type { GemmCost, HardwareProfile, TrainingPass } from './types.js';

/** Vector-unit operations per element of each pass. */
export interface VectorOpsPerElement {
  fwd: number;
  /** The input gradient. */
  bwd: number;
  /** The parameter gradient, for layers with parameters. */
  wg: number;
}

/**
 * Ops per element. fwd: element-wise 1; transcendental functions (exp, erf, tanh, sigmoid, sqrt,
 * pow...) ~4 (a range reduction and a short polynomial); GELU ~8 (erf or tanh form: a
 * transcendental plus 4 multiply/adds); softmax 5 (max, subtract, exp counted as 1 on a unit with
 * an exp instruction, sum, divide); LayerNorm/RMSNorm 8 (mean, subtract, square, sum, rsqrt,
 * normalise, scale, shift); pooling and reductions 1 per element read.
 * bwd (input gradient): element-wise 1 (pass-through or one multiply); transcendental 5 (the
 * derivative, then the product with dY); GELU 12 (1.5x: Phi(x) + x phi(x) needs erf and exp);
 * softmax 4 (dX = y (dY - sum(dY y)): multiply, sum, subtract, multiply); LayerNorm 12 (two row
 * sums of dY and dY x-hat, then a 4-term combination: 1.5x forward); pool and reduce 1 (scatter or
 * broadcast of dY). wg (only with parameters): 2 (dScale += dY x-hat, dShift += dY).
 */
export const VECTOR_OPS_PER_ELEMENT: Readonly<Record<VectorOpClass, VectorOpsPerElement>> = {
  elementwise: { fwd: 1, bwd: 1, wg: 2 },
  transcendental: { fwd: 4, bwd: 5, wg: 2 },
  gelu: { fwd: 8, bwd: 12, wg: 2 },
  softmax: { fwd: 5, bwd: 4, wg: 2 },
  layernorm: { fwd: 8, bwd: 12, wg: 2 },
  pool: { fwd: 1, bwd: 1, wg: 2 },
  reduce: { fwd: 1, bwd: 1, wg: 2 },
};

/** Bytes a vector unit moves per lane and cycle by default: two fp32 operands read, one written. */
export const DEFAULT_VECTOR_BYTES_PER_LANE = 12;

export interface VectorUnit {
  /** Element operations per cycle. */
  lanes: number;
  /** Bytes per cycle between the vector unit and on-chip memory. */
  bytesPerCycle: number;
  opsPerElement: Readonly<Record<VectorOpClass, VectorOpsPerElement>>;
}

/**
 * The profile's vector unit (on a multi-core profile, `vectorLanes` and `vectorBytesPerCycle` are
 * per core: the unit here is all cores'). Defaults for profiles without the keys (SCALE-sim .cfg files, user
 * JSON files): one lane per array column of every array (TPU v1's activation unit takes one row of
 * the 256 accumulators per cycle) and DEFAULT_VECTOR_BYTES_PER_LANE bytes per lane and cycle.
 */
export function vectorUnitOf(profile: HardwareProfile): VectorUnit {
  const lanesPerCore = profile.vectorLanes ?? profile.arrayCols * profile.arrays;
  const bytesPerCore = profile.vectorBytesPerCycle ?? DEFAULT_VECTOR_BYTES_PER_LANE * lanesPerCore;
  const cores = profile.cores ?? 1;
  const lanes = lanesPerCore * cores;
  // Every core's unit together. On a chip with an L2 (a GPU) each kernel streams its tensors from
  // HBM, so the HBM bandwidth caps them; without one (a TPU chip) they stay in the cores' memories,
  // as on a single-core profile (docs/scalesim-model.md §11).
  const hbmBytesPerCycle = profile.dramBandwidthWordsPerCycle * profile.elementBytes;
  const bytesPerCycle = cores > 1 && profile.l2Bytes !== undefined ? Math.min(bytesPerCore * cores, hbmBytesPerCycle) : bytesPerCore * cores;
  return {
    lanes,
    bytesPerCycle,
    // Most profiles keep the default table: sharing it spares a merged copy per call.
    opsPerElement: profile.vectorOpsPerElement === undefined ? VECTOR_OPS_PER_ELEMENT : { ...VECTOR_OPS_PER_ELEMENT, ...profile.vectorOpsPerElement },
  };
}

/** Bytes a pass moves: fwd reads its inputs and writes its output; bwd reads dY and the saved inputs and writes dX; wg reads dY and the saved input. */
export function vectorPassBytes(work: VectorWork, pass: TrainingPass): number {
  if (pass === 'fwd') return work.bytesIn + work.bytesOut;
  if (pass === 'ig') return work.bytesOut + 2 * work.bytesIn;
  return work.hasParams ? work.bytesIn + work.bytesOut : 0;
}

/** Element operations of a pass (0 for wg without parameters). */
export function vectorPassOps(work: VectorWork, pass: TrainingPass, unit: VectorUnit): number {
  const table = unit.opsPerElement[work.opClass];
  const perElement = pass === 'fwd' ? table.fwd : pass === 'ig' ? table.bwd : work.hasParams ? table.wg : 0;
  return work.elements * perElement;
}

/**
 * Roofline cycles of one pass. `stallCycles` is the memory-bound excess over the compute time;
 * the systolic array is idle, so its utilisation figures are 0.
 */
export function costVectorPass(work: VectorWork, pass: TrainingPass, profile: HardwareProfile, unit: VectorUnit = vectorUnitOf(profile)): GemmCost {
  const ops = vectorPassOps(work, pass, unit);
  if (!(ops > 0)) return { cycles: 0, stallCycles: 0, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 };
  const computeCycles = Math.ceil(ops / unit.lanes);
  const memoryCycles = Math.ceil(vectorPassBytes(work, pass) / unit.bytesPerCycle);
  const cycles = Math.max(computeCycles, memoryCycles);
  return { cycles, stallCycles: cycles - computeCycles, overallUtilPct: 0, mappingEfficiencyPct: 0, computeUtilPct: 0 };
}
