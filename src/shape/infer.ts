/**
 * Shape inference driver: one walk over the topologically ordered nodes, applying each op's rule
 * to the inputs' TensorInfo. Small integer values are folded along the way, so Reshape / Expand /
 * Slice targets computed by Shape -> Gather -> Concat chains resolve.
 */
import { graphError, indexOutOfRange, InputError, internalError } from '../errors.js';
import { Sym, elementCount, isStaticShape, RUNTIME_DIM_PREFIX, runtimeDim, substituteDim, unboundSymbols, type Dim } from '../ir/dim.js';
import { isFloatDType, isIntegerDType } from '../ir/dtype.js';
import type { Graph, Model, Node } from '../ir/graph.js';
import type { LoadedModel } from '../onnx/reader.js';
import { RefusedDataError, readTensorValues, type SpanReader } from '../onnx/tensor-data.js';
import { bindingHints, bindInputShapes, checkDimNames, inputValueShapes, rebatchOf, runtimeBindings, type DimBindings } from './bind.js';
import { BATCH_SYMBOL, RebatchSearch, batchDimOf } from './rebatch.js';
import { evaluateConstants } from './evaluate/index.js';
import { routedCount } from './routing.js';
import { RuleContext, type ControlFlowUse, type GraphRun, type RuleEnv, type ShapeRule, type SubgraphResult } from './context.js';
import { opKey } from './op-table.js';
import { OP_TABLE } from './rules/index.js';
import { declaredInfo, type TensorInfo } from './tensor-info.js';
import { orderGraph, type NodeValueIds } from './topo.js';
import { FirstIdNames, ValueTable } from './value-table.js';

/** Numeric initializers up to this size are read eagerly (they may be shape arguments). */
const EAGER_INITIALIZER_ELEMENTS = 64;

export interface InferredModel {
  model: Model;
  /**
   * Every value of the main graph (inputs, initializers, node outputs), each name given a dense id
   * at inference: the initializers first, in file order, then the names as nodes meet them.
   */
  values: ValueTable;
  /** Nodes of the main graph in execution order. */
  order: readonly Node[];
  /** Each node's input and output value ids, by position in `order`. */
  nodeValues: NodeValueIds;
  initializerNames: ReadonlySet<string>;
  /** What each control-flow node of the main graph executes (sub-graph values, repeats). */
  controlFlow: ReadonlyMap<Node, ControlFlowUse>;
  /**
   * Set when a static export was re-batched (shape/rebatch.ts): its exported batch, the batch it
   * runs at, and the inference with the batch a symbol (the batch-scaling check reads its shapes
   * at `from`).
   */
  rebatched?: { from: number; to: number; symbolic: InferredModel };
}

export interface InferOptions extends Partial<DimBindings> {
  /** Extra rules by op type (domain-qualified 'domain::Op' or plain for the default domain). */
  rules?: ReadonlyMap<string, ShapeRule>;
  /**
   * Known elements of graph inputs (e.g. a Reshape target fed as an input, as in ONNX's
   * conformance cases); they fold like constants.
   */
  inputValues?: ReadonlyMap<string, readonly Dim[]>;
}

export { declaredInfo };

/** Values visible while inferring one graph: its own, then its enclosing graphs'. */
class Scope {
  readonly own = new ValueTable();
  /** Producer of each value of this graph's nodes, built when first asked (only error messages ask). */
  private producers: Map<string, Node> | undefined;
  nodes: readonly Node[] = [];
  constructor(private readonly parent?: Scope) {}
  get(name: string): TensorInfo | undefined {
    return this.own.get(name) ?? this.parent?.get(name);
  }
  /** A walk back from a value computed so far only meets nodes run before it, so the whole graph's map serves. */
  producer(name: string): Node | undefined {
    if (this.producers === undefined) {
      this.producers = new Map();
      for (const node of this.nodes) for (const out of node.outputs) if (out !== '') this.producers.set(out, node);
    }
    return this.producers.get(name) ?? this.parent?.producer(name);
  }
  has(name: string): boolean {
    return this.own.has(name) || (this.parent?.has(name) ?? false);
  }
  set(name: string, info: TensorInfo): void {
    this.own.set(name, info);
  }
  entries(): ValueTable {
    return this.own;
  }
}

/**
 * The last initializer info without elements: the next initializer of its dtype and dims list
 * (decoding shares one list among tensors of equal dims) shares it, as values of one shape do.
 */
let lastPlainInfo: TensorInfo | undefined;

