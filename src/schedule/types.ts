/**
 * A rank's step graph: the compute and communication nodes of one training step (micro-batches
 * unrolled) in the order a framework issues them, with their dependencies. Writers serialize it;
 * ranks that differ only in their peers share one graph (`StepSchedule.graphs`), and the writer
 * resolves each rank's communicator groups and peers.
 */
import type { StepPass } from '../costed/costed-plan.js';
import type { Collective, ParallelConfig, Split } from '../plan/legacy.js';
import type { CollectiveType, CommGroupDef, GroupKind, WorldShape } from '../plan/types.js';

/** recompute: a forward re-run inside the backward (activation recomputation), its own pass so timelines and tools can tell it from the forward. */
export type ComputePass = StepPass | 'update';

/** Where a node belongs in the pipeline schedule, so a simulator or a timeline can replay it. */
export interface NodeUnit {
  readonly microBatch: number;
  /** fwd / bwd of a micro-batch (recompute: a forward re-run inside the backward); step: the optimizer step and its gradient reductions. */
  readonly phase: 'fwd' | 'bwd' | 'recompute' | 'step';
  /** Model chunk of the stage (0 without interleaving). */
  readonly chunk: number;
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

/**
 * Whom a point-to-point transfer goes to (a send) or comes from (a recv), relative to the rank
 * writing it: the rank of pipeline stage `stage` with every other index the same (Megatron-LM's
 * p2p_communication), or the rank `offset` steps along the context-parallel ring (CP index + offset
 * mod C, every other index the same: TransformerEngine's K/V ring). Resolved per rank by the writer.
 */
export type TransferPeer = { readonly axis: 'pp'; readonly stage: number } | { readonly axis: 'cp'; readonly offset: number };

/** The pipeline stage of a transfer's peer, seen from stage `stage` (a CP ring's peer is on the same stage). */
export const peerStageOf = (peer: TransferPeer, stage: number): number => (peer.axis === 'pp' ? peer.stage : stage);

/** Point-to-point transfer to or from another rank (TransferPeer). */
export interface TransferNode extends NodeBase {
  kind: 'send' | 'recv';
  peer: TransferPeer;
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

/** What one NPU's GEMMs of a pass do: multiply-accumulates, and operand bytes read plus written. */
export interface PassWork {
  macs: number;
  /** (M x K + K x N + M x N) x count x dtype bytes: each operand read once, the result written once. */
  tensorBytes: number;
}

/** One layer of the legacy per-layer table (a line of ASTRA-sim's text workload). */
export interface LayerTableRow {
  name: string;
  /** Compute of one NPU, in array clock cycles. */
  fwdCycles: number;
  igCycles: number;
  wgCycles: number;
  /** Optimizer step for this NPU's share of the layer's parameters, in cycles. */
  updateCycles: number;
  fwdComm: Collective;
  igComm: Collective;
  wgComm: Collective;
  /** Per-NPU work of each pass (FLOPs = 2 x macs), e.g. for Chakra's num_ops / tensor_size. */
  work?: { fwd: PassWork; ig: PassWork; wg: PassWork };
}

/**
 * The legacy per-layer table (ASTRA-sim's text format, Chakra's converter graph): per layer, one
 * rank's compute cycles and the one collective of each pass, under a legacy strategy keyword.
 */
export interface LayerTable {
  config: ParallelConfig;
  split: Split;
  /** Clock of the hardware profile, to turn cycles into time. */
  clockMHz: number;
  hardware: string;
  costModel: string;
  layers: LayerTableRow[];
}
