/**
 * Hand-built pipeline step schedules: P stages, m micro-batches, a forward of `fwdCycles` and a
 * backward of `bwdCycles` per micro-batch on every stage, activations sent forward and gradients
 * backward between neighbouring stages. Orders: GPipe (all forwards, then all backwards) and 1F1B
 * (PipeDream-Flush / Megatron-LM: P - s - 1 warm-up forwards on stage s, then one forward one
 * backward, then the remaining backwards). The clock is 1000 MHz, so a cycle is a nanosecond.
 */
import type { ComputeNode, StepGraph, StepNode, StepSchedule } from '../../src/schedule/types.js';

export type PipelineOrder = '1f1b' | 'gpipe';

export interface PipelineShape {
  stages: number;
  microBatches: number;
  fwdCycles: number;
  bwdCycles: number;
  order: PipelineOrder;
  /** Split the backward into an input-gradient and a weight-gradient node (b/2 each). */
  splitBackward?: boolean;
}

/** The sequence of (pass, micro-batch) a stage runs. */
export function stageOrder(order: PipelineOrder, stage: number, stages: number, m: number): ['F' | 'B', number][] {
  if (order === 'gpipe') return [...Array.from({ length: m }, (_, i) => ['F', i] as ['F', number]), ...Array.from({ length: m }, (_, i) => ['B', i] as ['B', number])];
  const warmup = Math.min(stages - stage - 1, m);
  const out: ['F' | 'B', number][] = [];
  for (let i = 0; i < warmup; i++) out.push(['F', i]);
  for (let i = 0; i < m - warmup; i++) out.push(['F', warmup + i], ['B', i]);
  for (let i = m - warmup; i < m; i++) out.push(['B', i]);
  return out;
}

const tagOf = (mb: number, sender: number, stages: number, backward: boolean): number => 2 * (mb * stages + sender) + (backward ? 1 : 0);

function compute(name: string, pass: ComputeNode['pass'], mb: number, cycles: number, deps: number[]): ComputeNode {
  return { kind: 'compute', name, pass, layer: 0, microBatch: mb, cycles, flops: 2 * cycles, tensorBytes: 64, deps };
}

export function pipelineSchedule(shape: PipelineShape): StepSchedule {
  const { stages, microBatches: m } = shape;
  const graphs: StepGraph[] = [];
  for (let s = 0; s < stages; s++) {
    const nodes: StepNode[] = [];
    const add = (n: StepNode): number => nodes.push(n) - 1;
    let lastCompute: number[] = [];
    for (const [pass, mb] of stageOrder(shape.order, s, stages, m)) {
      const forward = pass === 'F';
      const from = forward ? s - 1 : s + 1;
      const to = forward ? s + 1 : s - 1;
      const inputs: number[] = [...lastCompute];
      // Receives depend on nothing: they are posted at once and complete when the peer sends.
      if (from >= 0 && from < stages) inputs.push(add({ kind: 'recv', name: `${pass}${mb}.recv`, peer: { axis: 'pp', stage: from }, bytes: 1024, tag: tagOf(mb, from, stages, !forward), deps: [] }));
      if (forward) lastCompute = [add(compute(`F${mb}`, 'fwd', mb, shape.fwdCycles, inputs))];
      else if (shape.splitBackward) {
        const ig = add(compute(`B${mb}.ig`, 'ig', mb, shape.bwdCycles / 2, inputs));
        lastCompute = [add(compute(`B${mb}.wg`, 'wg', mb, shape.bwdCycles / 2, [ig]))];
      } else lastCompute = [add(compute(`B${mb}`, 'ig', mb, shape.bwdCycles, inputs))];
      if (to >= 0 && to < stages) add({ kind: 'send', name: `${pass}${mb}.send`, peer: { axis: 'pp', stage: to }, bytes: 1024, tag: tagOf(mb, s, stages, !forward), deps: [...lastCompute] });
    }
    graphs.push({ stage: s, nodes });
  }
  return { world: { tp: 1, dp: 1, pp: stages }, graphs, groups: [], clockMHz: 1000 };
}