function initializerInfo(ref: Graph['initializers'][number], spans: SpanReader): TensorInfo {
  const count = elementCount(ref.dims);
  // Tiny numeric initializers may be shape arguments (Reshape targets, Resize scales): read them.
  if (count > EAGER_INITIALIZER_ELEMENTS || !(isIntegerDType(ref.dtype) || isFloatDType(ref.dtype))) {
    if (lastPlainInfo?.shape === ref.dims && lastPlainInfo.dtype === ref.dtype) return lastPlainInfo;
    lastPlainInfo = { dtype: ref.dtype, shape: ref.dims };
    return lastPlainInfo;
  }
  const info: TensorInfo = { dtype: ref.dtype, shape: ref.dims };
  try {
    return { ...info, value: readTensorValues(ref, spans) as number[] };
  } catch (e) {
    // A location refused (outside the model's folder, a device) is an error of the model itself.
    if (e instanceof RefusedDataError) throw e;
    return info; // e.g. stripped external weights: the value stays unknown until a rule needs it
  }
}

/** A formal input as inferred, filled in from the body's own declaration where unknown. */
function refineWithDeclared(given: TensorInfo | undefined, declared: TensorInfo): TensorInfo {
  if (given === undefined) return declared;
  if (given.kind !== undefined || declared.kind !== undefined) return given.kind === undefined && given.shape === undefined ? declared : given;
  return {
    ...given,
    dtype: given.dtype || declared.dtype,
    shape: given.shape ?? declared.shape,
  };
}

/**
 * Infers every value's shape. A static export run at another `--batch` is re-batched
 * (shape/rebatch.ts): inferred with a symbolic batch, retried with other batch placements while
 * a placement leads to an inconsistent graph, then evaluated at the requested batch.
 */
export function inferShapes(loaded: LoadedModel, options: InferOptions = {}): InferredModel {
  // Without --batch nothing is re-batched: no walk over the initializers for the inputs they name.
  const rebatch = options.batch === undefined ? undefined : rebatchOf(uninitializedInputs(loaded.model.graph), options.batch);
  if (rebatch === undefined) return inferOnce(loaded, options, undefined);
  const search = new RebatchSearch(rebatch.from, rebatch.to);
  let firstError: unknown;
  for (;;) {
    search.startRun();
    try {
      const symbolic = inferOnce(loaded, { ...options, batch: undefined }, search);
      return { ...atBatch(symbolic, rebatch.to), rebatched: { ...rebatch, symbolic } };
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      firstError ??= e;
      if (search.runs >= MAX_REBATCH_RUNS || !search.backtrack()) throw firstError;
    }
  }
}

/** The graph's inputs that are not initializers (a set of the few inputs, not of every initializer). */
function uninitializedInputs(graph: Graph): Graph['inputs'] {
  const initialized = new Set<string>();
  if (graph.inputs.length <= FEW_INPUTS) {
    // A few inputs: compare names (most differ in length) instead of hashing every initializer's.
    for (const t of graph.initializers) for (const input of graph.inputs) if (input.name === t.name) initialized.add(t.name);
  } else {
    const names = new Set(graph.inputs.map((i) => i.name));
    for (const t of graph.initializers) if (names.has(t.name)) initialized.add(t.name);
  }
  return initialized.size === 0 ? graph.inputs : graph.inputs.filter((i) => !initialized.has(i.name));
}

/** Graph inputs up to which initializer names are compared with each rather than looked up in a set. */
const FEW_INPUTS = 4;

/** Retries of the re-batching search before giving up with the first run's error. */
const MAX_REBATCH_RUNS = 400;

/** A symbolically re-batched inference evaluated at batch N. */
function atBatch(inferred: InferredModel, batch: number): InferredModel {
  const bound = new Map([[BATCH_SYMBOL, batch]]);
  const evaluated = ({ batchInner: _, ...info }: TensorInfo): TensorInfo => ({
    ...info,
    ...(info.shape === undefined ? {} : { shape: info.shape.map((d) => substituteDim(d, bound)) }),
    ...(info.value === undefined ? {} : { value: info.value.map((d) => substituteDim(d, bound)) }),
  });
  // The same ids: the node value ids stay valid.
  return { ...inferred, values: inferred.values.mapInfos(evaluated) };
}

