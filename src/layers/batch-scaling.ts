/**
 * Invariant (b), batch scaling: a model run at batch N (a static export re-batched, or a bound
 * batch dim) must do N times the batch-1 work in every layer the batch flows into. A constant the
 * export traced at batch 1 (a Reshape or Expand target, Slice bounds) can pin the batch: the
 * layers after it stay at batch 1 (or, when it folds the batch into another dim, scale by N^2)
 * while the run still says N samples. A layer is batch-dependent when its data flows from a graph
 * input whose shape carries the batch (a pinned batch does not stop the data flowing). Its MACs
 * scale by exactly N when its output has N times the elements of the batch-1 graph's and each
 * activation operand 1 or N times (MACs = output x K, and K, a dim of an operand that scales at
 * most once, cannot carry the batch too), so no second lowering is needed: the batch-1 shapes
 * are the re-batched symbolic inference's with the batch at 1 (for a dynamic export with its batch
 * bound, one more inference). A layer that does not scale names itself and the nearest node before
 * it whose constant shape argument drops or moves the batch.
 */
import { InputError } from '../errors.js';
import { Sym, dimProduct, substituteDim, type Dim } from '../ir/dim.js';
import { isIntegerDType } from '../ir/dtype.js';
import type { Graph, Node } from '../ir/graph.js';
import type { LoadedModel } from '../onnx/reader.js';
import type { DimBindings } from '../shape/bind.js';
import type { ControlFlowUse, GraphRun } from '../shape/context.js';
import { inferShapes, type InferredModel } from '../shape/infer.js';
import { BATCH_SYMBOL } from '../shape/rebatch.js';
import type { TensorInfo } from '../shape/tensor-info.js';
import type { Layer } from './types.js';

/** What the check found when it holds: the batch ratio and how many layers scale by it. */
export interface BatchScalingHeld {
  batch: number;
  referenceBatch: number;
  /** Batch-dependent layers with compute, every one exactly batch / referenceBatch times its reference work. */
  layers: number;
}

/** Shapes of one graph's values (every body's included) at one batch. */
export interface BatchShapes {
  batch: number;
  shapeOf(value: string): readonly number[] | undefined;
}

/**
 * Invariant (b) on an analysed run: undefined when the run is at its exported batch (nothing to
 * check); else the check's summary, or an InputError naming the layer that does not scale.
 */
export function batchScalingOf(analysed: { loaded: LoadedModel; inferred: InferredModel; layers: readonly Layer[] }, bindings: Partial<DimBindings>): BatchScalingHeld | undefined {
  const { inferred } = analysed;
  const reference = referenceOf(analysed.loaded, inferred, bindings);
  if (reference === undefined || reference.shapes.batch === reference.runBatch) return undefined;
  return checkBatchScaling(inferred, analysed.layers, { batch: reference.runBatch, shapeOf: shapesOf(inferred, (d) => d) }, reference.shapes, inferred.rebatched !== undefined ? REBATCHED_REMEDY : BOUND_REMEDY);
}

/** The batch-1 shapes, and the batch the run is at; undefined when the batch is not bound. */
function referenceOf(loaded: LoadedModel, inferred: InferredModel, bindings: Partial<DimBindings>): { shapes: BatchShapes; runBatch: number } | undefined {
  const { rebatched } = inferred;
  if (rebatched !== undefined) {
    const at = new Map([[BATCH_SYMBOL, rebatched.from]]);
    return { shapes: { batch: rebatched.from, shapeOf: shapesOf(rebatched.symbolic, (d) => substituteDim(d, at)) }, runBatch: rebatched.to };
  }
  const leading = new Set<string>();
  for (const input of loaded.model.graph.inputs) {
    if (inferred.initializerNames.has(input.name) || input.type.kind !== 'tensor') continue;
    const lead = input.type.shape?.[0];
    if (lead instanceof Sym) leading.add(lead.toString());
  }
  if (leading.size === 0) return undefined;
  const dims = new Map(bindings.dims ?? []);
  let runBatch = bindings.batch;
  for (const name of leading) {
    const bound = dims.get(name);
    if (bound === undefined) continue;
    runBatch ??= bound;
    dims.set(name, 1);
  }
  if (runBatch === undefined || runBatch === 1) return undefined;
  try {
    const one = inferShapes(loaded, { ...bindings, dims, ...(bindings.batch === undefined ? {} : { batch: 1 }) });
    return { shapes: { batch: 1, shapeOf: shapesOf(one, (d) => d) }, runBatch };
  } catch (e) {
    // A graph that cannot run at batch 1 (a dim the model requires) has no reference: no check.
    if (e instanceof InputError) return undefined;
    throw e;
  }
}

/** A value's numeric shape in any graph of the inference, its dims evaluated by `evaluate`. */
function shapesOf(inferred: InferredModel, evaluate: (d: Dim) => Dim): (value: string) => readonly number[] | undefined {
  const maps = [...graphRuns(inferred)].map((g) => g.values);
  return (value) => {
    for (const m of maps) {
      const shape = m.get(value)?.shape;
      if (shape === undefined) continue;
      const dims = shape.map(evaluate);
      return dims.every((d): d is number => typeof d === 'number') ? dims : undefined;
    }
    return undefined;
  };
}

