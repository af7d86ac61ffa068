/**
 * A simulated step's report: ASTRA-sim's per-rank finish times (cluster/astra-log.ts) and the
 * plan -> step time, TFLOP/s per device by Megatron-LM's FLOP count, MFU, exposed communication
 * and the pipeline bubble.
 */
import { peakFlopsPerSecond } from '../cost/multicore.js';
import type { HardwareProfile } from '../cost/types.js';
import type { ParallelPlan } from '../plan/types.js';
import { worldSize } from '../plan/world.js';
import type { RankFinish } from './astra-log.js';

/**
 * Floating-point operations of one global batch as Megatron-LM counts them
 * (`num_floating_point_operations`, megatron/training/training.py:802; the factors at 1065-1067,
 * the sum at 1255-1309): 3 (forward, weight and data gradient) x 2 (a multiply-add) x every weight GEMM's
 * forward multiply-adds (QKV and output projections, MLP, logits), plus the attention core
 * (scores and context products) halved for the causal mask (training.py:1168), the logits over
 * the padded vocabulary (training.py:1302). Recomputed
 * work is not counted (the formula has no recomputation term). From the plan's layers, whose
 * MACs are one micro-batch's on one replica (the batch shapes are inferred at).
 */
export function megatronFlopsPerStep(plan: ParallelPlan): number {
  let weightMacs = 0;
  let coreMacs = 0;
  const routed = routedShares(plan);
  plan.layers.forEach((lp, i) => {
    const layer = lp.layer;
    if (layer.kind === 'vector') return;
    const part = plan.structure.parts[i];
    if (part?.kind === 'attention' && (part.role === 'scores' || part.role === 'context')) coreMacs += layer.macs;
    else if (part?.kind === 'head' && part.role === 'lm') weightMacs += layer.macs * (paddedVocab(plan, layer.gemm.fwd.n) / layer.gemm.fwd.n);
    else weightMacs += layer.macs * (routed.get(i) ?? 1);
  });
  const microBatchesPerStep = plan.batch.globalBatch / plan.batch.microBatch;
  return 3 * 2 * (weightMacs + coreMacs / 2) * microBatchesPerStep;
}

/** The logits over Megatron's padded vocabulary (training.py:1302, args.padded_vocab_size): V rounded up to a multiple of divisibleBy x T. */
function paddedVocab(plan: ParallelPlan, vocab: number): number {
  const multiple = plan.vocabDivisibleBy * plan.world.tp;
  return Math.ceil(vocab / multiple) * multiple;
}

/**
 * A routed expert's GEMMs as Megatron counts them (training.py: the MLP term x
 * num_experts_routed_to): on T x k / E of the router's T tokens (k as planned: --moe-topk or the graph's), whatever rows the graph gives
 * it (every token in the dense form, the routed share in the index form); per expert layer the
 * factor from the graph's rows to those.
 */
function routedShares(plan: ParallelPlan): Map<number, number> {
  const out = new Map<number, number>();
  for (const [k, m] of plan.structure.mlps.entries()) {
    if (m.kind !== 'moe' || m.experts === undefined || m.router === undefined) continue;
    const experts = m.experts.length;
    const tokens = plan.layers[m.router]?.layer.gemm.fwd.m ?? 0;
    const share = (tokens * (plan.moeTopK?.get(k) ?? m.topK ?? experts)) / experts;
    for (const e of m.experts) {
      const mlp = plan.structure.mlps[e];
      for (const i of [...(mlp?.up ?? []), ...(mlp?.gate ?? []), ...(mlp?.down ?? [])]) {
        const rows = plan.layers[i]?.layer.gemm.fwd.m ?? 0;
        if (rows > 0) out.set(i, share / rows);
      }
    }
  }
  return out;
}

/** The systolic arrays' peak: 2 FLOP per multiply-add, every PE of every core's arrays each cycle (cost/multicore.ts). */
export const peakFlopsPerSec = (profile: HardwareProfile): number => peakFlopsPerSecond(profile);

export interface SimulatedStep {
  step_ns: number;
  tflops_per_device: number;
  mfu: number;
  exposed_comm_ns: number;
  /** The free-network prediction's bubble: the share of the stages' time idle (0 without pipeline stages). */
  bubble: number;
  ranks: { rank: number; finished_ns: number; exposed_comm_ns: number }[];
}

/**
 * The step is the last rank's finish; exposed communication is the slowest rank's (the rank the
 * step waits for). ASTRA-sim cycles are ns at its default 1 GHz.
 */
export function simulatedStep(plan: ParallelPlan, profile: HardwareProfile, finished: readonly RankFinish[], bubble: number): SimulatedStep {
  const last = finished.reduce((a, r) => (r.finishedCycles > a.finishedCycles ? r : a));
  const stepNs = last.finishedCycles;
  const flopsPerDevice = megatronFlopsPerStep(plan) / worldSize(plan.world);
  const flopsPerSec = flopsPerDevice / (stepNs * 1e-9);
  return {
    step_ns: stepNs,
    tflops_per_device: flopsPerSec / 1e12,
    mfu: flopsPerSec / peakFlopsPerSec(profile),
    exposed_comm_ns: last.exposedCommCycles,
    bubble,
    ranks: finished.map((r) => ({ rank: r.rank, finished_ns: r.finishedCycles, exposed_comm_ns: r.exposedCommCycles })),
  };
}
