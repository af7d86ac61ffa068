/**
 * What crosses between pipeline stages: the activation of a part's last layer forward and its
 * gradient backward (Megatron-LM's p2p_communication: one tensor of seq x micro-batch x hidden,
 * the sequence split T ways under sequence parallelism and C ways under context parallelism); and the tied word embedding's gradient,
 * all-reduced between the first and the last stage.
 */
import { at, last } from '../errors.js';
import { elementCount } from '../ir/dim.js';
import type { ParallelPlan } from '../plan/types.js';

/** The model's parts in order: part g is chunk floor(g / P) of stage g mod P. */
export function partsOf(plan: ParallelPlan): number[][] {
  const { pp } = plan.world;
  const v = plan.pipeline.virtualStages;
  return Array.from({ length: pp * v }, (_, g) => at(at(plan.pipeline.stages, g % pp).chunks, Math.floor(g / pp)));
}

/** Bytes sent over boundary g (after part g): its last layer's output, per micro-batch. */
export function boundaryBytes(plan: ParallelPlan, parts: readonly number[][], g: number): number {
  const closing = at(plan.layers, last(at(parts, g), `pipeline part ${g}`)).layer;
  // Context parallelism: a rank sends its S/C of the sequence (Megatron-LM core/pipeline_parallel/schedules.py get_tensor_shapes: seq_length // cp_group.size()).
  const bytes = (elementCount(closing.outputShape) / (plan.world.cp ?? 1)) * plan.elementBytes;
  const split = (b: number): number => (plan.sequenceParallel ? Math.ceil(b / plan.world.tp) : b);
  // Values carried along with the stream: hidden states (an encoder's output to every decoder
  // stage) split by sequence like the stream, anything else (a position bias) whole.
  const carried = plan.pipeline.sends?.[g]?.values.filter((v) => v.carried) ?? [];
  return split(bytes) + carried.reduce((a, v) => a + (v.hidden ? split(v.elements * plan.elementBytes) : v.elements * plan.elementBytes), 0);
}

/**
 * Tag of one transfer: 1 + 2 x (boundary + parts x (micro-batch + m x iteration)) + direction
 * (0 forward, 1 backward). Unique per transfer of a step and equal on both sides.
 */
export function transferTag(plan: ParallelPlan, iteration: number, microBatch: number, boundary: number, direction: 'fwd' | 'bwd'): number {
  const parts = plan.world.pp * plan.pipeline.virtualStages;
  return 1 + 2 * (boundary + parts * (microBatch + plan.batch.microBatches * iteration)) + (direction === 'fwd' ? 0 : 1);
}

/**
 * Bytes of the word-embedding gradient one rank of the first (and the last) stage all-reduces:
 * the weight tensors a first-stage layer and a last-stage layer share (tied input embedding and
 * LM head), as each rank holds them (split T ways by vocabulary when tensor-parallel).
 */
export function tiedEmbeddingBytes(plan: ParallelPlan): number {
  const { pp, tp } = plan.world;
  if (pp < 2) return 0;
  const first = plan.layers.filter((l) => l.stage === 0);
  const lastTensors = new Set(plan.layers.filter((l) => l.stage === pp - 1).flatMap((l) => l.layer.weightTensors));
  let params = 0;
  const seen = new Set<string>();
  for (const l of first) {
    for (const t of l.layer.weightTensors) {
      if (!lastTensors.has(t) || seen.has(t)) continue;
      seen.add(t);
      const numel = l.layer.tensorParams?.get(t) ?? l.layer.weightParams;
      params += l.role === 'replicated' ? numel : Math.ceil(numel / tp);
    }
  }
  return params * plan.gradientBytes;
}
