/**
 * The model's structure, recognised once from the lowered graph (structure/analyse.ts) and read by
 * every later stage: tensor-parallel roles, pipeline cuts, recomputation, activation memory, the
 * step graph and `inspect --structure`. Layers are referred to by their index in the lowered layer
 * list. Everything here is found from the graph's data flow, never from names.
 */

/** What one layer is in the model. */
export type LayerPart =
  | { kind: 'embedding'; role: 'word' | 'position' | 'token-type' | 'other' }
  /** A projection or product of attention `attention` (an index into `attentions`). */
  | { kind: 'attention'; role: AttentionRole; attention: number }
  /** A projection of MLP `mlp` (an index into `mlps`). */
  | { kind: 'mlp'; role: 'up' | 'gate' | 'down'; mlp: number }
  /** A mixture-of-experts router: the linear layer scoring the experts of MLP `mlp`. */
  | { kind: 'router'; mlp: number }
  | { kind: 'head'; role: HeadRole }
  /** Vector work: a norm, or other work on the residual stream or inside a split region. */
  | { kind: 'norm' }
  | { kind: 'vector'; region: VectorRegion }
  /** A weight layer in no recognised pattern (convolutions, RNNs, a transformer's odd GEMM). */
  | { kind: 'other' };

export type AttentionRole = 'q' | 'k' | 'v' | 'qkv' | 'kv' | 'scores' | 'context' | 'out';
export type HeadRole = 'lm' | 'pooler' | 'classifier';

/**
 * Where vector work sits: 'split' on activations a column-parallel layer or the attention core
 * split by heads or features (GELU of the MLP, softmax of the scores, the loss on split logits);
 * 'core' inside an attention core (between scores and context); 'stream' on the full hidden state
 * (residual adds, dropout on the stream, everything in models without the pattern).
 */
export type VectorRegion = 'split' | 'core' | 'stream';

export interface AttentionStructure {
  /** Layer indices: the scores (QK^T) and context (AV) products; the projections, -1 when not found. */
  scores: number;
  context: number;
  q: number;
  k: number;
  v: number;
  out: number;
  /** Q, K and V from one fused projection ('qkv'), K and V fused ('kv'), or three ('separate'). */
  projection: 'qkv' | 'kv' | 'separate' | 'fused-node';
  heads: number;
  /** Key/value heads (query groups): heads for multi-head, 1 for multi-query, between for GQA. */
  kvHeads: number;
  headDim: number;
  /** Self-attention, or cross-attention whose K and V read `source` (e.g. the encoder's output). */
  kind: 'self' | 'cross';
  source?: string;
  /** Layer indices of the attention core's vector work (scale, mask, softmax, dropout). */
  core: number[];
  /** Rotary position embedding on Q and K (structure/attention-traits.ts). */
  rotary: boolean;
  /** The scores' mask: a triangle (causal), another static square (a folded triangle or any constant), from a graph input (padding), or none found. */
  mask: 'causal' | 'static' | 'padding' | 'none';
}

export interface MlpStructure {
  /** 'dense': up, act, down; 'gated': act(gate) x up, down (SwiGLU, GeGLU); 'moe': experts. */
  kind: 'dense' | 'gated' | 'moe';
  up: number[];
  gate: number[];
  down: number[];
  /** The hidden width (up's output features). */
  width: number;
  /** Mixture of experts: the router layer, the experts' MLP indices and the top-k. */
  router?: number;
  experts?: number[];
  topK?: number;
  /**
   * How the mixture's tokens reach its experts: 'dense', every expert runs on every token and
   * the gate weights zero the others out; 'routed', each expert runs on the tokens the graph
   * selects for it (HF Mixtral's index form, sized by shape/routing.ts under uniform routing).
   */
  dispatch?: 'dense' | 'routed';
  /** Mixture of experts: non-routed experts every token runs through (DeepSeek's, Qwen-MoE's shared experts), MLP indices. */
  shared?: number[];
  /** An expert MLP: the MoE MLP it belongs to. */
  expertOf?: number;
  /** A shared expert (run on every token beside the routed ones): the MoE MLP it belongs to. */
  sharedOf?: number;
}

export type ResidualTopology = 'pre-norm' | 'post-norm' | 'parallel' | 'none';

export interface BlockStructure {
  /** Layer index range [start, end] of the block. */
  start: number;
  end: number;
  stack: 'encoder' | 'decoder';
  residual: ResidualTopology;
  /** Attention indices: self-attention first, then cross-attention. */
  attentions: number[];
  /** The block's MLP (index into `mlps`), undefined for attention-only blocks. */
  mlp?: number;
  /** Norm layers of the block. */
  norms: number[];
  /** The value the block writes on the residual stream (what a pipeline cut after it sends). */
  output: string;
}

export interface EmbeddingStructure {
  /** Layer indices; -1 when absent. */
  word: number;
  position: number[];
  tokenType: number[];
  /** Rows of the word table (its vocabulary) and its width; 0 without a word embedding. */
  vocab: number;
  width: number;
}

export interface HeadStructure {
  layer: number;
  role: HeadRole;
  /** The embedding layer whose table the head shares (a tied LM head), -1 if untied. */
  tiedTo: number;
}

export interface ModelStructure {
  /** One part per layer. */
  parts: LayerPart[];
  attentions: AttentionStructure[];
  mlps: MlpStructure[];
  blocks: BlockStructure[];
  embeddings: EmbeddingStructure;
  heads: HeadStructure[];
  /** Whether the model has a transformer pattern (an attention product); without it, the legacy split applies. */
  transformer: boolean;
  /** The encoder's output, sent with the decoder's activations to every decoder stage. */
  encoderOutput?: string;
}
