/**
 * Tensor-parallel roles from the model's structure (structure/), as Megatron-LM lays a
 * transformer out:
 * - attention: Q, K, V (fused or not) column-parallel, split by heads and KV groups; the scores
 *   and context products split by heads; the output projection row-parallel;
 * - MLP: up and gate column-parallel, down row-parallel; a mixture of experts' router replicated;
 * - the word embedding vocab-parallel, the LM head column-parallel over the vocabulary (tied or
 *   not); position and token-type embeddings, poolers and classifiers replicated;
 * - vector work split where it reads split activations, replicated on the residual stream;
 * - in a transformer, a weight layer in no pattern (ViT's patch Conv, a conv stem) replicated, as
 *   Megatron-LM keeps every layer it does not parallelise (vit_backbone's patch embedding);
 * - without a transformer pattern (CNNs, RNNs): the legacy MODEL split.
 * The reason is display only: nothing downstream reads it.
 */
import type { Layer } from '../layers/types.js';
import type { LayerPart, ModelStructure } from '../structure/types.js';
import type { TpRole } from './types.js';

export interface RoleAssignment {
  role: TpRole;
  reason: string;
  /** The column-parallel LM head, which also carries the vocab-parallel loss's reductions. */
  lmHead?: boolean;
}

/** Roles that need no per-layer text, one frozen object each (a model of 100k layers needs no 100k copies). */
const FIXED = {
  noPattern: { role: 'split', reason: 'no transformer pattern: outputs split and all-gathered' },
  vectorSplit: { role: 'split', reason: 'vector work on the split outputs' },
  transformerOther: { role: 'replicated', reason: 'in no Megatron pattern (a patch or conv stem, an odd GEMM): replicated' },
  norm: { role: 'replicated', reason: 'norm on the full hidden state (split by sequence under --sp)' },
  stream: { role: 'replicated', reason: 'on the full hidden state (split by sequence under --sp)' },
  split: { role: 'sharded', reason: 'on activations split by heads or features' },
  core: { role: 'sharded', reason: 'attention core (split by heads)' },
  scores: { role: 'heads', reason: 'attention scores QK^T (split by heads)' },
  context: { role: 'heads', reason: 'attention context AV (split by heads)' },
  position: { role: 'replicated', reason: 'position/type embedding' },
  embedding: { role: 'replicated', reason: 'embedding' },
  word: { role: 'vocab', reason: 'word embedding (vocab-parallel)' },
  lm: { role: 'column', reason: 'LM head (column-parallel over the vocabulary)', lmHead: true },
  pooler: { role: 'replicated', reason: 'pooler (replicated)' },
  classifier: { role: 'replicated', reason: 'classifier head (replicated)' },
  router: { role: 'replicated', reason: 'MoE router (replicated)' },
  up: { role: 'column', reason: 'MLP up projection' },
  gate: { role: 'column', reason: 'MLP gate projection' },
  down: { role: 'row', reason: 'MLP down projection' },
  expertUp: { role: 'column', reason: 'expert up projection' },
  expertGate: { role: 'column', reason: 'expert gate projection' },
  expertDown: { role: 'row', reason: 'expert down projection' },
  qkv: { role: 'column', reason: 'fused QKV projection' },
  q: { role: 'column', reason: 'Q projection' },
  k: { role: 'column', reason: 'K projection' },
  v: { role: 'column', reason: 'V projection' },
  kv: { role: 'column', reason: 'fused K/V projection' },
  out: { role: 'row', reason: 'attention output projection' },
} as const satisfies Record<string, RoleAssignment>;
for (const r of Object.values(FIXED)) Object.freeze(r);

export function assignTpRoles(structure: ModelStructure, layers: readonly Layer[]): RoleAssignment[] {
  if (!structure.transformer) return layers.map((l) => (l.kind === 'vector' ? FIXED.vectorSplit : FIXED.noPattern));
  return structure.parts.map((p) => roleOf(structure, p));
}

function roleOf(structure: ModelStructure, p: LayerPart): RoleAssignment {
  switch (p.kind) {
    case 'attention':
      return FIXED[p.role];
    case 'mlp': {
      const expert = structure.mlps[p.mlp]?.expertOf !== undefined;
      if (p.role === 'up') return expert ? FIXED.expertUp : FIXED.up;
      if (p.role === 'gate') return expert ? FIXED.expertGate : FIXED.gate;
      return expert ? FIXED.expertDown : FIXED.down;
    }
    case 'router':
      return FIXED.router;
    case 'embedding':
      return p.role === 'word' ? FIXED.word : p.role === 'other' ? FIXED.embedding : FIXED.position;
    case 'head':
      return FIXED[p.role];
    case 'norm':
      return FIXED.norm;
    case 'vector':
      return p.region === 'stream' ? FIXED.stream : p.region === 'core' ? FIXED.core : FIXED.split;
    case 'other':
      return FIXED.transformerOther;
  }
}
