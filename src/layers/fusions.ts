/**
 * Exported pieces of one function, found from the data flow of the graph (never from names) so
 * each becomes one vector layer:
 * - norms written op by op, as PyTorch exports LayerNorm, HF's LlamaRMSNorm, T5LayerNorm and
 *   Gemma's RMSNorm: mean(d^2) over the last axis (d = x, or x - mean(x) for LayerNorm), + eps,
 *   then d / sqrt(.), d x 1/sqrt(.) or d x (.)^p, with optional Casts anywhere (the fp32
 *   upcast of fp16/bf16 models), then x scale (a weight, through casts or Gemma's `1 + weight`)
 *   and + shift, operands in either order; the norm owns its scale and shift;
 * - GELU as exported at opset < 20 (`x * 0.5 * (1 + erf(x / sqrt 2))`, the tanh approximation, in
 *   any operand order): element-wise ops on one input x and constants, with one Erf or Tanh, x
 *   read again by the closing product. One activation keeps only its input for backward.
 * A candidate is fused only when every value inside it is read only inside it.
 */
import { last } from '../errors.js';
import type { Node, ValueLinks } from '../ir/graph.js';
import type { VectorOpClass } from '../ir/op-class.js';
import type { InferredModel } from '../shape/infer.js';
import type { WeightTracer } from './weights.js';

/** One fused function: the nodes it absorbs end at the node it is keyed by. */
export interface FusedFunction {
  op: 'LayerNormalization' | 'RMSNormalization' | 'Gelu';
  opClass: Extract<VectorOpClass, 'layernorm' | 'gelu'>;
  /** The activation it reads (before any absorbed cast). */
  input: string;
  /** Source initializers of its trained scale and shift. */
  scale: string[];
  shift: string[];
}

/** Ops a GELU's expansion is made of. */
const GELU_OPS = new Set(['Add', 'Sub', 'Mul', 'Div', 'Pow', 'Erf', 'Tanh', 'Cast', 'Neg']);
/** A GELU expansion has about ten nodes; a longer element-wise run is not one activation. */
const MAX_GELU_NODES = 24;
/** How far back from an Erf or Tanh its input x may sit (x^3, + x, x sqrt(2/pi): four ops in the tanh form). */
const MAX_GELU_DEPTH = 8;

/** Decomposed norms and activations of one graph, found once before the walk. */
export class VectorFusions {
  private readonly links: ValueLinks;
  /** Final node of each fused function -> the function. */
  readonly fused = new Map<Node, FusedFunction>();
  /** Nodes inside a fused function other than its final node: no layer of their own. */
  readonly absorbed = new Set<Node>();
  private readonly graphOutputs: ReadonlySet<string>;

  constructor(private readonly inferred: InferredModel, readonly tracer: WeightTracer) {
    this.graphOutputs = new Set(inferred.model.graph.outputs.map((o) => o.name));
    this.links = tracer.index.links;
    for (const node of inferred.order) {
      if (node.domain !== '') continue;
      if (node.opType === 'ReduceMean') this.matchNorm(node);
      else if (node.opType === 'Erf' || node.opType === 'Tanh') this.matchGelu(node);
    }
  }

  private producerOf(value: string | undefined): Node | undefined {
    const node = value === undefined || value === '' ? undefined : this.links.producer.get(value);
    return node !== undefined && node.domain === '' ? node : undefined;
  }

  private producer(value: string | undefined, ...ops: string[]): Node | undefined {
    const node = this.producerOf(value);
    return node !== undefined && ops.includes(node.opType) ? node : undefined;
  }

  private consumers(value: string | undefined): readonly Node[] {
    return value === undefined ? [] : (this.links.consumers.get(value) ?? []);
  }

  /** The only consumer of a node's first output, if it is one of `ops`; `other` is its other operand ('' for a unary op). */
  private next(node: Node, ...ops: string[]): { node: Node; other: string } | undefined {
    const out = node.outputs[0];
    const list = this.consumers(out);
    const consumer = list[0];
    if (list.length !== 1 || consumer === undefined || consumer.domain !== '' || !ops.includes(consumer.opType)) return undefined;
    if (consumer.inputs.length === 1) return { node: consumer, other: '' };
    const [first, second] = consumer.inputs;
    if (first === undefined || second === undefined || consumer.inputs.length !== 2) return undefined;
    return { node: consumer, other: first === out ? second : first };
  }

