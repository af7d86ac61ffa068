/**
 * Invariants every plan is checked against before anything is written (issue 18, "never a silent
 * wrong number"):
 * (a) parameter conservation: the parameters the plan's layers hold, summed over the T
 *     tensor-parallel ranks (a split tensor's shares add up, a replicated one counts once) and
 *     over the pipeline stages, are the model's trainable initializers, each counted once per
 *     stage that holds it (a tensor two stages hold, Megatron-LM's tied embedding, is one
 *     parameter with a copy); initializers outside every layer are named;
 * (c) every norm scale (and shift) and every expert weight is owned by a layer.
 * A share that does not add up, or a tensor counted twice on a stage, is a bug (an internal
 * error naming the layer or tensor). A norm scale or an expert weight outside every layer is an
 * `InputError` naming it: modtrans did not recognise how the model was exported, and its
 * gradient, optimizer state and pipeline stage would be wrong (with `--vector-ops off`, where no
 * norm is a layer by choice, a named warning). Other initializers outside every
 * layer (buffers exported as initializers, rotary tables) are warnings: the plan counts them as
 * parameters replicated on the last stage (`ParallelPlan.otherParams`).
 * Trainable initializers: float tensors of more than one element (single values are constants:
 * eps, scales), as `otherParams` counts them.
 */
import { axesOf } from './axes.js';
import { withThousands } from '../digits.js';
import { InputError } from '../errors.js';
import { elementCount } from '../ir/dim.js';
import { isFloatDType } from '../ir/dtype.js';
import type { Graph, Node, TensorRef } from '../ir/graph.js';
import type { Layer } from '../layers/types.js';
import { isWeightConstant, weightTracerOf, type WeightTracer } from '../layers/weights.js';
import type { InferredModel } from '../shape/infer.js';
import { flowOf } from '../shape/op-table.js';
import { opRowOf } from '../shape/rules/index.js';
import type { LayerPlan, ParallelPlan, TpRole } from './types.js';
import { slotById, slotsAreIds } from './initializer-slots.js';

export interface InvariantOptions {
  /** Whether norms and other vector work are layers (`--vector-ops on`): a norm's scale must then be a layer's. */
  vectorOps: boolean;
}

export interface LeftOverInitializer {
  name: string;
  elements: number;
  /** What the graph does with it: a norm's scale or shift, a GEMM (expert) weight, or neither. */
  use: 'norm-parameter' | 'gemm-weight' | 'other';
}

export interface InvariantReport {
  /** Trainable parameters of the model: the initializers the layers hold plus those left over, each once. */
  modelParams: number;
  /** Parameters the layers hold, each initializer once. */
  layerParams: number;
  /** Parameters the plan holds summed over tensor-parallel ranks and pipeline stages (shares padded to T included). */
  planParams: number;
  /** Of planParams: copies of a tensor held on several stages (tied embeddings). */
  stageCopyParams: number;
  /** Of planParams: rows added so a split divides by T (Megatron-LM pads the vocabulary). */
  paddingParams: number;
  leftOver: LeftOverInitializer[];
  /** Named warnings for stderr (each one line). */
  warnings: string[];
  /** What holds, for the command's summary line. */
  summary: string;
}

const SPLIT_BOTH = Object.freeze({ weight: true, bias: true });
const SPLIT_WEIGHT = Object.freeze({ weight: true, bias: false });
const SPLIT_NONE = Object.freeze({ weight: false, bias: false });

/** Which of a layer's parameters its role splits over the tensor-parallel ranks (the others are replicated). */
function splitParameters(role: TpRole, layer: Layer): { readonly weight: boolean; readonly bias: boolean } {
  if (layer.kind === 'vector') return SPLIT_NONE; // norm parameters are replicated (plan/shard.ts)
  switch (role) {
    case 'column':
    case 'vocab':
    case 'sharded':
    case 'split':
      return SPLIT_BOTH;
    case 'row':
      return SPLIT_WEIGHT; // the row-parallel bias is added once, after the sum
    case 'heads':
    case 'replicated':
      return SPLIT_NONE;
  }
}

/**
 * Every initializer of the model, sub-graphs' too, by name; and the float tensors of weight
 * Constant nodes (exporters inline the weights of If branches so), by the value they write: each
 * a slot, with the first stage holding it and its elements. A main-graph initializer's slot is
 * its value id when the ids are the initializers' places (names distinct, ids given in file
 * order: checked per name), so a 100k-node graph builds no map of its initializers; any other
 * name is looked up in a walk of every graph, made on the first such name.
 */