/** Carries the batch factor's position through ops other than Reshape, which keep its dim whole. */
function inheritBatchPosition(inputs: readonly (TensorInfo | undefined)[], output: TensorInfo): TensorInfo {
  if (output.batchInner !== undefined || output.shape === undefined) return output;
  const at = batchDimOf(output.shape);
  if (at === undefined) return output;
  for (const input of inputs) {
    if (input?.batchInner === undefined || input.shape === undefined) continue;
    const from = batchDimOf(input.shape);
    if (from !== undefined && from.coefficient === at.coefficient) return { ...output, batchInner: input.batchInner };
  }
  return output;
}

/**
 * An input's info equal to `info`, a plain tensor (dtype and shape only), to stand for it: an
 * element-wise op's output, a MatMul's of its input's shape. Infos are never changed once made,
 * so values of one shape along a chain share one info instead of an object and a shape array
 * each (~100 bytes a value that every garbage collection copies or marks).
 */
function equalInputInfo(info: TensorInfo, inputs: readonly (TensorInfo | undefined)[]): TensorInfo | undefined {
  const shape = info.shape;
  if (shape === undefined || !isPlainTensor(info)) return undefined;
  for (const input of inputs) {
    if (input === undefined || input.dtype !== info.dtype || !isPlainTensor(input)) continue;
    const other = input.shape;
    if (other === undefined || other.length !== shape.length) continue;
    let same = true;
    for (let i = 0; i < shape.length && same; i++) same = shape[i] === other[i];
    if (same) return input;
  }
  return undefined;
}

/** An info of a tensor with nothing but a dtype and a shape. */
function isPlainTensor(info: TensorInfo): boolean {
  return info.value === undefined && info.kind === undefined && info.batchInner === undefined && info.unknownBecause === undefined && info.element === undefined && info.length === undefined;
}

/** The reused input list of `count` inputs (made the first time a node has that many). */
function inputListOf(lists: (TensorInfo | undefined)[][], count: number): (TensorInfo | undefined)[] {
  const known = lists[count];
  if (known !== undefined) return known;
  const list = new Array<TensorInfo | undefined>(count);
  lists[count] = list;
  return list;
}

/** Fills `infos` with a node's input infos by id ('' is undefined); names from enclosing graphs resolve through the scope. */
function fillInputInfos(scope: Scope, ids: Int32Array, from: number, infos: (TensorInfo | undefined)[]): (TensorInfo | undefined)[] {
  for (let i = 0; i < infos.length; i++) {
    const id = ids[from + i] ?? -1;
    infos[i] = id < 0 ? undefined : (scope.own.infoAt(id) ?? scope.get(scope.own.nameAt(id) ?? ''));
  }
  return infos;
}