  private isConstant(value: string): boolean {
    return this.tracer.origin(value) !== 'activation';
  }

  /** The value before any Casts. */
  private uncast(value: string): string {
    let v = value;
    for (let cast = this.producer(v, 'Cast'); cast !== undefined; cast = this.producer(v, 'Cast')) v = cast.inputs[0] ?? v;
    return v;
  }

  /** Whether two values are one tensor up to Casts (T5 casts x twice, once per use). */
  private same(a: string, b: string): boolean {
    return this.uncast(a) === this.uncast(b);
  }

  /**
   * The initializers a norm's scale or shift comes from: a weight (through casts and reshapes), or
   * a weight offset or scaled by a constant (Gemma's `1 + weight`); undefined for anything else.
   */
  private parameterSources(value: string, depth = 0): string[] | undefined {
    if (this.tracer.origin(value) !== 'weight') return undefined;
    const sources = this.tracer.sources(value);
    if (sources !== undefined) return sources;
    const node = this.producer(value, 'Add', 'Sub', 'Mul', 'Cast');
    if (node === undefined || depth > 4) return undefined;
    const parameters = node.inputs.filter((i) => i !== '' && this.tracer.origin(i) === 'weight');
    const [only] = parameters;
    if (parameters.length !== 1 || only === undefined) return undefined;
    return this.parameterSources(only, depth + 1);
  }

  /** The static shape of a value, if inference knows it. */
  private shapeOf(value: string): number[] | undefined {
    const shape = this.inferred.values.get(value)?.shape;
    return shape?.every((d) => typeof d === 'number') ? (shape as number[]) : undefined;
  }

  /** A ReduceMean over the last axis of its input, keeping the dims (a norm's statistic). */
  private meansLastAxis(node: Node): boolean {
    const keepdims = node.attributes.get('keepdims');
    if (keepdims?.kind === 'int' && keepdims.value === 0) return false;
    const rank = this.inferred.values.get(node.inputs[0] ?? '')?.shape?.length;
    if (rank === undefined) return false;
    const attr = node.attributes.get('axes');
    const folded = this.inferred.values.get(node.inputs[1] ?? '')?.value;
    const axes = attr?.kind === 'ints' ? attr.value : folded?.every((a) => typeof a === 'number') ? (folded as number[]) : rank === 1 ? [0] : undefined;
    return axes !== undefined && axes.length === 1 && ((axes[0] ?? 0) + rank) % rank === rank - 1;
  }

  /** mean(d^2) over the last axis, + eps, an inverse square root, d normalised by it; then casts, scale and shift. */
  private matchNorm(meanSquare: Node): void {
    if (!this.meansLastAxis(meanSquare)) return;
    const square = this.producer(meanSquare.inputs[0], 'Pow', 'Mul');
    if (square === undefined) return;
    const [squared, exponent] = square.inputs;
    if (squared === undefined || exponent === undefined) return;
    if (square.opType === 'Pow' ? !this.isConstant(exponent) : !this.same(exponent, squared)) return;
    // LayerNorm centres the input first (x - mean(x)); RMSNorm does not.
    const centredValue = this.uncast(squared);
    const sub = this.producer(centredValue, 'Sub');
    const mean = sub && this.producer(sub.inputs[1], 'ReduceMean');
    const centring = sub !== undefined && mean !== undefined && this.meansLastAxis(mean) && this.same(mean.inputs[0] ?? '', sub.inputs[0] ?? '') ? [mean, sub] : [];
    const nodes: Node[] = [...centring, square, meanSquare];
    const addEps = this.next(meanSquare, 'Add');
    if (addEps === undefined || !this.isConstant(addEps.other)) return;
    nodes.push(addEps.node);
    const normalised = this.normalise(addEps.node, squared, nodes);
    if (normalised === undefined) return;
    let tail = normalised;
    const scale: string[] = [];
    const shift: string[] = [];
    const takeCasts = (): void => {
      for (let cast = this.next(tail, 'Cast'); cast !== undefined; cast = this.next(tail, 'Cast')) {
        nodes.push(cast.node);
        tail = cast.node;
      }
    };
    takeCasts();
    const outShape = this.shapeOf(tail.outputs[0] ?? '') ?? [];
    const width = outShape[outShape.length - 1];
    const parameterOf = (op: string): string[] | undefined => {
      const step = this.next(tail, op);
      const sources = step === undefined ? undefined : this.parameterSources(step.other);
      const shape = step === undefined ? undefined : this.shapeOf(step.other);
      // One value per feature (a [h] vector, or [1, 1, h]): a scale, not a mask or another tensor.
      if (step === undefined || sources === undefined || shape === undefined || shape.reduce((a, b) => a * b, 1) !== width) return undefined;
      nodes.push(step.node);
      tail = step.node;
      takeCasts();
      return sources;
    };
    const scales = parameterOf('Mul');
    if (scales !== undefined) {
      scale.push(...scales);
      shift.push(...(parameterOf('Add') ?? []));
    }
    if (!this.closed(nodes)) return;
    // The input: the activation every node reads from outside, before the casts that only the norm reads.
    const input = this.singleInput(nodes);
    if (input === undefined) return;
    this.fuse(nodes, { op: centring.length > 0 ? 'LayerNormalization' : 'RMSNormalization', opClass: 'layernorm', input, scale, shift });
  }

