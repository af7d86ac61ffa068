/**
 * GEMM lowering: every GEMM-like node of the inferred graph becomes a `Layer` with its forward,
 * input-gradient and weight-gradient GEMMs, MACs, parameters and activation sizes.
 * One lowering function per op family; all of them need fully static shapes.
 */
import { at, graphError, internalError } from '../errors.js';
import { elementCount } from '../ir/dim.js';
import { dtypeBytes } from '../ir/dtype.js';
import type { Node } from '../ir/graph.js';
import type { InferredModel } from '../shape/infer.js';
import type { LoweringName } from '../shape/op-table.js';
import { opRowOf } from '../shape/rules/index.js';
import { lowerMsAttention, lowerMsMultiHeadAttention, lowerOnnxAttention } from './attention.js';
import { lowerEinsum } from './einsum.js';
import { batchedProduct, dimOf, NO_NAMES, type LayerDraft, type LoweringContext } from './draft.js';
import { checkComputeLowered, forEachExecutedNode, lowerBodies, type BodyScope } from './control-flow.js';
import { gemmCarrier } from './gemm-ops.js';
import { LayerNamer } from './naming.js';
import { NodeLoweringContext, type GraphLowering } from './node-context.js';
import { TensorParams } from './tensor-params.js';
import { SharedPasses } from './shared-passes.js';
import type { Layer, LayerKind } from './types.js';
import { lowerVectorOp, VectorFusions } from './vector.js';
import { weightTracerOf, type WeightTracer } from './weights.js';

export interface LoweringOptions {
  /** Also lower non-GEMM work (norms, softmax, activations, element-wise ops, pooling) to 'vector' layers. */
  vectorOps?: boolean;
}




/** Operand positions of Conv (one object, not a default argument's per call). */
const CONV_OPERANDS = { x: 0, w: 1, b: 2 };

/** Operand positions: Conv (x 0, w 1, b 2); QLinearConv (x 0, w 3, b 8); ConvInteger has no bias. */
function lowerConv(c: LoweringContext, operands = CONV_OPERANDS): LayerDraft {
  const x = c.input(operands.x);
  const w = c.input(operands.w);
  const b = operands.b >= 0 ? c.node.inputs[operands.b] || undefined : undefined;
  const output = c.output();
  const out = c.shape(output);
  const weight = c.shape(w);
  const group = intAttr(c.node, 'group', 1);
  const batch = dimOf(c, out, 0, output);
  const outPositions = elementCount(out.slice(2));
  const cinPerGroup = dimOf(c, weight, 1, w);
  const coutPerGroup = dimOf(c, weight, 0, w) / group;
  return {
    kind: 'gemm',
    // Per group: (N x out positions) x (Cin/g x kernel) . (Cin/g x kernel) x (Cout/g).
    gemm: { m: batch * outPositions, n: coutPerGroup, k: cinPerGroup * elementCount(weight.slice(2)) },
    count: group,
    weightTensors: [w],
    biasTensors: b ? [b] : [],
    activationInputs: c.nameList(x),
    output,
  };
}

function lowerConvTranspose(c: LoweringContext): LayerDraft {
  const x = c.input(0);
  const w = c.input(1);
  const b = c.node.inputs[2];
  const input = c.shape(x);
  const weight = c.shape(w); // [Cin, Cout/g, k...]
  const group = intAttr(c.node, 'group', 1);
  return {
    kind: 'gemm',
    // Each input position scatters Cout/g x kernel outputs (col2im): M = N x input positions.
    gemm: { m: dimOf(c, input, 0, x) * elementCount(input.slice(2)), n: dimOf(c, weight, 1, w) * elementCount(weight.slice(2)), k: dimOf(c, weight, 0, w) / group },
    count: group,
    weightTensors: [w],
    biasTensors: b ? [b] : [],
    activationInputs: c.nameList(x),
    output: c.output(),
  };
}