const elements = (shape: readonly number[] | undefined): number | undefined => (shape === undefined ? undefined : (dimProduct(shape) as number));

const REBATCHED_REMEDY = 'export the model with a dynamic batch dim (or run it at its exported batch)';
const BOUND_REMEDY = 'the graph spells the batch as a constant there (run it at batch 1, or fix the model)';

/** Throws an InputError naming the first batch-dependent layer whose work does not scale with the batch. */
export function checkBatchScaling(inferred: InferredModel, layers: readonly Layer[], run: BatchShapes, reference: BatchShapes, remedy = REBATCHED_REMEDY): BatchScalingHeld {
  const held = { batch: run.batch, referenceBatch: reference.batch, layers: 0 };
  if (run.batch === reference.batch) return held;
  const batched = batchedValues(inferred, run, reference);
  // ratio x reference = run, in integers (the reference batch is 1 or the export's: it divides).
  const scales = (value: string, allowed: readonly number[]): boolean => {
    const a = elements(run.shapeOf(value));
    const b = elements(reference.shapeOf(value));
    return a === undefined || b === undefined || allowed.some((r) => a * reference.batch === b * r);
  };
  for (const layer of layers) {
    if (layer.macs === 0) continue;
    const operands = layer.activationInputs.filter((v) => batched.has(v));
    if (!batched.has(layer.output) && operands.length === 0) continue;
    const bad = [layer.output, ...operands].find((v, i) => !scales(v, i === 0 ? [run.batch] : [reference.batch, run.batch]));
    if (bad !== undefined) throw new InputError(`${scalingError(inferred, run, reference, layer, bad, batched)}; ${remedy}`);
    held.layers++;
  }
  return held;
}

/** Control-flow bodies a node runs (or, undecided, might run). */
function bodiesOf(use: ControlFlowUse | undefined): GraphRun[] {
  if (use === undefined) return [];
  return [...use.bodies.map((b) => b.run), ...(use.unresolved?.branches ?? [])];
}

/** Every graph the run infers, the main one first, with its node order and control flow. */
function* graphRuns(inferred: InferredModel): Generator<{ graph: Graph; order: readonly Node[]; values: ReadonlyMap<string, TensorInfo>; controlFlow: ReadonlyMap<Node, ControlFlowUse> }> {
  const stack = [{ graph: inferred.model.graph, order: inferred.order, values: inferred.values, controlFlow: inferred.controlFlow }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    yield top;
    for (const use of top.controlFlow.values()) for (const body of bodiesOf(use)) stack.push(body);
  }
}

/**
 * Values whose data flows from a graph input the batch sizes (its shape differs between the two
 * batches), through every node and into control-flow bodies (a body's formal input k is its node's
 * input k, for If, Loop and Scan alike; outer values are read by name). Shape and Size read only
 * metadata: the data stops there.
 */
function batchedValues(inferred: InferredModel, run: BatchShapes, reference: BatchShapes): Set<string> {
  const batched = new Set<string>();
  for (const input of inferred.model.graph.inputs) {
    if (inferred.initializerNames.has(input.name)) continue;
    if (scalingDim(run.shapeOf(input.name), reference.shapeOf(input.name)) >= 0) batched.add(input.name);
  }
  const walk = (order: readonly Node[], controlFlow: ReadonlyMap<Node, ControlFlowUse>): void => {
    for (const node of order) {
      if (METADATA_OPS.has(node.opType) && node.domain === '') continue;
      let flows = node.inputs.some((i) => i !== '' && batched.has(i));
      for (const body of bodiesOf(controlFlow.get(node))) {
        body.graph.inputs.forEach((formal, k) => {
          const actual = node.inputs[k];
          if (actual !== undefined && batched.has(actual)) batched.add(formal.name);
        });
        walk(body.order, body.controlFlow);
        if (body.graph.outputs.some((o) => batched.has(o.name))) flows = true;
      }
      if (flows) for (const o of node.outputs) if (o !== '') batched.add(o);
    }
  };
  walk(inferred.order, inferred.controlFlow);
  return batched;
}

const METADATA_OPS = new Set(['Shape', 'Size']);

/** The first dim that differs between the two batches' shapes (-1: none, the batch is not in it; a rank change is dim 0). */
function scalingDim(a: readonly number[] | undefined, b: readonly number[] | undefined): number {
  if (a === undefined || b === undefined) return -1;
  if (a.length !== b.length) return 0;
  return a.findIndex((d, i) => d !== b[i]);
}

