/**
 * Which values are weights: an operand is a weight when it is a parameter-preserving view of
 * initializers (or of float Constant nodes, which exporters use for weights inside If branches)
 * — the initializer itself, or one reached through ops whose op-table row is a
 * `weightView` (Identity, Cast, Reshape, (Un)Squeeze, Flatten, Transpose, Concat,
 * (De)QuantizeLinear: shape/op-table.ts), or a Concat of Slices that reassemble a whole weight
 * (PyTorch's LSTM export reorders each weight's gates so) — as exporters emit for
 * fp16 casts, QDQ quantization and transposed or packed weights. Its parameters are those of the
 * source initializers (for QDQ: the quantized weight, not the scale or zero point).
 */
import { isFloatDType } from '../ir/dtype.js';
import type { Node } from '../ir/graph.js';
import type { InferredModel } from '../shape/infer.js';
import { opRowOf } from '../shape/rules/index.js';
import { NO_VALUE, ValueIndex, type ValueOrigin } from './value-index.js';

export type { ValueOrigin };

/** Marks a value traced and found not to be a weight. */
const NOT_A_WEIGHT: string[] = [];

/** Traces values to the initializers they view, each value once (lowering and its warnings share one tracer). */
export class WeightTracer {
  /**
   * Per value id: its source initializers, NOT_A_WEIGHT, or undefined while not traced. Made on
   * the first trace: lowering asks none for an initializer operand (most weights), so a graph whose
   * weights are all initializers never fills one (1.2 MB on the 100k-node chain).
   */
  private tracedById: (string[] | undefined)[] | undefined;

  constructor(readonly index: ValueIndex) {}

  private get traced(): (string[] | undefined)[] {
    // Pre-sized: writes into holes would turn the array into a hash table.
    this.tracedById ??= new Array<string[] | undefined>(this.index.size).fill(undefined);
    return this.tracedById;
  }

  /** The initializers a value is a parameter-preserving view of; undefined when it is not a weight. */
  sources(name: string): string[] | undefined {
    const id = this.index.idOf(name);
    return id === undefined ? undefined : this.sourcesOf(id);
  }

  sourcesOf(id: number): string[] | undefined {
    const index = this.index;
    if (id === NO_VALUE) return undefined;
    const known = this.traced[id];
    // An initializer's list is made once (layers keep it: lists are read, never changed).
    if (index.isInitializer(id)) {
      if (known !== undefined) return known;
      const own = [index.names[id] ?? ''];
      this.traced[id] = own;
      return own;
    }
    if (known !== undefined) return known === NOT_A_WEIGHT ? undefined : known;
    this.traced[id] = NOT_A_WEIGHT; // guards against cycles while tracing
    const node = index.producer(id);
    // A float tensor a Constant node holds is a weight like an initializer: exporters inline the
    // weights of If branches so (Silero VAD v5's network sits in one).
    if (node !== undefined && isWeightConstant(node)) {
      const own = [index.names[id] ?? ''];
      this.traced[id] = own;
      return own;
    }
    const mode = node === undefined ? undefined : opRowOf(node)?.weightView;
    let result: string[] | undefined;
    if (node !== undefined && mode !== undefined) {
      const position = index.producerPosition(id);
      const all = index.inputsOf(position);
      const inputs = mode === 'first' ? all.slice(0, 1) : all.filter((i) => i !== NO_VALUE);
      const collected: string[] = [];
      let complete = inputs.length > 0;
      const reassembled = node.opType === 'Concat' ? this.reassembledSlices(inputs) : undefined;
      for (const input of inputs) {
        const s = reassembled?.get(input) ?? this.sourcesOf(input);
        if (s === undefined) {
          complete = false;
          break;
        }
        for (const x of s) if (!collected.includes(x)) collected.push(x);
      }
      result = complete ? collected.slice() : undefined; // exact length: layers keep it
    }
    this.traced[id] = result ?? NOT_A_WEIGHT;
    return result;
  }

  /**
   * Concat inputs that are Slices of one weight whose pieces, all in this Concat, hold exactly its
   * elements (a permutation of its parts, e.g. LSTM gates reordered): each maps to the weight's
   * sources. A Slice that keeps only part of a weight is not a view (its parameters are not all used).
   */
  private reassembledSlices(inputs: readonly number[]): Map<number, string[]> | undefined {
    const index = this.index;
    const pieces = new Map<number, { slices: number[]; elements: number }>();
    for (const input of inputs) {
      const producer = index.producer(input);
      if (producer?.opType !== 'Slice' || producer.domain !== '') continue;
      const data = index.inputsOf(index.producerPosition(input))[0] ?? NO_VALUE;
      const shape = index.info(input)?.shape;
      if (data === NO_VALUE || shape === undefined || !shape.every((d) => typeof d === 'number')) continue;
      const entry = pieces.get(data) ?? { slices: [], elements: 0 };
      if (!entry.slices.includes(input)) {
        entry.slices.push(input);
        entry.elements += (shape as number[]).reduce((a, b) => a * b, 1);
      }
      pieces.set(data, entry);
    }
    let out: Map<number, string[]> | undefined;
    for (const [data, { slices, elements }] of pieces) {
      const shape = index.info(data)?.shape;
      const whole = shape?.every((d) => typeof d === 'number') === true ? (shape as number[]).reduce((a, b) => a * b, 1) : -1;
      const sources = elements === whole ? this.sourcesOf(data) : undefined;
      if (sources === undefined) continue;
      out ??= new Map();
      for (const slice of slices) out.set(slice, sources);
    }
    return out;
  }

  isWeight(name: string): boolean {
    const id = this.index.idOf(name);
    return id !== undefined && this.isWeightId(id);
  }

  isWeightId(id: number): boolean {
    return this.index.isInitializer(id) || this.sourcesOf(id) !== undefined;
  }

  /** 'activation' if any graph input feeds the value; else 'weight' if any initializer does. */
  origin(name: string): ValueOrigin {
    const id = this.index.idOf(name);
    // A value this graph does not know: an enclosing scope's, i.e. data.
    return id === undefined ? 'activation' : this.index.origin(id);
  }
}

/** A Constant node holding a float tensor (`value`), not a shape argument or a scalar attribute. */
export function isWeightConstant(node: Node): boolean {
  if (node.opType !== 'Constant' || node.domain !== '') return false;
  const value = node.attributes.get('value');
  return value?.kind === 'tensor' && isFloatDType(value.value.dtype);
}

/** A tracer of an inferred graph's values, on a new index of them. */
export function weightTracerOf(inferred: InferredModel): WeightTracer {
  return new WeightTracer(new ValueIndex(inferred));
}

/**
 * GEMM operands computed from initializers through an op that does not preserve parameters
 * (MatMul(x, Mul(W, 2)), for instance): their parameters and weight-gradient collective are missing
 * from the workload. One warning line each.
 */
export function untracedWeightOperands(inferred: InferredModel, tracer = weightTracerOf(inferred)): string[] {
  const lines: string[] = [];
  inferred.order.forEach((node, position) => {
    const positions = opRowOf(node)?.weightInputs;
    for (const i of positions ?? []) {
      const operand = node.inputs[i];
      if (operand === undefined || operand === '') continue;
      const id = tracer.index.inputId(position, i);
      if (tracer.isWeightId(id) || tracer.index.origin(id) !== 'weight') continue;
      lines.push(`node '${node.name}' (${node.opType}): operand '${operand}' is computed from initializers through an op that does not preserve parameters; its parameters and weight-gradient collective are not in the workload`);
    }
  });
  return lines;
}
