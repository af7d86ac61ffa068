/**
 * Non-GEMM work as 'vector' layers: norms, softmax, activations, element-wise ops, pooling and
 * reductions, each with its op class, element count and bytes moved (costed by cost/vector.ts).
 * Not work: ops without a vector class in the op table (shape ops), ops on integer or boolean values (index and shape
 * arithmetic, masks), ops whose inputs are all constants or weights (foldable), folded values and
 * tiny tensors. LayerNorm and RMSNorm exported as their element-wise pieces (ReduceMean, Sub,
 * Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) become one 'layernorm' layer.
 */
import { last } from '../errors.js';
import { isFloatDType } from '../ir/dtype.js';
import { elementCount, RUNTIME_DIM_PREFIX, unboundSymbols, type Dim } from '../ir/dim.js';
import { valueLinks, type Node, type ValueLinks } from '../ir/graph.js';
import type { InferredModel } from '../shape/infer.js';
import { opRowOf } from '../shape/rules/index.js';
import type { VectorOpClass } from '../ir/op-class.js';
import type { LayerDraft, LoweringContext } from './draft.js';
import type { WeightTracer } from './weights.js';

/** Values with at most this many elements (in and out) are shape arithmetic, not work. */
export const TINY_VECTOR_ELEMENTS = 64;

/** A decomposed norm: the nodes it absorbs, its input, scale and shift. */
interface FusedNorm {
  op: 'LayerNormalization' | 'RMSNormalization';
  input: string;
  scale?: string;
  shift?: string;
}

/** Decomposed LayerNorm / RMSNorm patterns of one graph, found once before the walk. */
export class VectorFusions {
  private readonly links: ValueLinks;
  /** Final node of each fused norm -> the norm. */
  readonly norms = new Map<Node, FusedNorm>();
  /** Nodes inside a fused norm other than its final node: no layer of their own. */
  readonly absorbed = new Set<Node>();
  private readonly graphOutputs: ReadonlySet<string>;

  constructor(inferred: InferredModel, readonly tracer: WeightTracer) {
    this.graphOutputs = new Set(inferred.model.graph.outputs.map((o) => o.name));
    this.links = valueLinks(inferred.order);
    for (const node of inferred.order) if (node.domain === '' && node.opType === 'Sqrt') this.matchNorm(node);
  }

  private producer(value: string | undefined, op: string): Node | undefined {
    const node = value === undefined ? undefined : this.links.producer.get(value);
    return node !== undefined && node.domain === '' && node.opType === op ? node : undefined;
  }

  /** The only consumer of a node's first output, if it is `op`; `other` is its other operand. */
  private next(node: Node, op: string): { node: Node; other: string } | undefined {
    const out = node.outputs[0];
    const list = out === undefined ? [] : (this.links.consumers.get(out) ?? []);
    const consumer = list[0];
    if (list.length !== 1 || consumer === undefined || consumer.domain !== '' || consumer.opType !== op) return undefined;
    const [first, second] = consumer.inputs;
    if (first === undefined || second === undefined || consumer.inputs.length !== 2) return undefined;
    return { node: consumer, other: first === out ? second : first };
  }

  private isConstant(value: string): boolean {
    return this.tracer.origin(value) !== 'activation';
  }

  /** sqrt(mean(d^2) + eps), normalised d / sqrt(...), then optional x scale and + shift. */
  private matchNorm(sqrt: Node): void {
    const addEps = this.producer(sqrt.inputs[0], 'Add');
    if (addEps === undefined) return;
    const variance = addEps.inputs.find((i) => !this.isConstant(i));
    const meanSquare = this.producer(variance, 'ReduceMean');
    if (meanSquare === undefined || !addEps.inputs.some((i) => this.isConstant(i))) return;
    const square = this.producer(meanSquare.inputs[0], 'Pow') ?? this.producer(meanSquare.inputs[0], 'Mul');
    if (square === undefined) return;
    const [centred, exponent] = square.inputs;
    if (centred === undefined || exponent === undefined) return;
    if (square.opType === 'Pow' ? !this.isConstant(exponent) : exponent !== centred) return;
    // LayerNorm centres the input first (x - mean(x)); RMSNorm does not.
    const sub = this.producer(centred, 'Sub');
    const mean = sub && this.producer(sub.inputs[1], 'ReduceMean');
    const centredInput = sub?.inputs[0];
    const centring = sub !== undefined && mean !== undefined && centredInput !== undefined && mean.inputs[0] === centredInput ? [mean, sub] : [];
    const input = centring.length > 0 && centredInput !== undefined ? centredInput : centred;
    const divide = this.next(sqrt, 'Div');
    if (divide === undefined || divide.node.inputs[0] !== centred) return;
    const nodes: Node[] = [...centring, square, meanSquare, addEps, sqrt, divide.node];
    const norm: FusedNorm = { op: centring.length > 0 ? 'LayerNormalization' : 'RMSNormalization', input };
    const scale = this.next(divide.node, 'Mul');
    if (scale !== undefined && this.tracer.isWeight(scale.other)) {
      nodes.push(scale.node);
      norm.scale = scale.other;
      const shift = this.next(scale.node, 'Add');
      if (shift !== undefined && this.tracer.isWeight(shift.other)) {
        nodes.push(shift.node);
        norm.shift = shift.other;
      }
    }
    // Every intermediate value must stay inside the pattern (the input may feed others).
    const inside = new Set(nodes);
    for (const node of nodes.slice(0, -1)) {
      const out = node.outputs[0];
      if (out === undefined || this.graphOutputs.has(out) || (this.links.consumers.get(out) ?? []).some((c) => !inside.has(c))) return;
    }
    const final = last(nodes, 'fused norm nodes');
    for (const node of nodes.slice(0, -1)) this.absorbed.add(node);
    this.norms.set(final, norm);
  }
}

