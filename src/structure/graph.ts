/**
 * The lowered graph as structure recognition walks it: which layer writes a value, which layers
 * read it, and walks through the ops between layers by their data flow (the op table's `flow`:
 * layout, linear, nonlinear; shape/op-table.ts). Walks stop at GEMM and embedding layers (the
 * pattern's corners) and pass through vector work; values that only carry shapes (folded integer
 * tensors) and weights are not followed.
 */
import { isFloatDType } from '../ir/dtype.js';
import { valueLinks, type Node } from '../ir/graph.js';
import type { Layer } from '../layers/types.js';
import type { InferredModel } from '../shape/infer.js';
import { backwardKeepsOf, flowOf, type DataFlow } from '../shape/op-table.js';
import { opRowOf } from '../shape/rules/index.js';

/** Which flows a walk may cross. */
export type FlowSet = ReadonlySet<DataFlow>;
export const LAYOUT: FlowSet = new Set(['layout']);
export const LAYOUT_LINEAR: FlowSet = new Set(['layout', 'linear']);
export const ANY_FLOW: FlowSet = new Set(['layout', 'linear', 'nonlinear']);

export interface BehindResult {
  /** Corner layers (GEMM, attention product, embedding) reached. */
  layers: Set<number>;
  /** Corner layers reached through at least one unary nonlinearity on the way. */
  throughNonlinear: Set<number>;
  /** Whether the walk crossed a product of two activations (a gate). */
  bilinear: boolean;
}

export class StructureGraph {
  readonly producer: ReadonlyMap<string, Node>;
  readonly consumers: ReadonlyMap<string, readonly Node[]>;
  /** Corner layer (not vector) by the value it writes; the first of a fused node's layers. */
  readonly cornerByOutput = new Map<string, number>();
  /** Any layer by the value it writes (vector layers included). */
  readonly layerByOutput = new Map<string, number>();
  /** Layers by an activation value they read. */
  readonly readers = new Map<string, number[]>();
  readonly graphInputs: ReadonlySet<string>;

  constructor(readonly inferred: InferredModel, readonly layers: readonly Layer[]) {
    ({ producer: this.producer, consumers: this.consumers } = valueLinks(inferred.order));
    layers.forEach((l, i) => {
      if (!this.layerByOutput.has(l.output)) this.layerByOutput.set(l.output, i);
      if (l.kind !== 'vector' && !this.cornerByOutput.has(l.output)) this.cornerByOutput.set(l.output, i);
      for (const a of l.activationInputs) {
        const list = this.readers.get(a);
        if (list === undefined) this.readers.set(a, [i]);
        else list.push(i);
      }
    });
    this.graphInputs = new Set(inferred.model.graph.inputs.map((i) => i.name).filter((n) => !inferred.initializerNames.has(n)));
  }

  /** A value that carries data (not a weight, a folded shape tensor or an integer index). */
  isData(value: string): boolean {
    if (value === '' || this.inferred.initializerNames.has(value)) return false;
    const info = this.inferred.values.get(value);
    if (info === undefined) return true;
    if (info.value !== undefined) return false;
    return info.dtype === undefined || isFloatDType(info.dtype);
  }

  flow(node: Node): DataFlow | 'opaque' {
    const flow = flowOf(opRowOf(node));
    // A product or quotient of two activations is no longer linear in either: a gate.
    if (flow === 'linear' && this.isBilinear(node)) return 'nonlinear';
    return flow;
  }

  /**
   * Whether the node is a product of two activations (a gate): a product (a linear op whose
   * backward keeps its operands, as Mul and Div do in the op table) with two operands computed
   * by GEMMs. A factor looked up or computed from the inputs alone (rotary cos/sin tables
   * gathered by position ids, a mask) scales linearly.
   */
  isBilinear(node: Node): boolean {
    if (!isProduct(node)) return false;
    return node.inputs.filter((i) => this.isData(i) && this.computedByGemm(i)).length >= 2;
  }

  private gemmComputed: Set<string> | undefined;

