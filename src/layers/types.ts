/** A layer of the model (GEMM-like, or vector work), ready for costing and communication sizing. */
import type { VectorOpClass } from '../ir/op-class.js';

/** One GEMM: (M x K) . (K x N) -> (M x N). M = output rows, N = output columns, K = reduction. */
export interface Gemm {
  m: number;
  n: number;
  k: number;
}

/** A pass of a layer: `count` identical, independent GEMMs (groups, timesteps x gates, heads...). */
export interface GemmWork {
  gemm: Gemm;
  count: number;
}

/** One vector layer's work (costed by cost/vector.ts). Bytes are in the model's dtypes. */
export interface VectorWork {
  opClass: VectorOpClass;
  /** Elements processed: the output's for element-wise ops, norms and softmax; the input's for reductions and global pools; output x window for pools. */
  elements: number;
  /** Bytes the forward reads: every input (activations, constants, parameters) in its dtype. */
  bytesIn: number;
  /** Bytes the forward writes. */
  bytesOut: number;
  /** Trainable parameters (a norm's scale and shift): the layer has a weight-gradient pass. */
  hasParams: boolean;
}

export type LayerKind =
  /** A GEMM with trainable weights (Conv, Gemm, MatMul by a weight, RNN gates). */
  | 'gemm'
  /** A GEMM of two activations (attention's QK^T and AV): compute, no weights. */
  | 'activation-gemm'
  /** A lookup table (Gather on a weight): weights and their gradient, no GEMM. */
  | 'embedding'
  /** Non-GEMM work on the vector unit (norms, softmax, activations, element-wise ops, pooling). */
  | 'vector';

export interface LayerPasses {
  fwd: GemmWork[];
  ig: GemmWork[];
  wg: GemmWork[];
  /** A vector layer's element work, costed on the vector unit (cost/vector.ts). */
  vector?: VectorWork;
}

export interface Layer {
  /** Unique, whitespace-free, from the weight or node name. */
  name: string;
  op: string;
  /** Name of the ONNX node it comes from. */
  node: string;
  kind: LayerKind;
  outputShape: number[];
  /** One GEMM of each pass (fwd M x N x K; ig M x K x N; wg K x N x M); `gemmCount` of each run. */
  gemm: { fwd: Gemm; ig: Gemm; wg: Gemm };
  gemmCount: number;
  /** What the cost model sums; empty for embeddings. */
  passes: LayerPasses;
  /** Forward multiply-accumulates (all GEMMs). */
  macs: number;
  weightParams: number;
  biasParams: number;
  /** Bytes in the model file's dtype. */
  weightBytes: number;
  biasBytes: number;
  inputActivationBytes: number;
  outputActivationBytes: number;
  /** Graph values this layer reads (activations) and writes, for tracing the graph around it. */
  activationInputs: string[];
  output: string;
  /** Names of the initializers holding this layer's weight and bias. */
  weightTensors: string[];
  biasTensors: string[];
  /** Elements of each tensor in weightTensors and biasTensors (a tensor held by two layers is one set of parameters). */
  /** (A Map: per-layer object keys would give every layer a hidden class of its own.) */
  tensorParams?: ReadonlyMap<string, number>;
  /** Vector layers: op class, elements and bytes moved (also in `passes.vector`). */
  vector?: VectorWork;
}

export function makePasses(gemm: Gemm, count: number): { gemm: Layer['gemm']; passes: LayerPasses } {
  const fwd = gemm;
  const ig = { m: gemm.m, n: gemm.k, k: gemm.n };
  const wg = { m: gemm.k, n: gemm.n, k: gemm.m };
  return {
    gemm: { fwd, ig, wg },
    passes: { fwd: [{ gemm: fwd, count }], ig: [{ gemm: ig, count }], wg: [{ gemm: wg, count }] },
  };
}