function lowerGemm(c: LoweringContext): LayerDraft {
  const a = c.input(0);
  const b = c.input(1);
  const bias = c.node.inputs[2];
  const transA = intAttr(c.node, 'transA', 0) === 1;
  const transB = intAttr(c.node, 'transB', 0) === 1;
  const m = c.dim(a, transA ? 1 : 0);
  const k = c.dim(a, transA ? 0 : 1);
  const n = c.dim(b, transB ? 0 : 1);
  const weights = [a, b].filter((t) => c.isWeight(t));
  const kind: LayerKind = weights.length > 0 ? 'gemm' : 'activation-gemm';
  const biasTensors = bias && c.isWeight(bias) ? [bias] : [];
  const output = c.output();
  if (c.isWeight(a) && !c.isWeight(b)) {
    // Weight on the left: Y^T = B^T . A^T, so the activation rows (n) stream through the array.
    return { kind, gemm: { m: n, n: m, k }, count: 1, weightTensors: weights, biasTensors, activationInputs: c.nameList(b), output };
  }
  return { kind, gemm: { m, n, k }, count: 1, weightTensors: weights, biasTensors, activationInputs: [a, b].filter((t) => !c.isWeight(t)), output };
}

/** A 1-D weight added right after a MatMul is that MatMul's bias (PyTorch's Linear on N-D input). */
function foldedBias(c: LoweringContext, output: string, n: number): string[] {
  const add = c.soleConsumer(output);
  if (add === undefined || add.opType !== 'Add') return NO_NAMES;
  const other = add.inputs[0] === output ? add.inputs[1] : add.inputs[0];
  if (other === undefined || !c.isWeight(other)) return NO_NAMES;
  const shape = c.shape(other);
  return elementCount(shape) === n ? [other] : NO_NAMES;
}


/** Swaps the last two dims (FusedMatMul's transA / transB). */
function transposedLast2(shape: number[]): number[] {
  return [...shape.slice(0, -2), ...shape.slice(-2).reverse()];
}

/** Operand positions of MatMul and MatMulInteger (one object, not a default argument's per call). */
const MATMUL_OPERANDS = { a: 0, b: 1 };

/** Operand positions: MatMul and MatMulInteger (a 0, b 1); QLinearMatMul (a 0, b 3). */
function lowerMatMul(c: LoweringContext, operands = MATMUL_OPERANDS): LayerDraft {
  const a = c.input(operands.a);
  const b = c.input(operands.b);
  const as = c.shape(a);
  const bs = c.shape(b);
  const output = c.output();
  const out = c.shape(output);
  let a2 = as.length === 1 ? [1, ...as] : as;
  let b2 = bs.length === 1 ? [...bs, 1] : bs;
  if (intAttr(c.node, 'transA', 0) === 1) a2 = transposedLast2(a2);
  if (intAttr(c.node, 'transB', 0) === 1) b2 = transposedLast2(b2);
  const m = dimOf(c, a2, -2, a);
  const k = dimOf(c, a2, -1, a);
  const n = dimOf(c, b2, -1, b);
  const outBatch = elementCount(out) / (m * n);
  if (c.isWeight(b) && b2.length === 2) {
    // X[..., M, K] . W[K, N]: the weight is shared, so all leading dims fold into M.
    return { kind: 'gemm', gemm: { m: outBatch * m, n, k }, count: 1, weightTensors: [b], biasTensors: foldedBias(c, output, n), activationInputs: c.nameList(a), output };
  }
  if (c.isWeight(a) && a2.length === 2) {
    // W[M, K] . X[..., K, N]: transpose so the activation columns stream (Y^T = X^T . W^T).
    return { kind: 'gemm', gemm: { m: outBatch * n, n: m, k }, count: 1, weightTensors: [a], biasTensors: NO_NAMES, activationInputs: c.nameList(b), output };
  }
  // Batched product (attention QK^T, AV): one GEMM per batch element.
  return batchedProduct(c, [a, b], { m, n, k }, outBatch, output);
}

const GATES: Record<string, number> = { LSTM: 4, GRU: 3, RNN: 1 };

