/**
 * The `LoweringContext` of one node: methods on a prototype rather than a dozen closures per node,
 * and the few values a node's lowering reads (operands, output, weights) looked up in the inferred
 * values once each, their static shapes checked once. A 100k-node graph asked ~20 map lookups per
 * layer before; these contexts ask about 4.
 */
import { at, graphError } from '../errors.js';
import { unboundSymbols } from '../ir/dim.js';
import { dtypeBytes } from '../ir/dtype.js';
import type { Node } from '../ir/graph.js';
import { bindingHints } from '../shape/bind.js';
import type { InferredModel } from '../shape/infer.js';
import type { TensorInfo } from '../shape/tensor-info.js';
import { dimOf, type LoweringContext } from './draft.js';
import type { WeightTracer } from './weights.js';

/** What every node context of one graph shares. */
export interface GraphLowering {
  inferred: InferredModel;
  tracer: WeightTracer;
  consumers: ReadonlyMap<string, readonly Node[]>;
}

export class NodeLoweringContext implements LoweringContext {
  readonly inferred: InferredModel;
  /** Values looked up so far, their infos, and their checked static shapes (undefined until asked). */
  private readonly names: string[] = [];
  private readonly infos: TensorInfo[] = [];
  private readonly shapes: (number[] | undefined)[] = [];

  constructor(private readonly graph: GraphLowering, readonly node: Node) {
    this.inferred = graph.inferred;
  }

  /** Index of `name` among the values looked up, or -1 when the inference has no such value. */
  private slot(name: string): number {
    const names = this.names;
    for (let i = 0; i < names.length; i++) if (names[i] === name) return i;
    const info = this.inferred.values.get(name);
    if (info === undefined) return -1;
    names.push(name);
    this.infos.push(info);
    this.shapes.push(undefined);
    return names.length - 1;
  }

  private requiredSlot(name: string): number {
    const i = this.slot(name);
    if (i < 0) throw graphError(this.inferred.model.path, this.node, `value '${name}' has no inferred shape`);
    return i;
  }

  info(name: string): TensorInfo {
    return at(this.infos, this.requiredSlot(name));
  }

  knownInfo(name: string): TensorInfo | undefined {
    const i = this.slot(name);
    return i < 0 ? undefined : this.infos[i];
  }

  shape(name: string): number[] {
    const i = this.requiredSlot(name);
    const known = this.shapes[i];
    if (known !== undefined) return known;
    const s = at(this.infos, i).shape;
    if (s === undefined) throw graphError(this.inferred.model.path, this.node, `shape of '${name}' is unknown`);
    const symbols = unboundSymbols(s);
    if (symbols.length > 0) this.failUnbound(name, symbols);
    const shape = s as number[];
    this.shapes[i] = shape;
    return shape;
  }

  private failUnbound(name: string, symbols: string[]): never {
    const { model, initializerNames } = this.inferred;
    const hints = bindingHints(symbols, model.graph.inputs.filter((i) => !initializerNames.has(i.name)));
    throw graphError(model.path, this.node, `shape of '${name}' depends on unbound dim${symbols.length > 1 ? 's' : ''} ${symbols.map((x) => `'${x}'`).join(', ')}; bind ${hints.join(', ')}${hints.some((h) => h.endsWith(', dim 0)')) ? ' (or --batch N for the leading dim)' : ''}`);
  }

  isWeight(name: string): boolean {
    return this.graph.tracer.isWeight(name);
  }

  weightSources(name: string): string[] {
    return this.graph.tracer.sources(name) ?? [];
  }

  soleConsumer(name: string): Node | undefined {
    const list = this.graph.consumers.get(name);
    return list?.length === 1 ? list[0] : undefined;
  }

  intAttr(name: string, fallback: number): number {
    const a = this.node.attributes.get(name);
    return a?.kind === 'int' ? a.value : fallback;
  }

  intsAttr(name: string): number[] | undefined {
    const a = this.node.attributes.get(name);
    return a?.kind === 'ints' ? a.value : undefined;
  }

  elementBytes(name: string): number {
    return dtypeBytes(this.info(name).dtype, 1);
  }

  input(i: number): string {
    const name = this.node.inputs[i];
    if (name === undefined || name === '') throw graphError(this.inferred.model.path, this.node, `missing input ${i}`);
    return name;
  }

  output(i = 0): string {
    const name = this.node.outputs[i];
    if (name === undefined || name === '') throw graphError(this.inferred.model.path, this.node, `missing output ${i}`);
    return name;
  }

  dim(name: string, axis: number): number {
    return dimOf(this, this.shape(name), axis, name);
  }
}
