/**
 * What a shape rule sees of its node: inputs' TensorInfo, attributes with defaults, the opset,
 * and `fail` for a one-line error naming the node. Rules are pure functions of this context.
 */
import { graphError, InputError } from '../errors.js';
import type { Attribute, Graph, Node, TensorRef } from '../ir/graph.js';
import { shapeToString, type Dim } from '../ir/dim.js';
import { readTensorValues, type SpanReader } from '../onnx/tensor-data.js';
import type { RebatchSearch } from './rebatch.js';
import type { TensorInfo } from './tensor-info.js';
import type { NodeValueIds } from './topo.js';
import type { ValueTable } from './value-table.js';

/**
 * One inferred graph: its own values (every name its nodes read or write has an id; outer values
 * have no info here and resolve through the enclosing run) and node order.
 */
export interface GraphRun {
  graph: Graph;
  values: ValueTable;
  order: readonly Node[];
  /** Each node's input and output ids in `values`, by position in `order`. */
  nodeValues: NodeValueIds;
  /** What each control-flow node of this graph executes. */
  controlFlow: ReadonlyMap<Node, ControlFlowUse>;
}

/** The sub-graphs a control-flow node runs, for lowering their compute. */
export interface ControlFlowUse {
  /** Bodies that execute, each `repeat` times (a Loop's trip count, a Scan's length; 1 for an If branch). */
  bodies: { run: GraphRun; repeat: Dim; label: string }[];
  /** An If whose condition did not fold: both branches, and the graph inputs the condition reads. */
  unresolved?: { conditionInputs: string[]; branches: GraphRun[] };
}

export interface SubgraphResult {
  outputs: TensorInfo[];
  run: GraphRun;
}

export interface RuleEnv {
  modelPath: string;
  spans: SpanReader;
  /** Infers a subgraph (If/Loop/Scan body) given its formal inputs; outer values stay visible. */
  inferSubgraph(graph: Graph, inputs: readonly (TensorInfo | undefined)[]): SubgraphResult;
  /** Set while a static export is re-batched (shape/rebatch.ts): the batch is a symbol. */
  rebatch?: RebatchSearch | undefined;
  /** Records what this (control-flow) node executes. */
  useBodies(use: ControlFlowUse): void;
  /** Main-graph inputs a value is computed from (for "set it with --input NAME=VALUE"). */
  inputsBehind(value: string): string[];
  /** A run-time size named `?label`, or its `--dim` binding. */
  runtimeDim(label: string): Dim;
  /** Expected true elements of a mixture-of-experts routing mask (shape/routing.ts), else undefined. */
  routedCount?(mask: string): Dim | undefined;
  /** What to bind so a value computed from shapes folds: `--dim` hints for the symbols behind it. */
  bindingsBehind?(value: string): string[];
}

/** An attribute's value type by kind. */
type AttributeValue = { [A in Attribute as A['kind']]: A['value'] };

/** Longer unknown values (never a shape argument: ranks stay small) are not named element-wise. */
const MAX_RUNTIME_ELEMENTS = 64;

export class RuleContext {
  constructor(
    private current: Node,
    private currentOpset: number,
    private inputInfos: readonly (TensorInfo | undefined)[],
    readonly env: RuleEnv,
  ) {}

  /**
   * The same context for the next node of a graph's walk: one context per graph instead of one
   * per node (rules use it only while they run, synchronously; a body's walk has its own).
   */
  moveTo(node: Node, opset: number, inputInfos: readonly (TensorInfo | undefined)[]): this {
    this.current = node;
    this.currentOpset = opset;
    this.inputInfos = inputInfos;
    return this;
  }

  get node(): Node {
    return this.current;
  }

  get opset(): number {
    return this.currentOpset;
  }

  get inputCount(): number {
    return this.inputInfos.length;
  }

  fail(what: string): never {
    throw graphError(this.env.modelPath, this.node, what);
  }

  /** Whether optional input i is present. */
  has(i: number): boolean {
    return this.inputInfos[i] !== undefined;
  }

  input(i: number): TensorInfo {
    const info = this.inputInfos[i];
    if (info === undefined) this.fail(`missing input ${i}`);
    return info;
  }

  optionalInput(i: number): TensorInfo | undefined {
    return this.inputInfos[i];
  }

  /** Input i's shape; an unknown rank is an error here. */
  shape(i: number): readonly Dim[] {
    const s = this.input(i).shape;
    if (s === undefined) this.fail(`shape of input ${i} ('${this.node.inputs[i]}') is unknown${this.input(i).unknownBecause ?? ''}`);
    return s;
  }