class Initializers {
  private readonly main: readonly TensorRef[];
  private readonly byId: boolean;
  private all: { indexOf: Map<string, number>; refs: TensorRef[] } | undefined;
  /** By slot: the first stage holding the tensor (-1: none yet) and its elements. */
  firstStage: Int32Array;
  elements: Float64Array;

  constructor(private readonly inferred: InferredModel) {
    const graph = inferred.model.graph;
    this.main = graph.initializers;
    this.byId = slotsAreIds(inferred);
    this.firstStage = new Int32Array(this.main.length).fill(-1);
    this.elements = new Float64Array(this.main.length);
  }

  /** The slot of a name, -1 when no initializer or weight Constant has it. */
  slotOf(name: string): number {
    if (this.byId) {
      const slot = slotById(this.inferred, name);
      if (slot >= 0) return slot;
    }
    const at = this.walk().indexOf.get(name);
    return at === undefined ? -1 : this.main.length + at;
  }

  ref(slot: number): TensorRef | undefined {
    if (slot < 0) return undefined;
    return slot < this.main.length ? this.main[slot] : this.all?.refs[slot - this.main.length];
  }

  private walk(): { indexOf: Map<string, number>; refs: TensorRef[] } {
    if (this.all !== undefined) return this.all;
    const all = { indexOf: new Map<string, number>(), refs: [] as TensorRef[] };
    collectInitializers(this.inferred.model.graph, all);
    this.all = all;
    const size = this.main.length + all.refs.length;
    const firstStage = new Int32Array(size).fill(-1);
    firstStage.set(this.firstStage);
    const elements = new Float64Array(size);
    elements.set(this.elements);
    this.firstStage = firstStage;
    this.elements = elements;
    return all;
  }
}

/** Every initializer of `graph` and its sub-graphs, and the tensors of weight Constant nodes, each name once (the first). */
function collectInitializers(graph: Graph, into: { indexOf: Map<string, number>; refs: TensorRef[] }): void {
  const put = (name: string, t: TensorRef): void => {
    if (into.indexOf.has(name)) return;
    into.indexOf.set(name, into.refs.length);
    into.refs.push(t);
  };
  for (const t of graph.initializers) put(t.name, t);
  for (const node of graph.nodes) {
    // A node without attributes is neither a Constant nor holds a sub-graph (most nodes).
    if (node.attributes.size === 0) continue;
    const value = isWeightConstant(node) ? node.attributes.get('value') : undefined;
    const out = node.outputs[0];
    if (value?.kind === 'tensor' && out !== undefined) put(out, value.value);
    for (const a of node.attributes.values()) {
      if (a.kind === 'graph') collectInitializers(a.value, into);
      else if (a.kind === 'graphs') for (const g of a.value) collectInitializers(g, into);
    }
  }
}

const isTrainable = (t: TensorRef): boolean => isFloatDType(t.dtype) && elementCount(t.dims) > 1;

const count = (n: number): string => withThousands(Math.round(n));

/**
 * Checks (a) and (c) on a plan of `inferred`'s layers; throws on a defect, returns the warnings
 * and the summary words otherwise.
 */
