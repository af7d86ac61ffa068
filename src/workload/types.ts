/** The distributed-training workload: per layer, compute cycles and collectives of each pass. */

export const PARALLELISMS = ['DATA', 'MODEL', 'HYBRID_DATA_MODEL', 'HYBRID_MODEL_DATA'] as const;
export type Parallelism = (typeof PARALLELISMS)[number];

export type CollectiveType = 'NONE' | 'ALLREDUCE' | 'ALLGATHER' | 'REDUCESCATTER' | 'ALLTOALL';

/** Which NPUs take part: the model-parallel group, the data-parallel group, or all. */
export type CommGroup = 'model' | 'data' | 'all';

export interface Collective {
  type: CollectiveType;
  /** Per-NPU buffer size in bytes, as ASTRA-sim's comm_size (see README). */
  bytes: number;
  group: CommGroup;
}

export const NO_COLLECTIVE: Collective = { type: 'NONE', bytes: 0, group: 'all' };

export const DTYPE_BYTES = { fp32: 4, fp16: 2, bf16: 2, int8: 1 } as const;
export type TrainingDType = keyof typeof DTYPE_BYTES;

export type ParamsCounted = 'all' | 'weights';

export interface ParallelConfig {
  parallelism: Parallelism;
  npus: number;
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

/** What one NPU's GEMMs of a pass do: multiply-accumulates, and operand bytes read plus written. */
export interface PassWork {
  macs: number;
  /** (M x K + K x N + M x N) x count x dtype bytes: each operand read once, the result written once. */
  tensorBytes: number;
}

export interface WorkloadLayer {
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

export interface Workload {
  config: ParallelConfig;
  split: Split;
  /** Clock of the hardware profile, to turn cycles into time. */
  clockMHz: number;
  hardware: string;
  costModel: string;
  layers: WorkloadLayer[];
}
