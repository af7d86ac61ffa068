/**
 * A rank's step graph: the compute and communication nodes of one training step (micro-batches
 * unrolled) in the order a framework issues them, with their dependencies. Writers serialize it;
 * ranks that differ only in their peers share one graph (`StepSchedule.graphs`), and the writer
 * resolves each rank's communicator groups and peers.
 */
import type { CollectiveType, CommGroupDef, GroupKind, WorldShape } from '../plan/types.js';

export type ComputePass = 'fwd' | 'ig' | 'wg' | 'update';

/** Where a node belongs in the pipeline schedule, so a simulator or a timeline can replay it. */
export interface NodeUnit {
  microBatch: number;
  /** fwd / bwd of a micro-batch (recompute: a forward re-run inside the backward); step: the optimizer step and its gradient reductions. */
  phase: 'fwd' | 'bwd' | 'recompute' | 'step';
  /** Model chunk of the stage (0 without interleaving). */
  chunk: number;
}

interface NodeBase {
  name: string;
  /** Indices of earlier nodes of the same graph that must finish first. */
  deps: number[];
  unit?: NodeUnit;
}

export interface ComputeNode extends NodeBase {
  kind: 'compute';
  pass: ComputePass;
  /** Layer index in the plan (-1 for the optimizer step). */
  layer: number;
  microBatch: number;
  /** Array clock cycles on this rank. */
  cycles: number;
  /** Floating-point operations on this rank (2 x MACs for GEMMs; element ops for vector work). */
  flops: number;
  /** Operand bytes read plus result bytes written. */
  tensorBytes: number;
}

export interface CollectiveNode extends NodeBase {
  kind: 'collective';
  type: Exclude<CollectiveType, 'NONE'>;
  /** ASTRA-sim 2.x comm_size in bytes. */
  bytes: number;
  group: GroupKind;
}

/** Point-to-point transfer to or from another pipeline stage of the same (t, d) position. */
export interface TransferNode extends NodeBase {
  kind: 'send' | 'recv';
  peerStage: number;
  bytes: number;
  /** Equal on both sides of one transfer, unique per transfer in the step. */
  tag: number;
}

export type StepNode = ComputeNode | CollectiveNode | TransferNode;

export interface StepGraph {
  /** Pipeline stage this graph belongs to (0 without pipeline parallelism). */
  stage: number;
  nodes: StepNode[];
}

export interface StepSchedule {
  world: WorldShape;
  /** One graph per pipeline stage; rank r uses graphs[stageOf(r)]. */
  graphs: StepGraph[];
  /** The communicator groups the graphs' collectives use (ids from 1), for --comm-group-configuration. */
  groups: CommGroupDef[];
  /** Clock of the cost model, to turn cycles into time. */
  clockMHz: number;
}