  /**
   * From var + eps to the normalised value, pushing the nodes on the way: d / sqrt(v), d x (1 / sqrt(v)),
   * d x reciprocal(sqrt(v)), or d x v^p; d is the squared value up to casts. The normalising node, or undefined.
   */
  private normalise(addEps: Node, squared: string, nodes: Node[]): Node | undefined {
    const isD = (value: string): boolean => this.same(value, squared) || this.sameCentred(value, squared);
    const sqrt = this.next(addEps, 'Sqrt');
    let inverse: Node | undefined;
    if (sqrt !== undefined) {
      nodes.push(sqrt.node);
      const div = this.next(sqrt.node, 'Div');
      if (div !== undefined && div.node.inputs[1] === sqrt.node.outputs[0]) {
        const numerator = div.node.inputs[0] ?? '';
        if (isD(numerator)) {
          nodes.push(div.node);
          return div.node;
        }
        if (!this.isConstant(numerator)) return undefined;
        inverse = div.node;
      } else inverse = this.next(sqrt.node, 'Reciprocal')?.node;
    } else {
      const power = this.next(addEps, 'Pow');
      if (power !== undefined && power.node.inputs[0] === addEps.outputs[0] && this.isConstant(power.other)) inverse = power.node;
    }
    if (inverse === undefined) return undefined;
    nodes.push(inverse);
    const product = this.next(inverse, 'Mul');
    if (product === undefined || !isD(product.other)) return undefined;
    nodes.push(product.node);
    return product.node;
  }

  /** Two Sub nodes computing the same x - mean(x) (an export that did not merge them). */
  private sameCentred(a: string, b: string): boolean {
    const sa = this.producer(this.uncast(a), 'Sub');
    const sb = this.producer(this.uncast(b), 'Sub');
    return sa !== undefined && sb !== undefined && this.same(sa.inputs[0] ?? '', sb.inputs[0] ?? '') && this.same(sa.inputs[1] ?? '', sb.inputs[1] ?? '');
  }

  /** Every value a node of the candidate writes (bar the last node's) is read only inside it. */
  private closed(nodes: readonly Node[]): boolean {
    const inside = new Set(nodes);
    const final = last(nodes, 'fused nodes');
    for (const node of nodes) {
      if (node === final) continue;
      for (const out of node.outputs) {
        if (out === '') continue;
        if (this.graphOutputs.has(out) || this.consumers(out).some((c) => !inside.has(c))) return false;
      }
    }
    return true;
  }

  /**
   * The one activation the candidate reads from outside, after absorbing the Casts of it that only
   * the candidate reads (added to `nodes`); undefined when it reads two.
   */
  private singleInput(nodes: Node[]): string | undefined {
    const inside = new Set(nodes);
    const produced = new Set(nodes.flatMap((n) => n.outputs));
    const entries = new Set<string>();
    for (const node of nodes) for (const i of node.inputs) if (i !== '' && !produced.has(i) && !this.isConstant(i)) entries.add(i);
    // Climb through casts whose every reader is inside.
    let changed = true;
    while (changed) {
      changed = false;
      for (const value of entries) {
        const cast = this.producer(value, "Cast");
        if (cast === undefined || this.graphOutputs.has(value) || this.consumers(value).some((c) => !inside.has(c))) continue;
        entries.delete(value);
        entries.add(cast.inputs[0] ?? '');
        if (!inside.has(cast)) {
          inside.add(cast);
          nodes.unshift(cast);
        }
        changed = true;
      }
    }
    const [input] = entries;
    return entries.size === 1 ? input : undefined;
  }

