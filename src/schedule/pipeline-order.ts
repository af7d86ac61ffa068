/**
 * The order a pipeline stage runs its micro-batches' forward and backward passes in, as
 * Megatron-LM's megatron/core/pipeline_parallel/schedules.py issues them:
 * - 1F1B (forward_backward_pipelining_without_interleaving): stage i runs min(P - i - 1, m)
 *   warm-up forwards, then alternates one forward / one backward, then the cool-down backwards;
 * - GPipe: every forward, then every backward (in micro-batch order);
 * - interleaved (forward_backward_pipelining_with_interleaving): V chunks per stage; virtual
 *   micro-batch k runs chunk (k mod PV) div P (backward: V - 1 - that) on micro-batch
 *   (k div PV) x P + k mod P; warm-up (P - i - 1) x 2 + (V - 1) x P virtual micro-batches (all
 *   of them when m = P), then one forward / one backward, then the cool-down backwards.
 */
import type { PipelineScheduleKind } from '../plan/types.js';

export interface PipelineUnit {
  pass: 'fwd' | 'bwd';
  microBatch: number;
  /** Model chunk of this stage (0 without interleaving). */
  chunk: number;
}

export function stageOrder(kind: PipelineScheduleKind, stage: number, pp: number, microBatches: number, virtualStages = 1): PipelineUnit[] {
  const m = microBatches;
  const fwd = (microBatch: number, chunk = 0): PipelineUnit => ({ pass: 'fwd', microBatch, chunk });
  const bwd = (microBatch: number, chunk = 0): PipelineUnit => ({ pass: 'bwd', microBatch, chunk });
  if (kind === 'gpipe') return [...Array.from({ length: m }, (_, k) => fwd(k)), ...Array.from({ length: m }, (_, k) => bwd(k))];
  if (kind === '1f1b') {
    const warmup = Math.min(pp - stage - 1, m);
    const out = Array.from({ length: warmup }, (_, k) => fwd(k));
    for (let k = 0; k < m - warmup; k++) out.push(fwd(k + warmup), bwd(k));
    for (let k = m - warmup; k < m; k++) out.push(bwd(k));
    return out;
  }
  const v = virtualStages;
  const total = m * v;
  const group = pp * v;
  const chunkOf = (k: number, forward: boolean): number => {
    const c = Math.floor((k % group) / pp);
    return forward ? c : v - c - 1;
  };
  const microBatchOf = (k: number): number => Math.floor(k / group) * pp + (k % pp);
  const warmup = m === pp ? total : Math.min((pp - stage - 1) * 2 + (v - 1) * pp, total);
  const out = Array.from({ length: warmup }, (_, k) => fwd(microBatchOf(k), chunkOf(k, true)));
  for (let k = 0; k < total - warmup; k++) out.push(fwd(microBatchOf(k + warmup), chunkOf(k + warmup, true)), bwd(microBatchOf(k), chunkOf(k, false)));
  for (let k = total - warmup; k < total; k++) out.push(bwd(microBatchOf(k), chunkOf(k, false)));
  return out;
}