function inferOnce(loaded: LoadedModel, options: InferOptions, rebatch: RebatchSearch | undefined): InferredModel {
  const { model, spans } = loaded;
  const file = model.path;
  const rules = options.rules;
  // Nodes of one domain follow each other: the last answer serves runs of them.
  let lastDomain: string | undefined;
  let lastOpset: number | undefined;
  const opsetOf = (domain: string): number | undefined => {
    if (domain !== lastDomain) {
      lastDomain = domain;
      lastOpset = model.opsets.get(domain);
    }
    return lastOpset;
  };
  if (opsetOf('') === undefined && model.graph.nodes.some((n) => n.domain === '')) {
    throw new InputError(`${file}: the model imports no default-domain opset`);
  }

  const ruleFor = (node: Node): ShapeRule => {
    const key = opKey(node);
    const rule = rules?.get(key) ?? OP_TABLE.get(key)?.shape;
    if (rule !== undefined) return rule;
    const where = node.domain === '' ? '' : ` of domain '${node.domain}'`;
    throw graphError(file, node, `no shape rule for op '${node.opType}'${where}; modtrans cannot translate this model yet`);
  };

  const runGraph = (graph: Graph, scope: Scope): GraphRun => {
    const { order, nodeValues } = orderGraph(file, graph, scope, scope.own);
    const { inputIds, inputStart, outputIds, outputStart } = nodeValues;
    scope.nodes = order;
    const controlFlow = new Map<Node, ControlFlowUse>();
    // One environment for the graph; `current` is the node whose rule runs (rules run synchronously).
    let current: Node | undefined;
    const env: RuleEnv = {
      modelPath: file,
      spans,
      // Subgraphs of this graph's nodes see this graph's scope as their outer scope.
      inferSubgraph: (g, formal) => inferSubgraph(g, formal, scope),
      useBodies: (use) => controlFlow.set(current ?? internalError('bodies used outside a rule'), binder.bindUse(use)),
      inputsBehind: (value) => inputsBehind(value, scope, mainInputs),
      runtimeDim: (label) => binder.bindDim(runtimeDim(label)),
      routedCount: (mask) => routedCount(mask, scope),
      bindingsBehind: (value) => bindingHints(symbolsBehind(value, scope), inputs),
      rebatch,
    };
    // One rule context and one input list of each length for the walk, reused node after node
    // (rules read them only while they run): no two objects per node for the collector.
    let ctx: RuleContext | undefined;
    const inputLists: (TensorInfo | undefined)[][] = [];
    for (let j = 0; j < order.length; j++) {
      const node = order[j] ?? indexOutOfRange(j);
      current = node;
      const opset = opsetOf(node.domain);
      if (opset === undefined) throw graphError(file, node, `op domain '${node.domain}' is not imported by the model`);
      const rule = ruleFor(node);
      const inputs = fillInputInfos(scope, inputIds, inputStart[j] ?? 0, inputListOf(inputLists, node.inputs.length));
      let outputs: TensorInfo[];
      try {
        ctx = ctx === undefined ? new RuleContext(node, opset, inputs, env) : ctx.moveTo(node, opset, inputs);
        outputs = evaluateConstants(ctx, rule(ctx));
      } catch (e) {
        if (e instanceof InputError) throw e;
        throw graphError(file, node, `shape inference failed: ${(e as Error).message}`);
      }
      const firstOutput = outputStart[j] ?? 0;
      for (let i = 0; i < node.outputs.length; i++) {
        const id = outputIds[firstOutput + i] ?? -1;
        if (id < 0) continue;
        const name = node.outputs[i] ?? indexOutOfRange(i);
        const info = outputs[i];
        if (info === undefined) throw graphError(file, node, `the rule gives no shape for output ${i} ('${name}')`);
        checkOutputSize(file, node, name, info);
        const bound = binder.bindInfo(rebatch === undefined ? info : inheritBatchPosition(inputs, info));
        scope.own.setAt(id, equalInputInfo(bound, inputs) ?? bound);
      }
    }
    return { graph, values: scope.entries(), order, nodeValues, controlFlow };
  };

  const inferSubgraph = (graph: Graph, formal: readonly (TensorInfo | undefined)[], outer: Scope): SubgraphResult => {
    const scope = new Scope(outer);
    for (const ref of graph.initializers) scope.set(ref.name, initializerInfo(ref, spans));
    graph.inputs.forEach((input, i) => {
      scope.set(input.name, refineWithDeclared(formal[i], declaredInfo(input.type)));
    });
    const run = runGraph(graph, scope);
    return { outputs: graph.outputs.map((o) => refineWithDeclared(scope.get(o.name), declaredInfo(o.type))), run };
  };

  const root = new Scope();
  const initializers = model.graph.initializers;
  // Room for every name defined outside the nodes and an output a node (most nodes' count, and
  // no pass over the nodes to count them), reserved once.
  root.own.reserve(initializers.length + model.graph.sparseInitializers.length + model.graph.inputs.length + model.graph.nodes.length);
  for (let i = 0; i < initializers.length; i++) {
    const ref = initializers[i] ?? indexOutOfRange(i);
    root.set(ref.name, initializerInfo(ref, spans));
  }
  for (const sparse of model.graph.sparseInitializers) root.set(sparse.values.name, { dtype: sparse.values.dtype, shape: sparse.dims });
  // The initializers hold the first ids: their names are the table's first names when distinct.
  const initializerCount = model.graph.initializers.length + model.graph.sparseInitializers.length;
  const initializerNames: ReadonlySet<string> = root.own.idCount === initializerCount
    ? new FirstIdNames(root.own, initializerCount)
    : new Set([...model.graph.initializers.map((t) => t.name), ...model.graph.sparseInitializers.map((t) => t.values.name)]);
  const inputs = model.graph.inputs.filter((i) => !initializerNames.has(i.name));
  const mainInputs = new Set(inputs.map((i) => i.name));
  const dims = options.dims ?? new Map<string, number>();
  const binder = new RuntimeBinder(runtimeBindings(dims, inputs));
  const bound = bindInputShapes(file, inputs, { dims, batch: options.batch });
  if (rebatch !== undefined) {
    // Every input's leading dim is the batch (rebatchOf checked they agree): make it the symbol.
    for (const [name, shape] of bound) if (shape !== undefined && shape.length > 0) bound.set(name, [Sym.atom(BATCH_SYMBOL), ...shape.slice(1)]);
  }
  const given = inputValueShapes(file, inputs, bound, options.inputs ?? new Map());
  for (const input of inputs) {
    const declared = declaredInfo(input.type);
    const value = options.inputValues?.get(input.name);
    const info = input.type.kind === 'tensor' ? { ...declared, shape: bound.get(input.name) } : declared;
    const fromFlag = given.get(input.name);
    root.set(input.name, fromFlag !== undefined ? { ...info, ...fromFlag } : value === undefined ? info : { ...info, value });
  }
  const { order, nodeValues, controlFlow } = runGraph(model.graph, root);
  checkDimNames(file, inputs, dims, binder.seen);
  return { model, values: root.entries(), order, nodeValues, initializerNames, controlFlow };
}

