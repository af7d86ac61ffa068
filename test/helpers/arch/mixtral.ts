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
  /**
   * 'dense' (default): every expert on every token, scaled by its gate column. 'index': HF
   * Mixtral's loop, each expert on the tokens `torch.where` picks, its output `index_add_`ed back;
   * the mask from `one_hot(selected).permute(2, 1, 0)[e]` ('one-hot', HF's) or `selected == e`.
   */
  dispatch?: 'dense' | 'index';
  mask?: 'one-hot' | 'equal';
  /**
   * A shared expert beside the routed ones, SwiGLU of its own width: DeepSeek-MoE's
   * `shared_experts` (added to the routed sum) or, with `gated`, Qwen2-MoE's `shared_expert`
   * scaled by sigmoid(shared_expert_gate(x)) (a Linear(h, 1)).
   */
  shared?: { width: number; gated?: boolean };
}

/** The shared expert added to the routed experts' sum [T, h]. */
function sharedExpert(c: LlamaContext, flat: string, routed: string, scope: string, o: MixtralOptions): string {
  const { g } = c;
  const shared = o.shared;
  if (shared === undefined) return routed;
  const ss = `${scope}/shared_expert`;
  const gate = g.linear(flat, `${ss}/gate_proj`, o.hidden, shared.width, false);
  const up = g.linear(flat, `${ss}/up_proj`, o.hidden, shared.width, false);
  let out = g.linear(g.op('Mul', [silu(g, gate, `${ss}/act_fn`), up], ss), `${ss}/down_proj`, shared.width, o.hidden, false);
  if (shared.gated === true) out = g.op('Mul', [g.op('Sigmoid', [g.linear(flat, `${scope}/shared_expert_gate`, o.hidden, 1, false)], scope), out], scope);
  return g.op('Add', [routed, out], scope);
}

/**
 * The index form, as torch 1.13 exports HF's MixtralSparseMoeBlock (checked against an export at
 * opset 17): NonZero of each expert's mask -> Transpose -> Split -> Squeeze gives (slot, token)
 * pairs; the tokens are gathered from the flattened hidden state, the routing weights from the
 * flattened [T x k] weights at token x k + slot; index_add_ is a ScatterElements of the weighted
 * output into zeros, added to the running sum.
 */
function indexedExperts(c: LlamaContext, flat: string, selected: string, normalised: string, scope: string, o: MixtralOptions): string {
  const { g } = c;
  const h = o.hidden;
  const tokens = o.batch * o.seq;
  const oneHot = o.mask === 'equal' ? undefined : g.op('Transpose', [g.op('OneHot', [selected, g.ints([o.experts], scope), g.ints([0, 1], scope)], scope, { axis: -1 })], scope, { perm: [2, 1, 0] });
  const lifted = g.op('Unsqueeze', [flat, g.ints([0], scope)], scope);
  const weightsFlat = g.op('Flatten', [g.op('Unsqueeze', [normalised, g.ints([2], scope)], scope)], scope, { axis: 2 });
  let out = g.op('ConstantOfShape', [g.ints([tokens, h], scope)], scope);
  for (let e = 0; e < o.experts; e++) {
    const es = `${scope}/experts.${e}`;
    const mask = oneHot === undefined
      ? g.op('Equal', [selected, g.intScalar(e, scope)], scope)
      : g.op('Cast', [g.op('Gather', [oneHot, g.intScalar(e, scope)], scope, { axis: 0 })], scope, { to: 9 });
    const pairs = g.op('Transpose', [g.op('NonZero', [mask], scope)], scope, { perm: [1, 0] });
    // (slot, token) pairs from the [k, T] one-hot slice; (token, slot) from `selected == e` [T, k].
    const [first, second] = g.node('Split', [pairs, g.ints([1, 1], scope)], scope, { axis: 1 }, 2) as [string, string];
    const [slotCol, tokenCol] = oneHot === undefined ? [second, first] : [first, second];
    const slot = g.op('Squeeze', [slotCol, g.ints([1], scope)], scope);
    const token = g.op('Squeeze', [tokenCol, g.ints([1], scope)], scope);
    const current = g.op('Reshape', [g.op('Gather', [lifted, token], scope, { axis: 1 }), g.ints([-1, h], scope)], scope, { allowzero: 0 });
    const w1 = g.linear(current, `${es}/w1`, h, o.ffn, false);
    const act = o.activation === undefined ? silu(g, w1, `${es}/act_fn`) : unary(g, w1, `${es}/act_fn`, o.activation);
    const w3 = g.linear(current, `${es}/w3`, h, o.ffn, false);
    const expert = g.linear(g.op('Mul', [act, w3], es), `${es}/w2`, o.ffn, h, false);
    const at = g.op('Add', [slot, g.op('Mul', [token, g.intScalar(o.topK, scope)], scope)], scope);
    const weight = g.op('Reshape', [g.op('Gather', [weightsFlat, at], scope, { axis: 0 }), g.ints([-1, 1], scope)], scope, { allowzero: 0 });
    const weighted = g.op('Cast', [g.op('Mul', [expert, weight], scope)], scope, { to: FLOAT });
    const where = g.op('Expand', [g.op('Unsqueeze', [token, g.ints([1], scope)], scope), g.op('Shape', [weighted], scope)], scope);
    const zeros = g.op('ConstantOfShape', [g.op('Shape', [out], scope)], scope);
    out = g.op('Add', [out, g.op('ScatterElements', [zeros, where, weighted], scope, { axis: 0 })], scope);
  }
  return out;
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
  if (o.dispatch === 'index') return g.op('Reshape', [sharedExpert(c, flat, indexedExperts(c, flat, selected, normalised, scope, o), scope, o), g.ints([o.batch, o.seq, h], scope)], scope, { allowzero: 0 });
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
  return g.op('Reshape', [sharedExpert(c, flat, out as string, scope, o), g.ints([o.batch, o.seq, h], scope)], scope, { allowzero: 0 });
}

/** The sparse MoE block's export forms, for tests that run each: [label, options]. */
export const MIXTRAL_FORMS = [
  ['dense form', {}],
  ['index form (one-hot mask, as HF writes it)', { dispatch: 'index', mask: 'one-hot' }],
  ['index form (selected == e)', { dispatch: 'index', mask: 'equal' }],
] as const satisfies readonly (readonly [string, Partial<MixtralOptions>])[];

export function mixtralModel(o: MixtralOptions): BuiltModel {
  return llamaModel(o, (c, x, scope) => sparseMoe(c, x, scope, o));
}