export function checkPlanInvariants(plan: ParallelPlan, inferred: InferredModel, options: InvariantOptions): InvariantReport {
  const path = inferred.model.path;
  const initializers = new Initializers(inferred);
  const tp = plan.world.tp;
  const etp = axesOf(plan.world).etp;
  // By initializer slot: its elements and the first stage holding it (initializers.firstStage),
  // and a set of stages only for tensors held on several (a map or set per tensor keyed by name
  // was ~5% of a 100k-node translate). A tensor is held on stage s when s is its first stage or in its set.
  const stagesOf = new Map<number, Set<number>>();
  /** Initializer slots in the order layers first hold them. */
  const held: number[] = [];
  let planParams = 0;
  let expectedPlanParams = 0;
  let paddingParams = 0;
  /** Elements of `list` not yet held on `stage` (each then held there). */
  const holdOnStage = (layer: Layer, list: readonly string[], stage: number): number => {
    let own = 0;
    for (const name of list) {
      const t = initializers.slotOf(name);
      const elements = tensorElements(layer, name, initializers.ref(t), path);
      initializers.elements[t] = elements;
      const first = initializers.firstStage[t] ?? -1;
      if (first === -1) {
        initializers.firstStage[t] = stage;
        held.push(t);
        own += elements;
        continue;
      }
      if (first === stage) continue; // an earlier layer of the stage holds it: one set of parameters
      const stages = stagesOf.get(t);
      if (stages === undefined) stagesOf.set(t, new Set([first, stage]));
      else if (stages.has(stage)) continue;
      else stages.add(stage);
      own += elements;
    }
    return own;
  };
  for (let i = 0; i < plan.layers.length; i++) {
    const l = plan.layers[i] as LayerPlan;
    const layer = l.layer;
    const ownWeight = layer.weightTensors.length === 0 ? 0 : holdOnStage(layer, layer.weightTensors, l.stage);
    const ownBias = layer.biasTensors.length === 0 ? 0 : holdOnStage(layer, layer.biasTensors, l.stage);
    const split = splitParameters(l.role, layer);
    // An expert under expert parallelism: what its EP rank holds, split over the expert TP ranks.
    const ways = l.expert === undefined ? tp : etp;
    const weightsHeld = l.expert?.ownerWeightParams ?? l.weightParamsHeld;
    const biasesHeld = l.expert?.ownerBiasParams ?? l.biasParamsHeld;
    const weights = split.weight ? weightsHeld * ways : weightsHeld;
    const biases = split.bias ? biasesHeld * ways : biasesHeld;
    // Megatron's vocabulary padding may add up to (divisibleBy x T - 1) rows to a vocabulary split.
    const padRows = l.role === 'vocab' || (l.role === 'column' && plan.structure.parts[i]?.kind === 'head') ? plan.vocabDivisibleBy * ways : ways;
    checkShare(l, 'weight', weights, ownWeight, split.weight, padRows);
    checkShare(l, 'bias', biases, ownBias, split.bias, padRows);
    planParams += weights + biases;
    expectedPlanParams += ownWeight + ownBias;
    paddingParams += weights - ownWeight + biases - ownBias;
  }
  let layerParams = 0;
  let stageCopyParams = 0;
  for (const t of held) {
    const elements = initializers.elements[t] ?? 0;
    layerParams += elements;
    stageCopyParams += elements * ((stagesOf.get(t)?.size ?? 1) - 1);
  }
  if (Math.round(expectedPlanParams - stageCopyParams) !== Math.round(layerParams)) {
    throw new Error(`parameter conservation: the stages hold ${count(expectedPlanParams)} parameters, ${count(stageCopyParams)} of them copies, but the layers' tensors hold ${count(layerParams)}`);
  }

  // Initializers of the main graph outside every layer: what plan.otherParams counts.
  const leftOver: LeftOverInitializer[] = [];
  let uses: InitializerUses | undefined; // the graph is walked only when something is left over
  for (const t of inferred.model.graph.initializers) {
    const slot = initializers.slotOf(t.name);
    if ((slot >= 0 && initializers.firstStage[slot] !== -1) || !isTrainable(t)) continue;
    uses ??= new InitializerUses(inferred);
    leftOver.push({ name: t.name, elements: elementCount(t.dims), use: uses.of(t.name) });
  }
  const leftOverParams = leftOver.reduce((a, t) => a + t.elements, 0);
  if (leftOverParams !== plan.otherParams) throw new Error(`parameter conservation: the plan holds ${count(plan.otherParams)} parameters outside its layers, the model's initializers outside every layer are ${count(leftOverParams)}`);

  const warnings: string[] = [];
  const named = (list: readonly LeftOverInitializer[]): string => {
    const shown = list.slice(0, 4).map((t) => `'${t.name}' (${count(t.elements)})`).join(', ');
    return list.length > 4 ? `${shown} and ${list.length - 4} more` : shown;
  };
  const experts = leftOver.filter((t) => t.use === 'gemm-weight');
  if (experts.length > 0) throw new InputError(`${path}: GEMM weight${experts.length > 1 ? 's' : ''} ${named(experts)} ${experts.length > 1 ? 'are' : 'is'} selected from a stacked tensor (an expert weight) but owned by no layer: the plan would miss ${experts.length > 1 ? 'their' : 'its'} GEMMs' parameters and gradients`);
  const norms = leftOver.filter((t) => t.use === 'norm-parameter');
  if (norms.length > 0) {
    const what = `norm parameter${norms.length > 1 ? 's' : ''} ${named(norms)} ${norms.length > 1 ? 'are' : 'is'} owned by no layer`;
    if (options.vectorOps) throw new InputError(`${path}: ${what}: modtrans does not recognise this norm's export form, so its gradient, optimizer state and pipeline stage would be wrong`);
    // GEMM-only lowering has no norm layers by choice: said, not refused.
    const where = plan.world.pp > 1 ? `held by the last stage (stage ${plan.world.pp - 1}), not each by its own; --vector-ops on places them` : 'counted as replicated parameters outside the layers';
    warnings.push(`${what} (--vector-ops off): ${where}`);
  }
  const others = leftOver.filter((t) => t.use === 'other');
  if (others.length > 0) {
    const where = plan.world.pp > 1 ? `held by the last stage (stage ${plan.world.pp - 1})` : 'counted as replicated parameters outside the layers';
    warnings.push(`${others.length} initializer${others.length > 1 ? 's' : ''} outside every layer, ${count(others.reduce((a, t) => a + t.elements, 0))} parameters ${where}: ${named(others)}`);
  }
  const modelParams = layerParams + leftOverParams;
  const extras = [stageCopyParams > 0 ? `${count(stageCopyParams)} tied copies` : '', paddingParams > 0 ? `${count(paddingParams)} padding` : ''].filter((s) => s !== '');
  const conserved = leftOver.length === 0
    ? `params conserved (${count(modelParams)}${extras.length > 0 ? ` + ${extras.join(' + ')}` : ''} over ${axesOf(plan.world).ep > 1 ? 'TP and EP' : 'TP'} ranks and stages)`
    : `params conserved but ${count(leftOverParams)} outside layers (${leftOver.length} initializer${leftOver.length > 1 ? 's' : ''})`;
  const owned = norms.length === 0 ? 'norm scales and expert weights owned' : 'norm parameters outside layers (--vector-ops off)';
  // (d) The plan refuses a pipeline cut that does not close (structure/cuts.ts): a planned pipeline's do.
  const boundaries = plan.world.pp * plan.pipeline.virtualStages - 1;
  const carried = (plan.pipeline.sends ?? []).reduce((a, x) => a + x.values.filter((v) => v.carried).length, 0);
  const what = carried === 0 ? 'one tensor each' : `the residual stream each, and ${carried} value${carried === 1 ? '' : 's'} carried along (an encoder's output, a shared bias)`;
  const cuts = plan.world.pp > 1 ? `; pipeline cuts close (${boundaries} ${boundaries === 1 ? 'boundary' : 'boundaries'}, ${what})` : '';
  return { modelParams, layerParams, planParams, stageCopyParams, paddingParams, leftOver, warnings, summary: `${conserved}; ${owned}${cuts}` };
}

