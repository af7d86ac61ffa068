/** Small constants the CLI needs at start-up, kept apart from the (larger) cost models. */

/**
 * The profile `--hardware` defaults to: one TPU v4 TensorCore, a training accelerator (bf16 MXUs,
 * HBM2), so the default weight update and vector work run at a training chip's bandwidth. The
 * TPU-v1-like `tpu-256` (an inference chip, 34 GB/s DDR3) stays a shipped profile.
 */
export const DEFAULT_PROFILE_NAME = 'tpu-v4';

/** Cost models: SCALE-sim-exact (default) or the ideal ceil(MACs / PEs) lower bound. */
export const COST_MODELS = ['scalesim', 'ideal'] as const;
export type CostModelKind = (typeof COST_MODELS)[number];

/**
 * Optimizer-step DRAM traffic per parameter byte. The update is a streaming elementwise pass
 * bound by DRAM bandwidth:
 *   sgd       read weight + gradient, write weight                      = 3 x paramBytes
 *   momentum  also read and write the velocity                          = 5 x paramBytes
 *   adam      read weight, gradient, m, v; write weight, m, v            = 7 x paramBytes
 * (state tensors assumed to have the parameters' element size).
 */
export const OPTIMIZER_TRAFFIC_FACTOR = { sgd: 3, momentum: 5, adam: 7 } as const;
export type Optimizer = keyof typeof OPTIMIZER_TRAFFIC_FACTOR;
