/**
 * The `LoweringContext` of a graph's nodes, one node at a time: methods on a prototype rather than
 * a dozen closures per node, and the few values a node's lowering reads (operands, output,
 * weights) resolved once each to their id in the value index (the node's own operands by
 * position, no map lookup), their static shapes checked once.
 */
import { at, graphError } from '../errors.js';
import { unboundSymbols } from '../ir/dim.js';
import { dtypeBytes } from '../ir/dtype.js';
import type { Node } from '../ir/graph.js';
import { bindingHints } from '../shape/bind.js';
import type { InferredModel } from '../shape/infer.js';
import type { TensorInfo } from '../shape/tensor-info.js';
import { dimOf, NO_NAMES, type LoweringContext } from './draft.js';
import type { ValueIndex, ValueOrigin } from './value-index.js';
import type { WeightTracer } from './weights.js';

function allNumbers(shape: readonly unknown[]): boolean {
  for (let i = 0; i < shape.length; i++) if (typeof shape[i] !== 'number') return false;
  return true;
}


/** What every node context of one graph shares. */
export interface GraphLowering {
  inferred: InferredModel;
  tracer: WeightTracer;
  index: ValueIndex;
}

export class NodeLoweringContext implements LoweringContext {
  readonly inferred: InferredModel;
  node: Node;
  /** The node's place in the graph's execution order (its ids in the index). */
  private position: number;
  /**
   * The first `count` entries: values looked up for this node, their ids (undefined: not in the
   * index), infos, and checked static shapes (undefined until asked). One context serves a graph's
   * nodes in turn (`reset`), so these arrays are allocated once, not per node.
   */
  private count = 0;
  private readonly names: string[] = [];
  private readonly ids: (number | undefined)[] = [];
  private readonly infos: TensorInfo[] = [];
  private readonly shapes: (number[] | undefined)[] = [];

  constructor(private readonly graph: GraphLowering, node: Node, position: number) {
    this.inferred = graph.inferred;
    this.node = node;
    this.position = position;
  }

  /** Serves the next node (lowerings and finishing a layer hold no context past their node). */
  reset(node: Node, position: number): this {
    this.node = node;
    this.position = position;
    this.count = 0;
    return this;
  }

  /** The id of a value: the node's own operands by position, others through the index's map. */
  private idOf(name: string): number | undefined {
    const { inputs, outputs } = this.node;
    for (let i = 0; i < inputs.length; i++) if (inputs[i] === name) return this.graph.index.inputId(this.position, i);
    for (let i = 0; i < outputs.length; i++) if (outputs[i] === name) return this.graph.index.outputId(this.position, i);
    return this.graph.index.idOf(name);
  }

  /** Index of `name` among the values looked up, or -1 when the inference has no such value. */
  private slot(name: string): number {
    const names = this.names;
    for (let i = 0; i < this.count; i++) if (names[i] === name) return i;
    const id = this.idOf(name);
    const info = id === undefined ? this.inferred.values.get(name) : this.graph.index.info(id);
    if (info === undefined) return -1;
    const i = this.count++;
    names[i] = name;
    this.ids[i] = id;
    this.infos[i] = info;
    this.shapes[i] = undefined;
    return i;
  }

  /** The id of a value (looked up once per node), undefined when the index does not know it. */
  private known(name: string): number | undefined {
    const names = this.names;
    for (let i = 0; i < this.count; i++) if (names[i] === name) return this.ids[i];
    return this.idOf(name);
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
    // Most shapes are all numbers: no list of symbols to build.
    if (!allNumbers(s)) {
      const symbols = unboundSymbols(s);
      if (symbols.length > 0) this.failUnbound(name, symbols);
    }
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
    const id = this.known(name);
    return id !== undefined && this.graph.tracer.isWeightId(id);
  }

  isInitializer(name: string): boolean {
    const id = this.known(name);
    return id !== undefined && this.graph.index.isInitializer(id);
  }

  nameList(name: string): string[] {
    const { inputs, outputs } = this.node;
    if (inputs.length === 1 && inputs[0] === name) return inputs as string[];
    if (outputs.length === 1 && outputs[0] === name) return outputs as string[];
    const id = this.known(name);
    const producer = id === undefined ? undefined : this.graph.index.producer(id);
    if (producer !== undefined && producer.outputs.length === 1 && producer.outputs[0] === name) return producer.outputs as string[];
    return [name];
  }

  weightSources(name: string): string[] {
    const id = this.known(name);
    return (id === undefined ? undefined : this.graph.tracer.sourcesOf(id)) ?? NO_NAMES;
  }

  soleConsumer(name: string): Node | undefined {
    const id = this.known(name);
    return id === undefined ? undefined : this.graph.index.soleConsumer(id);
  }

  origin(name: string): ValueOrigin {
    const id = this.known(name);
    // A value this graph does not know: an enclosing scope's, i.e. data.
    return id === undefined ? 'activation' : this.graph.index.origin(id);
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