/**
 * Symbols in the nearest symbolic folded values a value is computed from (Shape -> Gather ->
 * Equal chains): what would make it fold if bound. The walk stops at values without folded
 * elements (data).
 */
function symbolsBehind(value: string, scope: Scope): string[] {
  const found = new Set<string>();
  const seen = new Set<string>();
  const stack = [value];
  while (stack.length > 0) {
    const name = stack.pop() ?? internalError('the walk stack is empty');
    if (name === '' || seen.has(name)) continue;
    seen.add(name);
    const folded = scope.get(name)?.value;
    // The nearest folded values are what the condition reads (a Gather of a Shape, not the whole shape).
    if (folded !== undefined && unboundSymbols(folded).length > 0) {
      for (const s of unboundSymbols(folded)) found.add(s);
      continue;
    }
    if (folded === undefined && name !== value) continue;
    const producer = scope.producer(name);
    if (producer !== undefined) stack.push(...producer.inputs);
  }
  return [...found].sort();
}

/** Graph inputs (of the main graph) a value is computed from, walking producers back. */
function inputsBehind(value: string, scope: Scope, mainInputs: ReadonlySet<string>): string[] {
  const found = new Set<string>();
  const seen = new Set<string>();
  const stack = [value];
  while (stack.length > 0) {
    const name = stack.pop() ?? internalError('the walk stack is empty');
    if (name === '' || seen.has(name)) continue;
    seen.add(name);
    const producer = scope.producer(name);
    if (producer !== undefined) stack.push(...producer.inputs);
    else if (mainInputs.has(name)) found.add(name);
  }
  return [...found].sort();
}

/**
 * Applies `--dim` bindings of run-time sizes (`?NonZero:idx`) where they are created, and notes
 * every run-time size met, so unknown `--dim` names can be told from sizes the model makes.
 */
class RuntimeBinder {
  readonly seen = new Set<string>();
  constructor(private readonly bindings: ReadonlyMap<string, number>) {}

  bindDim(d: Dim): Dim {
    if (typeof d === 'number') return d;
    let touched = false;
    for (const atom of d.atoms()) {
      if (!atom.startsWith(RUNTIME_DIM_PREFIX)) continue;
      this.seen.add(atom);
      if (this.bindings.has(atom)) touched = true;
    }
    return touched ? substituteDim(d, this.bindings) : d;
  }

  bindInfo(info: TensorInfo): TensorInfo {
    // Every --dim name is an input dim: nothing to bind here, and no names to check.
    if (this.bindings.size === 0) return info;
    const element = info.element === undefined ? undefined : this.bindInfo(info.element);
    const shape = info.shape?.some((d) => typeof d !== 'number') ? info.shape.map((d) => this.bindDim(d)) : info.shape;
    if (shape === info.shape && element === info.element) return info;
    return { ...info, shape, ...(element === undefined ? {} : { element }) };
  }

  bindUse(use: ControlFlowUse): ControlFlowUse {
    return { ...use, bodies: use.bodies.map((b) => ({ ...b, repeat: this.bindDim(b.repeat) })) };
  }
}

/** Dims computed from tensor values (Expand, Reshape targets) can be absurd: refuse them here. */
function checkOutputSize(file: string, node: Node, name: string, info: TensorInfo): void {
  if (info.shape === undefined) return;
  let elements = 1;
  for (const d of info.shape) {
    if (typeof d !== 'number') continue;
    if (!Number.isSafeInteger(d) || d < 0) throw graphError(file, node, `output '${name}' gets the invalid dim ${d}`);
    elements *= d;
    if (elements > Number.MAX_SAFE_INTEGER) throw graphError(file, node, `output '${name}' would have more than 2^53 elements`);
  }
}

/** Whether every dim of a value is a number. */
export function isFullyStatic(info: TensorInfo): info is TensorInfo & { shape: readonly number[] } {
  return info.shape !== undefined && isStaticShape(info.shape);
}

export type { Dim };