function lowerRecurrent(c: LoweringContext): LayerDraft {
  const x = c.input(0);
  const w = c.input(1); // [dirs, gates*H, input]
  const r = c.input(2);
  const b = c.node.inputs[3];
  const layout = intAttr(c.node, 'layout', 0);
  const seq = c.dim(x, layout === 0 ? 0 : 1);
  const batch = c.dim(x, layout === 0 ? 1 : 0);
  const gates = GATES[c.node.opType] ?? internalError(`no gate count for ${c.node.opType}`);
  const dirs = c.dim(w, 0);
  const hidden = c.dim(w, 1) / gates;
  const input = c.dim(w, 2);
  const output = c.node.outputs.find((o) => o !== '') ?? c.output();
  return {
    kind: 'gemm',
    // Per time step, direction and gate: [x_t, h_{t-1}] (batch x (input+H)) . [W; R]^T ((input+H) x H).
    gemm: { m: batch, n: hidden, k: input + hidden },
    count: seq * dirs * gates,
    weightTensors: [w, r].filter((t) => c.isWeight(t)),
    biasTensors: b && c.isWeight(b) ? [b] : [],
    activationInputs: c.nameList(x),
    output,
  };
}

function lowerEmbedding(c: LoweringContext): LayerDraft | undefined {
  const table = c.input(0);
  const indices = c.input(1);
  if (!c.isWeight(table) || intAttr(c.node, 'axis', 0) !== 0 || c.shape(table).length !== 2) return undefined;
  // Fixed indices (a position-ids buffer exported as an initializer) still look up trained rows;
  // a single fixed index is a slice of the weight, not a lookup.
  if (c.origin(indices) !== 'activation' && elementCount(c.shape(indices)) <= 1) return undefined;
  return { kind: 'embedding', gemm: { m: 0, n: 0, k: 0 }, count: 0, weightTensors: [table], biasTensors: NO_NAMES, activationInputs: c.nameList(indices), output: c.output() };
}

type Lowering = (c: LoweringContext) => LayerDraft | LayerDraft[] | undefined;

/**
 * The lowering each op-table row names (shape/op-table.ts). A Record over every `LoweringName`, so
 * a name without an implementation does not compile.
 */
export const LOWERINGS: Readonly<Record<LoweringName, Lowering>> = {
  conv: (c) => lowerConv(c),
  'conv-integer': (c) => lowerConv(c, { x: 0, w: 1, b: -1 }),
  'qlinear-conv': (c) => lowerConv(c, { x: 0, w: 3, b: 8 }),
  'conv-transpose': lowerConvTranspose,
  gemm: lowerGemm,
  matmul: (c) => lowerMatMul(c),
  'qlinear-matmul': (c) => lowerMatMul(c, { a: 0, b: 3 }),
  einsum: lowerEinsum,
  recurrent: lowerRecurrent,
  embedding: lowerEmbedding,
  'onnx-attention': lowerOnnxAttention,
  'ms-attention': lowerMsAttention,
  'ms-multi-head-attention': lowerMsMultiHeadAttention,
};

/** Nodes that carry GEMMs but have no lowering (gemm-ops.ts): their compute would be missing from the workload. */
export function unloweredComputeNodes(inferred: InferredModel): Node[] {
  const out: Node[] = [];
  forEachExecutedNode(inferred, (n) => {
    if (gemmCarrier(n) === 'not-lowered') out.push(n);
  });
  return out;
}

function intAttr(node: Node, name: string, fallback: number): number {
  // Most MatMuls have no attributes: no hash lookup of the name (two per MatMul).
  if (node.attributes.size === 0) return fallback;
  const a = node.attributes.get(name);
  return a?.kind === 'int' ? a.value : fallback;
}

/** `tracer`: the main graph's weight tracer, when the caller asks it more (untracedWeightOperands). */
export function lowerToLayers(inferred: InferredModel, options: LoweringOptions = {}, tracer: WeightTracer = weightTracerOf(inferred)): Layer[] {
  const layers = lowerGraph(inferred, tracer, new LayerNamer(inferred.order.length), new SharedPasses(), { prefix: '', repeat: 1 }, options);
  checkComputeLowered(inferred, layers);
  return layers;
}