  /**
   * Dim `axis` (0-based from the front, or negative from the back) of input i; a rank too small
   * for the op is bad input and fails naming the node.
   */
  dim(i: number, axis: number): Dim {
    const s = this.shape(i);
    const d = s[axis < 0 ? s.length + axis : axis];
    if (d === undefined) this.fail(`input ${i} ('${this.node.inputs[i]}') has rank ${s.length}, too small for dim ${axis}`);
    return d;
  }

  rank(i: number): number {
    return this.shape(i).length;
  }

  dtype(i: number): number {
    return this.input(i).dtype;
  }

  /** Elements of input i when known (folded or a small constant). */
  value(i: number): readonly Dim[] | undefined {
    return this.inputInfos[i]?.value;
  }

  /** Elements of input i as static integers, or a failure saying what is unknown. */
  intsValue(i: number, what: string): number[] {
    const v = this.value(i);
    if (v === undefined) this.fail(`${what} (input ${i}, '${this.node.inputs[i]}') is not a constant, so the output shape cannot be inferred`);
    return v.map((d) => {
      if (typeof d !== 'number') this.fail(`${what} holds the symbolic value ${String(d)}`);
      return d;
    });
  }

  /** The first element of input i (a scalar argument like Range's start or TopK's K); empty fails. */
  firstDim(i: number, what: string): Dim {
    const v = this.dimsValue(i, what)[0];
    if (v === undefined) this.fail(`${what} (input ${i}, '${this.node.inputs[i]}') is empty`);
    return v;
  }

  /**
   * Elements of input i (possibly symbolic). A value known only at run time (a graph input, data)
   * of static length gives run-time dims named after it (`?sizes[2]`, `?k` for a scalar), the
   * same for every consumer, which `--dim` can bind; otherwise a failure.
   */
  dimsValue(i: number, what: string): readonly Dim[] {
    const v = this.value(i);
    if (v !== undefined) return v;
    const shape = this.inputInfos[i]?.shape;
    const name = this.node.inputs[i] ?? '';
    if (shape !== undefined && shape.length === 0) return [this.env.runtimeDim(name)];
    const length = shape?.length === 1 ? shape[0] : undefined;
    if (typeof length === 'number' && length <= MAX_RUNTIME_ELEMENTS) return Array.from({ length }, (_, j) => this.env.runtimeDim(`${name}[${j}]`));
    return this.fail(`${what} (input ${i}, '${name}') is not a constant and its length is unknown, so the output shape cannot be inferred`);
  }

  attr(name: string): Attribute | undefined {
    return this.node.attributes.get(name);
  }

  /** Attribute `name` when present, checked to be of `kind` (a wrong kind fails naming the node). */
  private typed<K extends Attribute['kind']>(name: string, kind: K, what: string): AttributeValue[K] | undefined {
    const a = this.attr(name);
    if (a === undefined) return undefined;
    if (a.kind !== kind) this.fail(`attribute '${name}' must be ${what}, got ${a.kind}`);
    return a.value as AttributeValue[K];
  }

  int(name: string, fallback: number): number;
  int(name: string): number | undefined;
  int(name: string, fallback?: number): number | undefined {
    return this.typed(name, 'int', 'an int') ?? fallback;
  }

  float(name: string, fallback: number): number {
    return this.typed(name, 'float', 'a float') ?? fallback;
  }

  string(name: string, fallback: string): string {
    return this.typed(name, 'string', 'a string') ?? fallback;
  }

  ints(name: string): number[] | undefined {
    return this.typed(name, 'ints', 'a list of ints');
  }

  floats(name: string): number[] | undefined {
    return this.typed(name, 'floats', 'a list of floats');
  }

  strings(name: string): string[] | undefined {
    return this.typed(name, 'strings', 'a list of strings');
  }

  tensorAttr(name: string): TensorRef | undefined {
    return this.typed(name, 'tensor', 'a tensor');
  }

  graphAttr(name: string): Graph | undefined {
    return this.typed(name, 'graph', 'a graph');
  }

  /** Reads a tensor's elements (a Constant's value); read errors name this node. */
  readTensor(ref: TensorRef): Dim[] | undefined {
    try {
      const values = readTensorValues(ref, this.env.spans);
      return values.every((v) => typeof v === 'number') ? (values as number[]) : undefined;
    } catch (e) {
      if (e instanceof InputError) this.fail(e.message.replace(`${this.env.modelPath}: `, ''));
      throw e;
    }
  }

  describe(i: number): string {
    const s = this.inputInfos[i]?.shape;
    return s === undefined ? '?' : shapeToString(s);
  }
}

export type ShapeRule = (ctx: RuleContext) => TensorInfo[];