  /** Whether a GEMM layer (a projection or an attention product) is behind the value. */
  computedByGemm(value: string): boolean {
    if (this.gemmComputed === undefined) {
      const computed = new Set<string>();
      for (const l of this.layers) if (l.kind === 'gemm' || l.kind === 'activation-gemm') computed.add(l.output);
      // Nodes in topological order: a value is GEMM-computed when any input is.
      for (const node of this.inferred.order) {
        if (node.outputs.some((o) => computed.has(o)) || !node.inputs.some((i) => computed.has(i))) continue;
        for (const o of node.outputs) if (o !== '') computed.add(o);
      }
      this.gemmComputed = computed;
    }
    return this.gemmComputed.has(value);
  }

  /**
   * Corner layers reached walking back from `value` across ops whose flow is in `through`;
   * `barrier(i)` stops the walk at vector layer i's output (norms, softmax).
   */
  behind(value: string, through: FlowSet, barrier: (layer: number) => boolean = () => false): BehindResult {
    const layers = new Set<number>();
    const throughNonlinear = new Set<number>();
    let bilinear = false;
    const seen = new Map<string, boolean>();
    const stack: [string, boolean][] = [[value, false]];
    for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
      const [v, nonlinear] = top;
      const before = seen.get(v);
      if (before === true || (before === false && !nonlinear) || !this.isData(v)) continue;
      seen.set(v, nonlinear);
      const corner = this.cornerByOutput.get(v);
      if (corner !== undefined) {
        layers.add(corner);
        if (nonlinear) throughNonlinear.add(corner);
        continue;
      }
      const layer = this.layerByOutput.get(v);
      if (layer !== undefined && barrier(layer)) continue;
      const node = this.producer.get(v);
      if (node === undefined) continue;
      const flow = this.flow(node);
      if (flow === 'opaque' || !through.has(flow)) continue;
      const gate = this.isBilinear(node);
      if (gate) bilinear = true;
      const crossed = nonlinear || (flow === 'nonlinear' && !gate);
      for (const i of node.inputs) if (i !== '') stack.push([i, crossed]);
    }
    return { layers, throughNonlinear, bilinear };
  }

  /** Corner layers reading what is reached walking forwards from `value` across `through`. */
  ahead(value: string, through: FlowSet): Set<number> {
    const found = new Set<number>();
    const seen = new Set<string>();
    const stack = [value];
    for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
      if (seen.has(v)) continue;
      seen.add(v);
      let direct = false;
      for (const r of this.readers.get(v) ?? []) {
        if (this.layers[r]?.kind === 'vector') continue;
        found.add(r);
        direct = true;
      }
      if (direct) continue;
      for (const node of this.consumers.get(v) ?? []) {
        if (this.cornerByOutput.has(node.outputs[0] ?? '')) continue;
        const flow = this.flow(node);
        if (flow !== 'opaque' && through.has(flow)) for (const o of node.outputs) if (o !== '') stack.push(o);
      }
    }
    return found;
  }

  /** The value behind `value` through layout-only single-data-input ops (views of one tensor are one value). */
  root(value: string): string {
    let v = value;
    for (let hops = 0; hops < 64; hops++) {
      if (this.layerByOutput.has(v)) return v;
      const node = this.producer.get(v);
      if (node === undefined || this.flow(node) !== 'layout') return v;
      const data = node.inputs.filter((i) => this.isData(i));
      if (data.length !== 1 || data[0] === undefined) return v;
      v = data[0];
    }
    return v;
  }

  /** Layers reading `value` directly or through layout-only ops. */
  readersThroughLayout(value: string): number[] {
    const found = new Set<number>();
    const seen = new Set<string>();
    const stack = [value];
    for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
      if (seen.has(v)) continue;
      seen.add(v);
      for (const r of this.readers.get(v) ?? []) found.add(r);
      for (const node of this.consumers.get(v) ?? []) {
        if (this.layerByOutput.has(node.outputs[0] ?? '') || this.flow(node) !== 'layout') continue;
        for (const o of node.outputs) if (o !== '') stack.push(o);
      }
    }
    return [...found].sort((a, b) => a - b);
  }
}

/** A product: linear in each operand, its backward keeping both (Mul, Div; read from the op table). */
export function isProduct(node: Node): boolean {
  const row = opRowOf(node);
  return flowOf(row) === 'linear' && backwardKeepsOf(row) === 'operands';
}