function scalingError(inferred: InferredModel, run: BatchShapes, reference: BatchShapes, layer: Layer, value: string, batched: ReadonlySet<string>): string {
  const factor = run.batch / reference.batch;
  const shown = (shape: readonly number[] | undefined): string => `[${(shape ?? []).join(',')}]`;
  const a = run.shapeOf(value);
  const b = reference.shapeOf(value);
  const ratio = (elements(a) ?? 0) / (elements(b) ?? 1);
  const what = value === layer.output ? 'its output' : `its operand '${value}'`;
  const head = `${inferred.model.path}: batch scaling: layer '${layer.name}' (node '${layer.node}', ${layer.op}) does not scale with the batch: ${what} is ${shown(a)} at batch ${run.batch} and ${shown(b)} at batch ${reference.batch} (x${formatRatio(ratio)}, not x${formatRatio(factor)})`;
  const pin = pinningNode(inferred, run, reference, layer, batched);
  const cause = pin === undefined
    ? 'no constant shape argument on its path was found to drop or move the batch'
    : `node '${pin.node.name}' (${pin.node.opType}) ${pin.drops ? 'drops' : 'moves'} the batch with the constant '${pin.constant}' = [${pin.value}]`;
  return `${head}: ${cause}`;
}

function formatRatio(r: number): string {
  return Number.isInteger(r) ? String(r) : r.toPrecision(4);
}

/**
 * The nearest node before the layer (walking its batched data back) that has a constant shape
 * argument (a folded input the batch does not flow into) and whose output loses the batch its
 * data input carries, or moves it behind a dim of extent 1 (a [1, -1, E] target folding the
 * batch into the sequence).
 */
function pinningNode(inferred: InferredModel, run: BatchShapes, reference: BatchShapes, layer: Layer, batched: ReadonlySet<string>): { node: Node; constant: string; value: string; drops: boolean } | undefined {
  const producers = new Map<string, Node>();
  const infos: ReadonlyMap<string, TensorInfo>[] = [];
  for (const g of graphRuns(inferred)) {
    infos.push(g.values);
    for (const node of g.order) for (const o of node.outputs) if (o !== '') producers.set(o, node);
  }
  const info = (name: string): TensorInfo | undefined => {
    for (const m of infos) {
      const found = m.get(name);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  const holds = (name: string): boolean => (info(name)?.value ?? []).includes(reference.batch);
  const seen = new Set<string>();
  // The layer's own node is where the work goes wrong, not a cause: start from its inputs.
  const own = producers.get(layer.output);
  const queue = [...layer.activationInputs, ...(own?.inputs ?? [])].filter((v) => batched.has(v));
  for (let head = 0; head < queue.length; head++) {
    const value = queue[head] ?? '';
    if (seen.has(value)) continue;
    seen.add(value);
    const node = producers.get(value);
    if (node === undefined) continue;
    const data = node.inputs.filter((i) => i !== '' && batched.has(i));
    // The constant that spells the batch holds its batch-1 extent (a Slice's ends, not its starts).
    const constants = constantArguments(node, batched, producers, info).sort((x, y) => +!holds(x) - +!holds(y));
    const output = node.outputs[0] ?? '';
    if (constants.length > 0 && output !== '') {
      const out = scalingDim(run.shapeOf(output), reference.shapeOf(output));
      const inDims = data.map((d) => scalingDim(run.shapeOf(d), reference.shapeOf(d))).filter((d) => d >= 0);
      const drops = out < 0 && inDims.length > 0;
      const shape = reference.shapeOf(output) ?? [];
      const moves = out > 0 && inDims.length > 0 && inDims.every((d) => d < out) && shape.slice(0, out).some((d) => d === reference.batch);
      const constant = constants[0];
      if ((drops || moves) && constant !== undefined) {
        const value = info(constant)?.value ?? [];
        return { node, constant, value: `${value.slice(0, MAX_SHOWN).map(String).join(',')}${value.length > MAX_SHOWN ? ',...' : ''}`, drops };
      }
    }
    queue.push(...data);
  }
  return undefined;
}

/** Elements of a pinning constant shown in the error. */
const MAX_SHOWN = 8;

/**
 * A node's folded inputs the batch does not flow into, integer ones (shape arguments) first; for an
 * input that is data (ViT's class token before a Concat), the integer arguments of its producer
 * (the Expand target traced at batch 1).
 */
function constantArguments(node: Node, batched: ReadonlySet<string>, producers: ReadonlyMap<string, Node>, info: (name: string) => TensorInfo | undefined): string[] {
  const direct = node.inputs.filter((i) => i !== '' && !batched.has(i) && info(i)?.value !== undefined);
  const integer = (name: string): boolean => isIntegerDType(info(name)?.dtype ?? 0);
  const shapeArguments = direct.filter(integer);
  if (shapeArguments.length > 0) return shapeArguments;
  const behind = node.inputs
    .filter((i) => i !== '' && !batched.has(i))
    .flatMap((i) => producers.get(i)?.inputs.filter((j) => j !== '' && !batched.has(j) && integer(j) && info(j)?.value !== undefined) ?? []);
  return behind.length > 0 ? behind : direct;
}