/** Elements of a tensor a layer holds: its initializer's dims, which the layer's own count must agree with. */
function tensorElements(layer: Layer, name: string, t: TensorRef | undefined, path: string): number {
  if (t === undefined) throw new Error(`parameter conservation: layer ${layer.name} holds '${name}', which is no initializer of ${path}`);
  const elements = elementCount(t.dims);
  const counted = layer.tensorParams?.get(name);
  if (counted !== undefined && counted !== elements) throw new Error(`parameter conservation: layer ${layer.name} counts ${count(counted)} parameters of '${name}', whose dims hold ${count(elements)}`);
  return elements;
}

/**
 * A layer's parameters of one kind over the T ranks against what it owns on its stage: equal for
 * replicated tensors; for split ones at least equal and padded by under one row per rank.
 */
function checkShare(l: LayerPlan, kind: 'weight' | 'bias', onRanks: number, own: number, split: boolean, tp: number): void {
  const excess = Math.round(onRanks - own);
  if (excess === 0) return;
  const layer = l.layer;
  const rowWidth = Math.max(1, layer.gemm.fwd.k, layer.outputShape[layer.outputShape.length - 1] ?? 1);
  const padded = split && excess > 0 && excess < tp * rowWidth;
  if (padded) return;
  const what = excess > 0 ? 'counted twice' : 'missing';
  throw new Error(`parameter conservation: layer ${layer.name} (${l.role}) holds ${count(onRanks)} ${kind} parameters over ${split ? `its ${tp} tensor-parallel ranks` : 'a rank'}, its tensors ${count(own)}: ${count(Math.abs(excess))} ${what}`);
}

