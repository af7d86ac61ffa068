/**
 * What a lowering function sees of its node (`LoweringContext`) and what it returns
 * (`LayerDraft`, turned into a `Layer` by lower.ts). Kept apart so per-family lowering files
 * (einsum, attention) share them without importing lower.ts.
 */
import { graphError } from '../errors.js';
import type { Node } from '../ir/graph.js';
import type { InferredModel } from '../shape/infer.js';
import type { TensorInfo } from '../shape/tensor-info.js';
import type { LayerKind, VectorWork } from './types.js';
import type { ValueOrigin } from './value-index.js';

/**
 * The one empty name list that drafts, layers and weight traces without names share (frozen:
 * lists are read, never changed), so most layers of a large graph hold no empty array of their own.
 */
export const NO_NAMES = Object.freeze([]) as unknown as string[];

export interface LoweringContext {
  inferred: InferredModel;
  node: Node;
  /** Static shape of a value, or a clear error naming the unbound symbol and the flag. */
  shape(name: string): number[];
  info(name: string): TensorInfo;
  /** A value's inferred info, undefined when the inference has none. */
  knownInfo(name: string): TensorInfo | undefined;
  /** A parameter-preserving view of initializers (weights.ts). */
  isWeight(name: string): boolean;
  /** Whether a value is an initializer itself (its own sole source). */
  isInitializer(name: string): boolean;
  /**
   * A list holding just `name` for a layer to keep: one the graph already holds when there is one
   * (the node's own operands, or the outputs of the one-output node writing `name`), else a new
   * one. Lists are read, never changed, so sharing them is safe; on the 100k-node chain this
   * drops 50k arrays (2.8 MB kept to the end).
   */
  nameList(name: string): string[];
  /** The initializers a weight operand comes from (empty for a non-weight). */
  weightSources(name: string): string[];
  /** Where a value's data comes from (weights.ts). */
  origin(name: string): ValueOrigin;
  /** The only consumer of a value, when there is exactly one. */
  soleConsumer(name: string): Node | undefined;
  intAttr(name: string, fallback: number): number;
  intsAttr(name: string): number[] | undefined;
  /** Bytes per element of a value's dtype. */
  elementBytes(name: string): number;
  /** Input i of the node; a missing (or empty, optional) one is a graph error naming the node. */
  input(i: number): string;
  /** Output i (default 0) of the node; a missing one is a graph error naming the node. */
  output(i?: number): string;
  /** Dim `axis` of a value's static shape (negative: from the end); a rank too low is a graph error. */
  dim(name: string, axis: number): number;
}

/**
 * Dim `axis` (negative: from the end) of a shape the lowering holds for `value`: a rank too low
 * for the op is bad input, reported as a graph error naming the node.
 */
export function dimOf(c: LoweringContext, shape: readonly number[], axis: number, value: string): number {
  const size = shape[axis < 0 ? shape.length + axis : axis];
  if (size === undefined) throw graphError(c.inferred.model.path, c.node, `'${value}' has rank ${shape.length}; the op needs dim ${axis}`);
  return size;
}

export interface LayerDraft {
  kind: LayerKind;
  gemm: { m: number; n: number; k: number };
  count: number;
  weightTensors: string[];
  biasTensors: string[];
  /** Activation inputs (for input activation bytes). */
  activationInputs: string[];
  output: string;
  /** Sub-layers of one fused node get a name suffix (`.qkv`, `.scores`, `.context`). */
  suffix?: string;
  /** Output shape of a sub-layer whose output no graph value holds. */
  outputShape?: number[];
  /** Activation input bytes that no graph value holds (a fused node's intermediates). */
  extraInputBytes?: number;
  /** Op shown for the layer when it is not the node's (a decomposed LayerNorm fused into one layer). */
  op?: string;
  /** Vector layers: their element work. */
  vector?: VectorWork;
}

/** `count` GEMMs of two operands, either of which may be a weight (none: an activation product). */
export function batchedProduct(c: LoweringContext, operands: string[], gemm: LayerDraft['gemm'], count: number, output: string): LayerDraft {
  const weights = operands.filter((t) => c.isWeight(t));
  return {
    kind: weights.length > 0 ? 'gemm' : 'activation-gemm',
    gemm,
    count,
    weightTensors: weights,
    biasTensors: [],
    activationInputs: operands.filter((t) => !c.isWeight(t)),
    output,
  };
}
