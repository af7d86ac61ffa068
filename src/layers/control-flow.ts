/**
 * Compute inside control flow: the bodies an If, Loop or Scan runs are lowered like the main
 * graph, with the shapes inferred inside them, their node names prefixed by the parent's
 * (`If_0/then/Conv_3`) and their GEMM counts multiplied by the times the body runs. An If whose
 * condition did not fold, or a Loop whose trip count is unknown, is an error naming what to set.
 */
import { graphError, InputError } from '../errors.js';
import { unboundSymbols } from '../ir/dim.js';
import type { Graph, Node, ValueInfo } from '../ir/graph.js';
import { bindingHints } from '../shape/bind.js';
import type { ControlFlowUse, GraphRun } from '../shape/context.js';
import type { InferredModel } from '../shape/infer.js';
import { gemmCarrier } from './gemm-ops.js';
import type { Layer } from './types.js';
import { isWeightConstant } from './weights.js';

/** Where a graph being lowered sits: its node-name prefix and how many times it runs. */
export interface BodyScope {
  prefix: string;
  repeat: number;
}

function subgraphsOf(node: Node): Graph[] {
  const out: Graph[] = [];
  for (const a of node.attributes.values()) {
    if (a.kind === 'graph') out.push(a.value);
    else if (a.kind === 'graphs') out.push(...a.value);
  }
  return out;
}

/** Whether a graph, or any graph nested in its nodes, holds GEMM-bearing nodes (lowered or not). */
export function holdsCompute(graph: Graph): boolean {
  return graph.nodes.some((n) => gemmCarrier(n) !== undefined || subgraphsOf(n).some(holdsCompute));
}

function graphInputs(inferred: InferredModel): ValueInfo[] {
  return inferred.model.graph.inputs.filter((i) => !inferred.initializerNames.has(i.name));
}

function outerWeightConstants(outer: InferredModel): string[] {
  return outer.order.filter(isWeightConstant).flatMap((n) => n.outputs.filter((o) => o !== ''));
}

/** A body seen as an InferredModel: its values over the enclosing graph's, its own nodes. */
function bodyView(outer: InferredModel, run: GraphRun): InferredModel {
  return {
    model: outer.model,
    values: run.values.over(outer.values),
    order: run.order,
    nodeValues: run.nodeValues,
    // The enclosing graph's weight Constants are the body's initializers too (Silero VAD v5's LSTM
    // slices weights inlined one If further out).
    initializerNames: new Set([...outer.initializerNames, ...outerWeightConstants(outer), ...run.graph.initializers.map((i) => i.name)]),
    controlFlow: run.controlFlow,
  };
}

/** The layers of the bodies `node` runs, lowered by `lowerGraph` in the body's scope. */
export function lowerBodies(
  inferred: InferredModel,
  node: Node,
  use: ControlFlowUse,
  scope: BodyScope,
  lowerGraph: (view: InferredModel, scope: BodyScope) => Layer[],
): Layer[] {
  const file = inferred.model.path;
  const where = { ...node, name: `${scope.prefix}${node.name}` };
  if (use.unresolved !== undefined) {
    if (!use.unresolved.branches.some((b) => holdsCompute(b.graph))) return [];
    const inputs = use.unresolved.conditionInputs;
    const how = inputs.length > 0
      ? `its condition depends on the value of input${inputs.length > 1 ? 's' : ''} ${inputs.map((i) => `'${i}'`).join(', ')}: choose the branch with ${inputs.map((i) => `--input ${i}=VALUE`).join(' ')}`
      : 'its condition is only known at run time, so no branch can be chosen';
    throw graphError(file, where, `the branches hold GEMMs and ${how}`);
  }
  const layers: Layer[] = [];
  for (const body of use.bodies) {
    if (!holdsCompute(body.run.graph) || body.repeat === 0) continue;
    if (typeof body.repeat !== 'number') {
      const hints = bindingHints(unboundSymbols([body.repeat]), graphInputs(inferred));
      throw graphError(file, where, `its ${body.label} holds GEMMs and runs ${String(body.repeat)} times, known only at run time; bind ${hints.join(', ')}`);
    }
    const prefix = `${where.name || node.opType}/${body.label}/`;
    layers.push(...lowerGraph(bodyView(inferred, body.run), { prefix, repeat: scope.repeat * body.repeat }));
  }
  return layers;
}

/** Nodes that run: the main graph's and, recursively, those of the bodies control flow executes. */
export function executedNodes(inferred: { order: readonly Node[]; controlFlow: ReadonlyMap<Node, ControlFlowUse> }): Node[] {
  const out: Node[] = [];
  forEachExecutedNode(inferred, (node) => out.push(node));
  return out;
}

/** Calls `visit` on each node that runs, in the order executedNodes lists them (no list of them all). */
export function forEachExecutedNode(inferred: { order: readonly Node[]; controlFlow: ReadonlyMap<Node, ControlFlowUse> }, visit: (node: Node) => void): void {
  const hasControlFlow = inferred.controlFlow.size > 0;
  for (const node of inferred.order) {
    visit(node);
    const use = hasControlFlow ? inferred.controlFlow.get(node) : undefined;
    if (use !== undefined) for (const body of use.bodies) forEachExecutedNode(body.run, visit);
  }
}

/** A workload without layers while GEMMs sit in sub-graphs would silently drop them: refuse it. */
export function checkComputeLowered(inferred: InferredModel, layers: readonly Layer[]): void {
  if (layers.length > 0) return;
  const holders = inferred.order.filter((n) => subgraphsOf(n).some(holdsCompute));
  if (holders.length === 0) return;
  const names = holders.map((n) => `'${n.name || n.opType}' (${n.opType})`).join(', ');
  throw new InputError(`${inferred.model.path}: no GEMM layers: the model's GEMMs sit in control-flow sub-graphs that do not run with these inputs (${names})`);
}