/**
 * How a parameter passes through an op on its way to where it is applied, from the op's row: a
 * view keeps it whole (the row's `weightView`: reshapes, transposes, casts); another layout op
 * selects part of it (Gather, Slice, Split: one expert of a stacked [E, ...] weight); linear
 * element-wise arithmetic transforms it (Gemma's 1 + w). Anything else applies it.
 */
function parameterPassage(node: Node): 'view' | 'select' | 'arithmetic' | undefined {
  const row = opRowOf(node);
  if (row?.weightView !== undefined) return 'view';
  const flow = flowOf(row);
  if (flow === 'layout') return 'select';
  return flow === 'linear' && isElementwise(node) ? 'arithmetic' : undefined;
}

/** Element-wise vector work (the op table's elementwise and transcendental classes). */
function isElementwise(node: Node): boolean {
  const c = opRowOf(node)?.vectorClass;
  return c === 'elementwise' || c === 'transcendental';
}

/** What the graph does with an initializer, read from its data flow. */
class InitializerUses {
  private readonly producer: ReadonlyMap<string, Node>;
  private readonly consumers: ReadonlyMap<string, readonly Node[]>;
  private readonly tracer: WeightTracer;

  constructor(private readonly inferred: InferredModel) {
    this.tracer = weightTracerOf(inferred);
    ({ producer: this.producer, consumers: this.consumers } = this.tracer.index.links);
  }

  private lastDim(value: string): number | undefined {
    const shape = this.inferred.values.get(value)?.shape;
    const d = shape?.[shape.length - 1];
    return typeof d === 'number' ? d : undefined;
  }

  of(name: string): LeftOverInitializer['use'] {
    const elements = this.inferred.values.get(name)?.shape?.reduce<number>((a, d) => a * (typeof d === 'number' ? d : Number.NaN), 1);
    // Forward through the parameter's own transformations (up to 4 ops), to where it meets activations.
    let frontier: { value: string; selected: boolean }[] = [{ value: name, selected: false }];
    for (let hop = 0; hop < 5 && frontier.length > 0; hop++) {
      const next: { value: string; selected: boolean }[] = [];
      for (const { value, selected } of frontier) {
        for (const node of this.consumers.get(value) ?? []) {
          const row = opRowOf(node);
          const position = node.inputs.indexOf(value);
          if (row?.vectorClass === 'layernorm' && [...(row.parameterInputs?.scale ?? []), ...(row.parameterInputs?.shift ?? [])].includes(position)) return 'norm-parameter';
          const stacked = (this.inferred.values.get(value)?.shape?.length ?? 0) >= 3 && row?.lowering !== undefined && !row.lowering.startsWith('conv');
          if (row?.gemm === true && (selected || stacked)) return 'gemm-weight';
          const activations = node.inputs.filter((i) => i !== '' && i !== value && this.tracer.origin(i) === 'activation');
          const passage = parameterPassage(node);
          if (passage === 'arithmetic' && activations.length > 0) {
            // One value per feature of a normalised activation: its scale or shift.
            if (activations.some((o) => this.lastDim(o) === elements && this.isNormalised(o))) return 'norm-parameter';
            continue;
          }
          if (passage !== undefined) for (const o of node.outputs) if (o !== '') next.push({ value: o, selected: selected || passage === 'select' });
        }
      }
      frontier = next;
    }
    return 'other';
  }

  /** Whether a value is computed, through a few element-wise ops, from a mean over features (a norm's statistic). */
  private isNormalised(value: string): boolean {
    const seen = new Set<string>();
    let frontier = [value];
    for (let hop = 0; hop < 10 && frontier.length > 0; hop++) {
      const next: string[] = [];
      for (const v of frontier) {
        if (seen.has(v)) continue;
        seen.add(v);
        const node = this.producer.get(v);
        if (node === undefined || node.domain !== '') continue;
        // The statistic: a reduction over features (a mean, or a sum over the width), or a fused norm.
        const c = opRowOf(node)?.vectorClass;
        if (c === 'reduce' || c === 'layernorm') return true;
        if (isElementwise(node)) for (const i of node.inputs) if (i !== '') next.push(i);
      }
      frontier = next;
    }
    return false;
  }
}
