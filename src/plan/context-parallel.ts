/**
 * Context parallelism (Megatron-LM's --context-parallel-size C, TransformerEngine's attention with
 * CP): the sequence of every micro-batch is split over the C ranks of a CP group, so every
 * token-wise layer runs on S/C of the tokens (GEMM rows, vector elements and activations / C, see
 * plan/shard.ts and memory/activations.ts); only attention needs the other ranks' tokens, and
 * gets them one of two ways (--cp-comm-type, TE's cp_comm_type):
 * - p2p (default; transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
 *   AttnFuncWithCPAndKVP2P): a ring over the CP group; forward C - 1 steps each sending the K/V
 *   chunk held to the next CP rank and receiving the previous rank's (context_parallel.py:1698-1716),
 *   the attention core computed in C chunks, one per K/V chunk, each overlapping the next transfer;
 *   backward C steps: the K/V chunk (step 0), the K/V chunk with its accumulated dK/dV (steps 1 to
 *   C - 2), dK/dV alone (step C - 1), so each rank's dK/dV ends back on it (context_parallel.py:2459-2497);
 * - a2a (DeepSpeed-Ulysses; AttnFuncWithCPAndQKVOA2A): an all-to-all each of Q, K and V from
 *   sequence-split to head-split before the core (context_parallel.py:4339, flash_attn_a2a_communicate
 *   issues one all_to_all_single per tensor) and one of the context back after it (:4485); backward
 *   the output gradient's (:4677) before and dQ, dK, dV's (:4837) after. TE requires the heads and
 *   the K/V heads (per TP rank) to divide by C (:4246).
 * The sequence is cut into 2C chunks, CP rank i holding chunks i and 2C - 1 - i, so that under a
 * causal mask every rank does the same work (Megatron-LM core/utils.py,
 * _get_batch_on_this_cp_rank_per_sequence_balancing: the sequence must divide by 2C). modtrans
 * counts the score and context products in full whatever the mask (a causal mask does not halve
 * them, with or without CP), so a rank's attention core is its S/C queries against all S keys:
 * 1/C of the whole. (TE, skipping masked blocks, does half of that per rank: 1/C of the causal
 * whole, the same ratio thanks to the balanced chunks.)
 */
import { at, InputError } from '../errors.js';
import type { Layer } from '../layers/types.js';
import type { ModelStructure } from '../structure/types.js';
import type { ContextParallelPlan, CpAttention, CpCommType } from './types.js';

export interface ContextParallelInput {
  structure: ModelStructure;
  layers: readonly Layer[];
  cp: number;
  tp: number;
  commType: CpCommType;
  microBatch: number;
  elementBytes: number;
}

/** The CP plan of a model, after Megatron's and TE's checks (one-line errors); undefined without CP. */
export function contextParallelOf(s: ContextParallelInput): ContextParallelPlan | undefined {
  const { structure, layers, cp, tp } = s;
  if (cp < 2) return undefined;
  const flag = `--cp ${cp}`;
  if (structure.attentions.length === 0) throw new InputError(`${flag}: context parallelism splits a transformer's sequence over the ranks; this model has no attention`);
  const cross = structure.attentions.find((a) => a.kind !== 'self');
  if (cross !== undefined) throw new InputError(`${flag}: layer ${at(layers, cross.scores).name} is a cross-attention; context parallelism is planned for self-attention only (Megatron-LM's GPT-style models)`);
  const attentions = structure.attentions.map((a): CpAttention => {
    const scores = at(layers, a.scores);
    const seq = scores.gemm.fwd.m;
    const where = `layer ${scores.name}`;
    if (seq % (2 * cp) !== 0) {
      throw new InputError(`${flag}: the sequence of ${seq} tokens (${where}) does not split into 2 x ${cp} = ${2 * cp} chunks (Megatron-LM's load-balanced split needs the sequence length divisible by 2 x --context-parallel-size)`);
    }
    const heads = a.heads / tp;
    const kvHeads = Math.max(1, a.kvHeads / tp);
    if (s.commType === 'a2a' && (heads % cp !== 0 || kvHeads % cp !== 0)) {
      const which = heads % cp !== 0 ? `${heads} attention heads` : `${kvHeads} K/V heads`;
      throw new InputError(`${flag} --cp-comm-type a2a: ${where} has ${which} per tensor-parallel rank (--tp ${tp}), not divisible by ${cp} (TransformerEngine's a2a splits the heads over the CP group); use --cp-comm-type p2p or a --cp dividing them`);
    }
    const tokens = s.microBatch * (seq / cp);
    const kBytes = tokens * kvHeads * a.headDim * s.elementBytes;
    const core = [a.scores, ...a.core, a.context].sort((x, y) => x - y);
    return { core, context: core[core.length - 1] ?? a.context, kvBytes: 2 * kBytes, qBytes: tokens * heads * a.headDim * s.elementBytes, kBytes };
  });
  // Every token-wise GEMM's rows are b x S (or S per head for the attention products): they split C ways.
  for (const l of layers) {
    if (l.kind === 'vector' || l.kind === 'embedding') continue;
    if (l.gemm.fwd.m % cp !== 0) throw new InputError(`layer ${l.name}: ${l.gemm.fwd.m} rows (tokens) do not split over ${flag}`);
  }
  return { size: cp, commType: s.commType, attentions };
}