/**
 * Static element count of a value; undefined for non-tensors and for sizes known only at run time
 * (NonZero's count: no --dim binds them, so the op is left out). Other unbound symbols are the
 * usual error naming the flag.
 */
function elementsOf(c: LoweringContext, name: string): number | undefined {
  const info = c.knownInfo(name);
  if (info === undefined || info.kind !== undefined || info.shape === undefined) return undefined;
  if (unboundSymbols(info.shape as Dim[]).some((s) => s.startsWith(RUNTIME_DIM_PREFIX))) return undefined;
  return elementCount(c.shape(name));
}

/** The vector layer of a node, or undefined when the node is not vector work. */
export function lowerVectorOp(c: LoweringContext, fusions: VectorFusions): LayerDraft | undefined {
  const node = c.node;
  if (fusions.absorbed.has(node)) return undefined;
  const norm = fusions.norms.get(node);
  const row = opRowOf(node);
  const opClass = norm !== undefined ? 'layernorm' : row?.vectorClass;
  const output = node.outputs[0];
  if (opClass === undefined || output === undefined || output === '') return undefined;
  const info = c.knownInfo(output);
  if (info === undefined || !isFloatDType(info.dtype) || info.value !== undefined) return undefined;
  const inputs = norm !== undefined ? [norm.input, norm.scale, norm.shift].filter((i): i is string => i !== undefined) : node.inputs.filter((i) => i !== '');
  // An exact-length copy: the layer keeps it, and filter's result has room for 17.
  const activations = inputs.filter((i) => c.origin(i) === 'activation').slice();
  if (activations.length === 0) return undefined;
  const outElements = elementsOf(c, output);
  const inElements = activations.map((i) => elementsOf(c, i));
  if (outElements === undefined || inElements.some((n) => n === undefined)) return undefined;
  const largestIn = Math.max(...(inElements as number[]));
  if (Math.max(outElements, largestIn) <= TINY_VECTOR_ELEMENTS) return undefined;

  const parameters = (positions: readonly number[] = []): string[] => positions.map((p) => node.inputs[p]).filter((t): t is string => t !== undefined && t !== '' && c.isWeight(t));
  const weightTensors = norm !== undefined ? (norm.scale ? [norm.scale] : []) : parameters(row?.parameterInputs?.scale);
  const biasTensors = norm !== undefined ? (norm.shift ? [norm.shift] : []) : parameters(row?.parameterInputs?.shift);
  const bytes = (name: string): number => c.elementBytes(name) * (elementsOf(c, name) ?? 0);
  return {
    kind: 'vector',
    ...(norm !== undefined ? { op: norm.op } : {}),
    gemm: { m: 0, n: 0, k: 0 },
    count: 0,
    weightTensors,
    biasTensors,
    activationInputs: activations,
    output,
    vector: {
      opClass,
      elements: workElements(c, opClass, largestIn, outElements),
      // Every operand is read: activations, but also weight-derived tensors (a position embedding) and parameters.
      bytesIn: inputs.reduce((a, i) => a + bytes(i), 0),
      bytesOut: bytes(output),
      hasParams: weightTensors.length + biasTensors.length > 0,
    },
  };
}

/** Reductions and global pools touch every input element; a windowed pool every window element. */
function workElements(c: LoweringContext, opClass: VectorOpClass, inElements: number, outElements: number): number {
  if (opClass === 'reduce' || c.node.opType.startsWith('Global')) return inElements;
  if (opClass === 'pool') return outElements * elementCount(c.intsAttr('kernel_shape') ?? []);
  return outElements;
}
