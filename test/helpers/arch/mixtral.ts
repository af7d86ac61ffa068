/**
 * A Mixtral-like decoder: LLaMA's attention and norms (llama.ts) with a sparse MoE block written
 * densely, as torch 1.13 exports it (checked against an export of the module): tokens flattened to
 * [T, h], the router (`gate`, no bias) -> Softmax -> TopK(k) -> weights / their sum -> scattered
 * into a [T, E] matrix of zeros; every SwiGLU expert (w1, w3, w2) runs on every token and its
 * output is scaled by its column of that matrix and summed.
 */
import { llamaModel, type BuiltModel, type LlamaContext, type LlamaOptions } from './llama.js';
import { FLOAT, silu, unary } from './torch-graph.js';

export interface MixtralOptions extends LlamaOptions {
  experts: number;
  topK: number;
}

function sparseMoe(c: LlamaContext, x: string, scope: string, o: MixtralOptions): string {
  const { g } = c;
  const h = o.hidden;
  const tokens = o.batch * o.seq;
  const flat = g.op('Reshape', [x, g.ints([-1, h], scope)], scope, { allowzero: 0 });
  const logits = g.linear(flat, `${scope}/gate`, h, o.experts, false);
  const probs = g.op('Cast', [g.op('Softmax', [logits], scope, { axis: 1 })], scope, { to: FLOAT });
  const [weights, selected] = g.node('TopK', [probs, g.ints([o.topK], scope)], scope, { axis: -1, largest: 1, sorted: 1 }, 2) as [string, string];
  const normalised = g.op('Cast', [g.op('Div', [weights, g.op('ReduceSum', [weights, g.ints([-1], scope)], scope, { keepdims: 1 })], scope)], scope, { to: FLOAT });
  const dense = g.op('ScatterElements', [g.table([tokens, o.experts], scope), selected, normalised], scope, { axis: 1 });
  let out: string | undefined;
  for (let e = 0; e < o.experts; e++) {
    const es = `${scope}/experts.${e}`;
    const column = g.op('Slice', [dense, g.ints([e], scope), g.ints([e + 1], scope), g.ints([1], scope), g.ints([1], scope)], scope);
    const w1 = g.linear(flat, `${es}/w1`, h, o.ffn, false);
    const act = o.activation === undefined ? silu(g, w1, `${es}/act_fn`) : unary(g, w1, `${es}/act_fn`, o.activation);
    const w3 = g.linear(flat, `${es}/w3`, h, o.ffn, false);
    const expert = g.linear(g.op('Mul', [act, w3], es), `${es}/w2`, o.ffn, h, false);
    const weighted = g.op('Mul', [column, expert], scope);
    out = out === undefined ? weighted : g.op('Add', [out, weighted], scope);
  }
  return g.op('Reshape', [out as string, g.ints([o.batch, o.seq, h], scope)], scope, { allowzero: 0 });
}

export function mixtralModel(o: MixtralOptions): BuiltModel {
  return llamaModel(o, (c, x, scope) => sparseMoe(c, x, scope, o));
}
