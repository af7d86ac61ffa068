/**
 * Invariant (b), batch scaling: a model run at batch N (a static export re-batched, or a bound
 * batch dim) must do N times the batch-1 work in every layer the batch flows into. A constant the
 * export traced at batch 1 (a Reshape or Expand target, Slice bounds) can pin the batch: the
 * layers after it stay at batch 1 (or, when it folds the batch into another dim, scale by N^2)
 * while the run still says N samples. The check compares the layers of the run with the same
 * graph's layers at batch 1, by layer name: a layer is batch-dependent when its data flows from
 * a graph input whose shape carries the batch (a pinned batch does not stop the data flowing), and
 * its MACs must be exactly N times. A layer that is not names itself and the nearest node before
 * it whose constant shape argument drops or moves the batch.
 */
import { InputError } from '../errors.js';
import { Sym } from '../ir/dim.js';
import { isIntegerDType } from '../ir/dtype.js';
import type { Graph, Node } from '../ir/graph.js';
import type { LoadedModel } from '../onnx/reader.js';
import type { DimBindings } from '../shape/bind.js';
import type { ControlFlowUse, GraphRun } from '../shape/context.js';
import { inferShapes, type InferredModel } from '../shape/infer.js';
import type { TensorInfo } from '../shape/tensor-info.js';
import { lowerToLayers, type LoweringOptions } from './lower.js';
import type { Layer } from './types.js';

/** One lowering of the graph at one batch. */
export interface BatchRun {
  inferred: InferredModel;
  layers: readonly Layer[];
  batch: number;
}

/** What the check found when it holds: the batch ratio and how many layers scale by it. */
export interface BatchScalingHeld {
  batch: number;
  referenceBatch: number;
  /** Batch-dependent layers with compute, every one's MACs exactly batch / referenceBatch times. */
  layers: number;
}

/**
 * Invariant (b) on an analysed run: undefined when the run is at its exported batch (nothing to
 * check); else the check's summary, or an InputError naming the layer that does not scale. The
 * batch-1 reference is the re-batched inference evaluated at the exported batch (no second
 * inference), or, for a dynamic export with its batch dim bound (`--batch N`, or `--dim` on an
 * input's leading dim), one more inference with that dim at 1; then one more lowering.
 */
export function batchScalingOf(
  analysed: { loaded: LoadedModel; inferred: InferredModel; layers: readonly Layer[] },
  bindings: Partial<DimBindings>,
  lowering: LoweringOptions = {},
): BatchScalingHeld | undefined {
  const { inferred } = analysed;
  const reference = referenceOf(analysed.loaded, inferred, bindings);
  if (reference === undefined || reference.batch === reference.runBatch) return undefined;
  return checkBatchScaling(
    { inferred, layers: analysed.layers, batch: reference.runBatch },
    { inferred: reference.inferred, layers: lowerToLayers(reference.inferred, lowering), batch: reference.batch },
  );
}

/** The same graph at batch 1, and the batch the run is at; undefined when the batch is not bound. */
function referenceOf(loaded: LoadedModel, inferred: InferredModel, bindings: Partial<DimBindings>): { inferred: InferredModel; batch: number; runBatch: number } | undefined {
  const { rebatched } = inferred;
  if (rebatched !== undefined) return { inferred: rebatched.atBatch(rebatched.from), batch: rebatched.from, runBatch: rebatched.to };
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
    return { inferred: inferShapes(loaded, { ...bindings, dims, ...(bindings.batch === undefined ? {} : { batch: 1 }) }), batch: 1, runBatch };
  } catch (e) {
    // A graph that cannot run at batch 1 (a dim the model requires) has no reference: no check.
    if (e instanceof InputError) return undefined;
    throw e;
  }
}

