/**
 * MLPs, found from their down projection: a linear layer whose input is reached from one or two
 * other linear layers through element-wise work that crosses a nonlinearity (any unary one:
 * GELU in every export form, ReLU, SiLU, SELU...) or a product of two activations (a gate). One
 * feeder is a dense MLP's up projection; two are a gated MLP's gate (the one behind the
 * nonlinearity) and up. Norms and softmax stop the walk, so a head reading a normed hidden state
 * is no MLP; the down projection returns to the up projection's input width, so a pooler (dense,
 * tanh) feeding a classifier is no MLP either.
 * A mixture of experts is several MLPs of one width reading the same tokens (the whole hidden
 * state in the dense export form, or a gather of it by index), with a router: a linear layer on
 * the same tokens with one output per expert. Its top-k is the constant K of the TopK that reads
 * the router's scores.
 */
import { at } from '../errors.js';
import type { InferredModel } from '../shape/infer.js';
import type { IsLinear } from './attention.js';
import { ANY_FLOW, isProduct, type StructureGraph } from './graph.js';
import type { MlpStructure } from './types.js';

export function findMlps(graph: StructureGraph, isLinear: IsLinear, taken: ReadonlySet<number>, barrier: (layer: number) => boolean): MlpStructure[] {
  const layers = graph.layers;
  const used = new Set(taken);
  const mlps: MlpStructure[] = [];
  layers.forEach((l, down) => {
    if (!isLinear(down) || used.has(down)) return;
    const input = l.activationInputs[0];
    if (input === undefined) return;
    const behind = graph.behind(input, ANY_FLOW, barrier);
    const feeders = [...behind.layers].filter((p) => isLinear(p) && !used.has(p) && p < down);
    if (feeders.length === 0 || feeders.length > 2 || feeders.length !== behind.layers.size) return;
    if (behind.throughNonlinear.size === 0 && !behind.bilinear) return;
    feeders.sort((a, b) => a - b);
    let up = feeders;
    let gate: number[] = [];
    if (feeders.length === 2) {
      const gated = feeders.filter((f) => behind.throughNonlinear.has(f));
      gate = gated.length === 1 ? gated : [at(feeders, 0)];
      up = feeders.filter((f) => !gate.includes(f));
    }
    // An MLP maps the hidden state back onto its own width (a pooler feeding a classifier does not).
    if (l.gemm.fwd.n !== at(layers, at(up, 0)).gemm.fwd.k) return;
    for (const f of feeders) used.add(f);
    used.add(down);
    mlps.push({ kind: gate.length > 0 ? 'gated' : 'dense', up, gate, down: [down], width: at(layers, at(up, 0)).gemm.fwd.n });
  });
  return mlps;
}

/**
 * Groups expert MLPs into mixture-of-experts MLPs (appended to `mlps`; each expert gets
 * `expertOf`, each shared expert `sharedOf`); returns the router layer of each new MoE MLP.
 * The router is a free linear layer on the experts' tokens with one score per routed expert. An
 * expert is routed when the router's scores reach it without crossing another linear layer:
 * its tokens are gathered by the router's choice (the index form) or its output is scaled by a
 * routing weight (the dense form). An MLP on the same tokens that the router does not reach is
 * a shared expert (DeepSeek-MoE, Qwen-MoE): every token runs through it, whatever its width.
 */
