/**
 * Which values are weights: an operand is a weight when it is a parameter-preserving view of
 * initializers — the initializer itself, or one reached through ops whose op-table row is a
 * `weightView` (Identity, Cast, Reshape, (Un)Squeeze, Flatten, Transpose, Concat,
 * (De)QuantizeLinear: shape/op-table.ts) — as exporters emit for
 * fp16 casts, QDQ quantization and transposed or packed weights. Its parameters are those of the
 * source initializers (for QDQ: the quantized weight, not the scale or zero point).
 */
import { valueLinks, type ValueLinks } from '../ir/graph.js';
import type { InferredModel } from '../shape/infer.js';
import { opRowOf } from '../shape/rules/index.js';

/** Where a value's data comes from: graph inputs, initializers only, or neither (constants). */
export type ValueOrigin = 'activation' | 'weight' | 'constant';

export class WeightTracer {
  private readonly traced = new Map<string, string[] | undefined>();
  private readonly origins = new Map<string, ValueOrigin>();
  private originsDone = false;

  private readonly links: ValueLinks;

  constructor(private readonly inferred: InferredModel) {
    this.links = valueLinks(inferred.order);
  }

  /** The initializers a value is a parameter-preserving view of; undefined when it is not a weight. */
  sources(name: string): string[] | undefined {
    if (this.inferred.initializerNames.has(name)) return [name];
    if (this.traced.has(name)) return this.traced.get(name);
    this.traced.set(name, undefined); // guards against cycles while tracing
    const node = this.links.producer.get(name);
    const mode = node === undefined ? undefined : opRowOf(node)?.weightView;
    let result: string[] | undefined;
    if (node !== undefined && mode !== undefined) {
      const inputs = mode === 'first' ? node.inputs.slice(0, 1) : node.inputs.filter((i) => i !== '');
      const found = new Set<string>();
      const collected: string[] = [];
      let complete = inputs.length > 0;
      for (const input of inputs) {
        const s = this.sources(input);
        if (s === undefined) {
          complete = false;
          break;
        }
        for (const x of s) {
          if (found.has(x)) continue;
          collected.push(x);
          found.add(x);
        }
      }
      result = complete ? collected : undefined;
    }
    this.traced.set(name, result);
    return result;
  }

  isWeight(name: string): boolean {
    return this.inferred.initializerNames.has(name) || this.sources(name) !== undefined;
  }

  /** 'activation' if any graph input feeds the value; else 'weight' if any initializer does. */
  origin(name: string): ValueOrigin {
    if (this.inferred.initializerNames.has(name)) return 'weight';
    // A graph input, or a value of an enclosing scope this graph's nodes do not produce: data.
    return this.nodeOrigins().get(name) ?? 'activation';
  }

  /** The origin of every node output, in one pass over the nodes in execution order (asked of most values once lowering starts). */
  private nodeOrigins(): ReadonlyMap<string, ValueOrigin> {
    if (this.originsDone) return this.origins;
    this.originsDone = true;
    const initializers = this.inferred.initializerNames;
    for (const node of this.inferred.order) {
      let origin: ValueOrigin = 'constant';
      for (const input of node.inputs) {
        if (input === '') continue;
        const o = initializers.has(input) ? 'weight' : (this.origins.get(input) ?? 'activation');
        if (o === 'activation') {
          origin = 'activation';
          break;
        }
        if (o === 'weight') origin = 'weight';
      }
      for (const output of node.outputs) if (output !== '') this.origins.set(output, origin);
    }
    return this.origins;
  }
}

/** One tracer per inferred graph: lowering and its warnings ask about the same values. */
const tracers = new WeakMap<InferredModel, WeightTracer>();

export function weightTracerOf(inferred: InferredModel): WeightTracer {
  let tracer = tracers.get(inferred);
  if (tracer === undefined) {
    tracer = new WeightTracer(inferred);
    tracers.set(inferred, tracer);
  }
  return tracer;
}

/**
 * GEMM operands computed from initializers through an op that does not preserve parameters
 * (MatMul(x, Mul(W, 2)), for instance): their parameters and weight-gradient collective are missing
 * from the workload. One warning line each.
 */
export function untracedWeightOperands(inferred: InferredModel, tracer = weightTracerOf(inferred)): string[] {
  const lines: string[] = [];
  for (const node of inferred.order) {
    const positions = opRowOf(node)?.weightInputs;
    for (const i of positions ?? []) {
      const operand = node.inputs[i];
      if (operand === undefined || operand === '' || tracer.isWeight(operand) || tracer.origin(operand) !== 'weight') continue;
      lines.push(`node '${node.name}' (${node.opType}): operand '${operand}' is computed from initializers through an op that does not preserve parameters; its parameters and weight-gradient collective are not in the workload`);
    }
  }
  return lines;
}