/** Lowers one graph's nodes (the main graph, or a sub-graph seen through `inferred`), control-flow bodies in place. */
function lowerGraph(inferred: InferredModel, tracer: WeightTracer, namer: LayerNamer, shared: SharedPasses, scope: BodyScope, options: LoweringOptions): Layer[] {
  const fusions = options.vectorOps ? new VectorFusions(inferred, tracer) : undefined;
  const graph: GraphLowering = { inferred, tracer, index: tracer.index };
  let context: NodeLoweringContext | undefined;
  const vectorLowering = fusions === undefined ? undefined : (c: LoweringContext) => lowerVectorOp(c, fusions);
  const hasControlFlow = inferred.controlFlow.size > 0;
  const layers: Layer[] = [];
  // An index loop, not entries(): an iterator and a pair per node, slow in the interpreter that
  // runs a cold start's code.
  for (let position = 0; position < inferred.order.length; position++) {
    const graphNode = at(inferred.order, position);
    const use = hasControlFlow ? inferred.controlFlow.get(graphNode) : undefined;
    if (use !== undefined) layers.push(...lowerBodies(inferred, graphNode, use, scope, (view, inner) => lowerGraph(view, weightTracerOf(view), namer, shared, inner, options)));
    // Sub-graph nodes carry their parents' names, so layer and node names stay unique.
    const node = scope.prefix === '' ? graphNode : { ...graphNode, name: `${scope.prefix}${graphNode.name}` };
    const lowering = opRowOf(node)?.lowering;
    const lower = lowering !== undefined ? LOWERINGS[lowering] : vectorLowering;
    if (lower === undefined) continue;
    context ??= new NodeLoweringContext(graph, node, position);
    const ctx = context.reset(node, position);
    const drafts = lower(ctx);
    if (drafts === undefined) continue;
    if (!Array.isArray(drafts)) layers.push(finishLayer(ctx, repeated(drafts, scope.repeat), namer, shared));
    else for (const draft of drafts) layers.push(finishLayer(ctx, repeated(draft, scope.repeat), namer, shared));
  }
  return layers;
}

/** A draft run `repeat` times (a loop body's). */
function repeated(draft: LayerDraft, repeat: number): LayerDraft {
  return repeat === 1 ? draft : { ...draft, count: draft.count * repeat };
}

/** A weight operand's source initializers (several for a Concat), each named once. */
function sourcesOf(c: LoweringContext, operands: string[]): string[] {
  if (operands.length === 0) return NO_NAMES;
  // One operand (most layers): its own list, or the tracer's, distinct and never changed.
  if (operands.length === 1) {
    const operand = operands[0] ?? '';
    // An initializer is its own source: the draft's list (made for this layer), not one more list per weight.
    if (c.isInitializer(operand)) return operands;
    const sources = c.weightSources(operand);
    return sources.length === 0 ? NO_NAMES : sources;
  }
  const out: string[] = [];
  for (const t of operands) for (const s of c.weightSources(t)) if (!out.includes(s)) out.push(s);
  return out.length === 0 ? NO_NAMES : out.slice(); // exact length: layers keep it
}


/** The tensor map of every layer without weights or biases. */
const NO_TENSORS: ReadonlyMap<string, number> = new Map();

/** Bytes of a value in its dtype (its static shape). */
function bytesOf(c: LoweringContext, name: string): number {
  return dtypeBytes(c.info(name).dtype, elementCount(c.shape(name)));
}

/**
 * The layer of a draft, built as one object literal (no closures, no intermediate object): a
 * 100k-node graph finishes 100k layers, and each object more per layer is garbage collected.
 */