/** Throws an InputError naming the first layer whose MACs do not scale with the batch. */
export function checkBatchScaling(run: BatchRun, reference: BatchRun): BatchScalingHeld {
  const held = { batch: run.batch, referenceBatch: reference.batch, layers: 0 };
  if (run.batch === reference.batch) return held;
  const batched = batchedValues(run.inferred, reference.inferred);
  const referenceByName = new Map<string, Layer>();
  for (const l of reference.layers) referenceByName.set(l.name, l);
  for (const layer of run.layers) {
    const base = referenceByName.get(layer.name);
    if (base === undefined || (layer.macs === 0 && base.macs === 0)) continue;
    if (!batched.has(layer.output) && !layer.activationInputs.some((v) => batched.has(v))) continue;
    // MACs x batch / referenceBatch, in integers (the reference batch divides: it is 1 or the export's).
    if (layer.macs * reference.batch !== base.macs * run.batch) throw new InputError(scalingError(run, reference, layer, base, batched));
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
 * runs), through every node and into control-flow bodies (a body's formal input k is its node's
 * input k, for If, Loop and Scan alike; outer values are read by name).
 */
function batchedValues(run: InferredModel, reference: InferredModel): Set<string> {
  const batched = new Set<string>();
  for (const input of run.model.graph.inputs) {
    if (run.initializerNames.has(input.name)) continue;
    if (!sameShape(run.values.get(input.name), reference.values.get(input.name))) batched.add(input.name);
  }
  const walk = (order: readonly Node[], controlFlow: ReadonlyMap<Node, ControlFlowUse>): void => {
    for (const node of order) {
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
  walk(run.order, run.controlFlow);
  return batched;
}

function sameShape(a: TensorInfo | undefined, b: TensorInfo | undefined): boolean {
  const x = a?.shape;
  const y = b?.shape;
  if (x === undefined || y === undefined) return x === y;
  return x.length === y.length && x.every((d, i) => d === y[i]);
}

/** The first dim that differs between the two runs' shapes; -1 when none does (the batch is not in it). */
function scalingDim(a: TensorInfo | undefined, b: TensorInfo | undefined): number {
  const x = a?.shape;
  const y = b?.shape;
  if (x === undefined || y === undefined || x.length !== y.length) return -1;
  return x.findIndex((d, i) => d !== y[i]);
}

function scalingError(run: BatchRun, reference: BatchRun, layer: Layer, base: Layer, batched: ReadonlySet<string>): string {
  const factor = run.batch / reference.batch;
  const ratio = base.macs === 0 ? 'from 0' : `x${formatRatio(layer.macs / base.macs)}`;
  const head = `${run.inferred.model.path}: batch scaling: layer '${layer.name}' (node '${layer.node}', ${layer.op}) does ${base.macs.toLocaleString('en-US')} MACs at batch ${reference.batch} and ${layer.macs.toLocaleString('en-US')} at batch ${run.batch} (${ratio}, not x${formatRatio(factor)})`;
  const pin = pinningNode(run.inferred, reference.inferred, layer, batched);
  const cause = pin === undefined
    ? 'the batch does not reach it whole; no constant shape argument on its path was found to blame'
    : `node '${pin.node.name}' (${pin.node.opType}) ${pin.drops ? 'drops' : 'moves'} the batch with the constant '${pin.constant}' = [${pin.value}]`;
  return `${head}: ${cause}; export the model with a dynamic batch dim (or run it at its exported batch)`;
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
function pinningNode(run: InferredModel, reference: InferredModel, layer: Layer, batched: ReadonlySet<string>): { node: Node; constant: string; value: string; drops: boolean } | undefined {
  const producers = new Map<string, Node>();
  const infos: ReadonlyMap<string, TensorInfo>[] = [];
  const referenceInfos: ReadonlyMap<string, TensorInfo>[] = [];
  for (const g of graphRuns(run)) {
    infos.push(g.values);
    for (const node of g.order) for (const o of node.outputs) if (o !== '') producers.set(o, node);
  }
  for (const g of graphRuns(reference)) referenceInfos.push(g.values);
  const info = (maps: readonly ReadonlyMap<string, TensorInfo>[], name: string): TensorInfo | undefined => {
    for (const m of maps) {
      const i = m.get(name);
      if (i !== undefined) return i;
    }
    return undefined;
  };
  const seen = new Set<string>();
  const queue = [layer.output, ...layer.activationInputs].filter((v) => batched.has(v));
  // The layer's own node is where the MACs go wrong, not a cause: start from its inputs.
  const own = producers.get(layer.output);
  if (own !== undefined) queue.push(...own.inputs.filter((v) => batched.has(v)));
  for (let head = 0; head < queue.length; head++) {
    const value = queue[head] ?? '';
    if (seen.has(value)) continue;
    seen.add(value);
    const node = producers.get(value);
    if (node === undefined) continue;
    const data = node.inputs.filter((i) => i !== '' && batched.has(i));
    const constants = constantArguments(node, batched, producers, (name) => info(infos, name));
    const output = node.outputs[0] ?? '';
    if (node !== own && constants.length > 0 && output !== '') {
      const out = scalingDim(info(infos, output), info(referenceInfos, output));
      const inDims = data.map((d) => scalingDim(info(infos, d), info(referenceInfos, d))).filter((d) => d >= 0);
      const drops = out < 0 && inDims.length > 0;
      const shape = info(infos, output)?.shape ?? [];
      const moves = out > 0 && inDims.length > 0 && inDims.every((d) => d < out) && shape.slice(0, out).some((d) => d === 1);
      const constant = constants[0];
      if ((drops || moves) && constant !== undefined) {
        const value = info(infos, constant)?.value ?? [];
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
