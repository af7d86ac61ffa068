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
import { ANY_FLOW, type StructureGraph } from './graph.js';
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
 * `expertOf`); returns the router layer of each new MoE MLP.
 */
export function groupExperts(graph: StructureGraph, isLinear: IsLinear, mlps: MlpStructure[], taken: ReadonlySet<number>): Map<number, number> {
  const layers = graph.layers;
  const byInput = new Map<string, number[]>();
  mlps.forEach((m, i) => {
    const first = at(layers, at(m.gate.length > 0 ? m.gate : m.up, 0));
    const input = first.activationInputs[0];
    if (input === undefined) return;
    const key = `${graph.root(input)}|${m.width}|${m.kind}`;
    const list = byInput.get(key);
    if (list === undefined) byInput.set(key, [i]);
    else list.push(i);
  });
  const routers = new Map<number, number>();
  for (const [key, experts] of byInput) {
    if (experts.length < 2) continue;
    const root = key.slice(0, key.indexOf('|'));
    // The router: a free linear layer on the same tokens with one output per expert.
    const router = layers.findIndex((l, i) => isLinear(i) && !taken.has(i) && l.gemm.fwd.n === experts.length && l.activationInputs[0] !== undefined && graph.root(l.activationInputs[0]) === root);
    if (router < 0) continue;
    const moe = mlps.length;
    const members = experts.map((e) => at(mlps, e));
    for (const m of members) m.expertOf = moe;
    const topK = topKOf(graph.inferred, graph, at(layers, router).output);
    mlps.push({
      kind: 'moe',
      up: members.flatMap((m) => m.up),
      gate: members.flatMap((m) => m.gate),
      down: members.flatMap((m) => m.down),
      width: at(members, 0).width,
      router,
      experts,
      ...(topK !== undefined ? { topK } : {}),
    });
    routers.set(moe, router);
  }
  return routers;
}

/** K of the TopK reached from the router's scores (through softmax, casts and layout). */
function topKOf(inferred: InferredModel, graph: StructureGraph, scores: string): number | undefined {
  const seen = new Set<string>();
  const stack = [scores];
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    if (seen.has(v) || seen.size > 64) continue;
    seen.add(v);
    for (const node of graph.consumers.get(v) ?? []) {
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