function finishLayer(c: LoweringContext, d: LayerDraft, namer: LayerNamer, shared: SharedPasses): Layer {
  const weightTensors = sourcesOf(c, d.weightTensors);
  const biasTensors = sourcesOf(c, d.biasTensors);
  const outputShape = d.outputShape ?? c.shape(d.output);
  const macs = d.gemm.m * d.gemm.n * d.gemm.k * d.count;
  if (!Number.isSafeInteger(macs)) throw graphError(c.inferred.model.path, c.node, `GEMM of ${d.gemm.m} x ${d.gemm.n} x ${d.gemm.k} x ${d.count} is beyond 2^53 MACs`);
  const { gemm, passes } = d.kind === 'embedding' || d.kind === 'vector' ? shared.noGemm(d.gemm, d.vector) : shared.gemm(d.gemm, d.count);
  const name = namer.name(c.node.name, c.node.opType, weightTensors[0], d.kind === 'activation-gemm' || d.kind === 'vector', d.suffix);
  const weightCounts = weightTensors.length === 0 ? NO_COUNTS : recentCounts.countsOf(c, weightTensors);
  const biasCounts = biasTensors.length === 0 ? NO_COUNTS : biasTensors.map((t) => elementCount(c.shape(t)));
  let weightBytes = 0;
  for (const t of weightTensors) weightBytes += bytesOf(c, t);
  let biasBytes = 0;
  for (const t of biasTensors) biasBytes += bytesOf(c, t);
  let inputActivationBytes = 0;
  for (const a of d.activationInputs) inputActivationBytes += bytesOf(c, a);
  inputActivationBytes += d.extraInputBytes ?? 0;
  const outputActivationBytes = d.outputShape === undefined ? bytesOf(c, d.output) : dtypeBytes(c.info(d.output).dtype, elementCount(d.outputShape));
  const op = d.op ?? c.node.opType;
  const activationInputs = d.activationInputs.length === 0 ? NO_NAMES : d.activationInputs;
  const tensorParams = weightTensors.length + biasTensors.length === 0 ? NO_TENSORS : tensorParamsOf(weightTensors, weightCounts, biasTensors, biasCounts);
  const weightParams = sum(weightCounts);
  const biasParams = sum(biasCounts);
  // Two literals, the same keys in the same order (a vector layer's work last, as a spread would
  // put it): a property added afterwards gives every vector layer a property store of its own.
  if (d.vector) {
    return {
      name, op, node: c.node.name, kind: d.kind, outputShape, gemm, gemmCount: d.count, passes, macs, weightParams, biasParams, weightBytes, biasBytes,
      inputActivationBytes, outputActivationBytes, activationInputs, output: d.output, weightTensors, biasTensors, tensorParams, vector: passes.vector ?? d.vector,
    } satisfies Record<keyof Layer, unknown>;
  }
  return {
    name, op, node: c.node.name, kind: d.kind, outputShape, gemm, gemmCount: d.count, passes, macs, weightParams, biasParams, weightBytes, biasBytes,
    inputActivationBytes, outputActivationBytes, activationInputs, output: d.output, weightTensors, biasTensors, tensorParams,
  } satisfies Record<Exclude<keyof Layer, 'vector'>, unknown>;
}

/** The counts of every layer without weights or biases (frozen, as NO_NAMES). */
const NO_COUNTS: readonly number[] = Object.freeze([]);

/**
 * The last few distinct weight-count lists, shared (frozen) by the layers after them with the same
 * counts: a model repeats a few weight shapes block after block, and each `TensorParams` keeps
 * its counts list.
 */
class RecentCounts {
  private readonly lists: (readonly number[])[] = [];

  /** The shared counts list of `tensors` (one tensor, most layers: found without a list of its own). */
  countsOf(c: LoweringContext, tensors: readonly string[]): readonly number[] {
    if (tensors.length !== 1) return this.shared(tensors.map((t) => elementCount(c.shape(t))));
    const n = elementCount(c.shape(tensors[0] ?? ''));
    for (const known of this.lists) if (known.length === 1 && known[0] === n) return known;
    return this.shared([n]);
  }

  shared(counts: number[]): readonly number[] {
    for (const known of this.lists) {
      if (known.length !== counts.length) continue;
      let same = true;
      for (let i = 0; i < counts.length && same; i++) same = known[i] === counts[i];
      if (same) return known;
    }
    const kept = Object.freeze(counts);
    if (this.lists.length === 8) this.lists.pop();
    this.lists.unshift(kept);
    return kept;
  }
}

const recentCounts = new RecentCounts();

function sum(counts: readonly number[]): number {
  let total = 0;
  for (const n of counts) total += n;
  return total;
}

/** Elements of each tensor a layer holds (a tensor both weight and bias counts as the bias, as a Map built in that order would). */
function tensorParamsOf(weights: readonly string[], weightCounts: readonly number[], biases: readonly string[], biasCounts: readonly number[]): TensorParams {
  // Weights only (most layers): the layer's own lists, whose names sourcesOf made distinct.
  if (biases.length === 0) return new TensorParams(weights, weightCounts);
  const entries: [string, number][] = [
    ...weights.map((t, i): [string, number] => [t, at(weightCounts, i)]),
    ...biases.map((t, i): [string, number] => [t, at(biasCounts, i)]),
  ];
  return new TensorParams(entries);
}
