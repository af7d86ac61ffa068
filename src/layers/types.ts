/** A layer of the model (GEMM-like, or vector work), ready for costing and communication sizing. */
import type { Gemm, GemmWork } from '../cost/types.js';
import type { VectorWork } from '../cost/vector.js';

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
  tensorParams?: Record<string, number>;
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