  /** x Phi(x) for one input x: the element-wise nodes that are functions of x alone, around one Erf or Tanh. */
  private matchGelu(core: Node): void {
    if (this.absorbed.has(core)) return;
    // Candidates for x: the activations the core's input is computed from, nearest first.
    const candidates: string[] = [];
    const stack: { value: string; depth: number }[] = [{ value: core.inputs[0] ?? '', depth: 0 }];
    for (let item = stack.shift(); item !== undefined; item = stack.shift()) {
      if (item.value === '' || candidates.includes(item.value) || this.isConstant(item.value)) continue;
      candidates.push(item.value);
      const node = this.producer(item.value, ...GELU_OPS);
      if (node === undefined || item.depth >= MAX_GELU_DEPTH || node.opType === 'Erf' || node.opType === 'Tanh') continue;
      for (const i of node.inputs) stack.push({ value: i, depth: item.depth + 1 });
    }
    for (const x of candidates) {
      const region = this.functionOf(x);
      if (region === undefined || !region.includes(core)) continue;
      // Closed by the product (then perhaps a cast back from an fp32 upcast).
      const closing = [...region].reverse().find((n) => n.opType !== 'Cast');
      if (closing?.opType !== 'Mul' || region.filter((n) => n.opType === 'Erf' || n.opType === 'Tanh').length !== 1) continue;
      // The closing product reads x again (x times a function of x), as GELU, not tanh(x) / 2, does.
      if (region.filter((n) => n.inputs.includes(x)).length < 2) continue;
      // An fp32 upcast of x that only the GELU reads is part of it.
      const input = this.singleInput(region) ?? x;
      this.fuse(region, { op: 'Gelu', opClass: 'gelu', input, scale: [], shift: [] });
      return;
    }
  }

  /**
   * The element-wise nodes computing a function of `x` and constants only, in execution order, if
   * they have exactly one output read elsewhere (it ends the list); undefined otherwise.
   */
  private functionOf(x: string): Node[] | undefined {
    const values = new Set([x]);
    const region = new Set<Node>();
    const queue = [x];
    for (let v = queue.shift(); v !== undefined; v = queue.shift()) {
      for (const node of this.consumers(v)) {
        if (region.has(node) || node.domain !== '' || !GELU_OPS.has(node.opType)) continue;
        if (!node.inputs.every((i) => i === '' || values.has(i) || this.isConstant(i))) continue;
        region.add(node);
        if (region.size > MAX_GELU_NODES) return undefined;
        for (const o of node.outputs) {
          values.add(o);
          queue.push(o);
        }
      }
    }
    const position = this.positions();
    const nodes = [...region].sort((a, b) => (position.get(a) ?? 0) - (position.get(b) ?? 0));
    const exits = nodes.filter((n) => n.outputs.some((o) => this.graphOutputs.has(o) || this.consumers(o).some((c) => !region.has(c))));
    if (exits.length !== 1 || exits[0] !== last(nodes, 'GELU nodes')) return undefined;
    return nodes;
  }

  /** Each node's place in execution order, built when a GELU candidate first needs it. */
  private positionOf: Map<Node, number> | undefined;

  private positions(): ReadonlyMap<Node, number> {
    this.positionOf ??= new Map(this.inferred.order.map((n, i) => [n, i]));
    return this.positionOf;
  }

  private fuse(nodes: readonly Node[], fused: FusedFunction): void {
    // A node belongs to one fused function at most (the first found keeps it).
    if (nodes.some((n) => this.absorbed.has(n) || this.fused.has(n))) return;
    const final = last(nodes, 'fused nodes');
    for (const node of nodes) if (node !== final) this.absorbed.add(node);
    this.fused.set(final, fused);
  }
}