export function groupExperts(graph: StructureGraph, isLinear: IsLinear, mlps: MlpStructure[], taken: ReadonlySet<number>): Map<number, number> {
  const layers = graph.layers;
  const tokensOf = (m: MlpStructure): string | undefined => {
    const input = at(layers, at(m.gate.length > 0 ? m.gate : m.up, 0)).activationInputs[0];
    return input === undefined ? undefined : graph.root(input);
  };
  const byInput = new Map<string, number[]>();
  mlps.forEach((m, i) => {
    const root = tokensOf(m);
    if (root === undefined) return;
    const key = `${root}|${m.width}|${m.kind}`;
    const list = byInput.get(key);
    if (list === undefined) byInput.set(key, [i]);
    else list.push(i);
  });
  const routers = new Map<number, number>();
  const usedRouters = new Set<number>();
  for (const [key, candidates] of byInput) {
    if (candidates.length < 2) continue;
    const root = key.slice(0, key.indexOf('|'));
    let found: { router: number; routed: number[]; reach: Set<string> } | undefined;
    for (let r = 0; r < layers.length && found === undefined; r++) {
      const l = at(layers, r);
      if (!isLinear(r) || taken.has(r) || usedRouters.has(r) || l.gemm.fwd.n < 2 || l.gemm.fwd.n > candidates.length) continue;
      if (l.activationInputs[0] === undefined || graph.root(l.activationInputs[0]) !== root) continue;
      const reach = routingReach(graph, isLinear, l.output);
      const routed = candidates.filter((e) => isRouted(graph, at(mlps, e), reach));
      if (routed.length === l.gemm.fwd.n) found = { router: r, routed, reach };
    }
    if (found === undefined) continue;
    const { router, routed: experts, reach } = found;
    usedRouters.add(router);
    const moe = mlps.length;
    const members = experts.map((e) => at(mlps, e));
    for (const m of members) m.expertOf = moe;
    // Shared experts: the other MLPs on the same tokens, any width, that the router does not reach.
    const shared = mlps.flatMap((m, i) => (i < moe && m.expertOf === undefined && m.sharedOf === undefined && tokensOf(m) === root && !isRouted(graph, m, reach) ? [i] : []));
    for (const i of shared) at(mlps, i).sharedOf = moe;
    const topK = topKOf(graph.inferred, graph, at(layers, router).output);
    // Routed: the experts' GEMMs run on fewer rows than the router scores (the graph selected them).
    const expertRows = at(layers, at(at(members, 0).gate.length > 0 ? at(members, 0).gate : at(members, 0).up, 0)).gemm.fwd.m;
    const dispatch = expertRows < at(layers, router).gemm.fwd.m ? 'routed' : 'dense';
    mlps.push({
      kind: 'moe',
      up: members.flatMap((m) => m.up),
      gate: members.flatMap((m) => m.gate),
      down: members.flatMap((m) => m.down),
      width: at(members, 0).width,
      router,
      experts,
      ...(topK !== undefined ? { topK } : {}),
      dispatch,
      ...(shared.length > 0 ? { shared } : {}),
    });
    routers.set(moe, router);
  }
  return routers;
}

/** Steps from the router's scores to an expert: softmax, top-k, one-hot, NonZero, the gathers (~15 in HF's index form). */
const ROUTING_HOPS = 48;

/** Values computed from the router's scores without crossing another linear layer. */
function routingReach(graph: StructureGraph, isLinear: IsLinear, scores: string): Set<string> {
  const reach = new Set<string>([scores]);
  let frontier = [scores];
  for (let hop = 0; hop < ROUTING_HOPS && frontier.length > 0; hop++) {
    const next: string[] = [];
    for (const v of frontier) {
      for (const node of graph.consumers.get(v) ?? []) {
        const layer = graph.layerByOutput.get(node.outputs[0] ?? '');
        if (layer !== undefined && isLinear(layer)) continue;
        for (const o of node.outputs) if (o !== '' && !reach.has(o)) { reach.add(o); next.push(o); }
      }
    }
    frontier = next;
  }
  return reach;
}

/** Whether the router picks an expert's tokens (its input is in `reach`) or weighs its output (a product with a value in `reach`). */
function isRouted(graph: StructureGraph, m: MlpStructure, reach: ReadonlySet<string>): boolean {
  const layers = graph.layers;
  const input = at(layers, at(m.gate.length > 0 ? m.gate : m.up, 0)).activationInputs[0];
  if (input !== undefined && reach.has(input)) return true;
  const seen = new Set<string>();
  const stack = m.down.map((d) => at(layers, d).output);
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    if (seen.has(v)) continue;
    seen.add(v);
    for (const node of graph.consumers.get(v) ?? []) {
      if (isProduct(node) && node.inputs.some((i) => i !== v && reach.has(i))) return true;
      if (graph.flow(node) === 'layout') for (const o of node.outputs) if (o !== '') stack.push(o);
    }
  }
  return false;
}

/** K of the TopK reached from the router's scores (through softmax, casts and layout). */
function topKOf(inferred: InferredModel, graph: StructureGraph, scores: string): number | undefined {
  const seen = new Set<string>();
  const stack = [scores];
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    if (seen.has(v) || seen.size > 64) continue;
    seen.add(v);
    for (const node of graph.consumers.get(v) ?? []) {
      // Switch Transformers route each token to its ArgMax expert: top-1.
      if (node.domain === '' && node.opType === 'ArgMax') return 1;
      if (node.domain === '' && node.opType === 'TopK') {
        const kValue = inferred.values.get(node.inputs[1] ?? '')?.value?.[0];
        const k = typeof kValue === 'number' ? kValue : node.attributes.get('k')?.value;
        return typeof k === 'number' ? k : undefined;
      }
      if (graph.flow(node) !== 'opaque') for (const o of node.outputs) if (o !== '') stack.push(o);
    }
  }
  return undefined;
}
