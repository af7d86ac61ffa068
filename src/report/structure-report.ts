/**
 * The model's structure as `inspect --structure` prints it: layer indices resolved to layer names,
 * one row per block, and the embeddings and heads. Built here, serialized by
 * writers/structure-report.ts.
 */
import { at } from '../errors.js';
import type { Layer } from '../layers/types.js';
import type { AttentionStructure, MlpStructure, ModelStructure } from '../structure/types.js';

export interface AttentionReport {
  kind: 'self' | 'cross';
  projection: AttentionStructure['projection'];
  heads: number;
  kvHeads: number;
  headDim: number;
  /** Rotary position embedding on Q and K; the scores' mask (causal, padding or none found). */
  rotary: boolean;
  mask: AttentionStructure['mask'];
  /** Layer names: Q, K, V projections (one name when fused), the products, the output projection. */
  q?: string;
  k?: string;
  v?: string;
  scores: string;
  context: string;
  out?: string;
  /** Cross-attention: the value K and V read (the encoder's output). */
  source?: string;
}

export interface MlpReport {
  kind: MlpStructure['kind'];
  width: number;
  up: string[];
  gate: string[];
  down: string[];
  experts?: number;
  topK?: number;
  router?: string;
  /** How tokens reach the experts: all of them, weighted ('dense'), or selected by index ('routed'). */
  dispatch?: 'dense' | 'routed';
  /** Shared experts (every token, beside the routed ones): their down projections. */
  shared?: string[];
}

export interface BlockReport {
  index: number;
  stack: 'encoder' | 'decoder';
  residual: string;
  first: string;
  last: string;
  layers: number;
  attentions: AttentionReport[];
  mlp?: MlpReport;
  norms: string[];
}

export interface StructureReport {
  model: string;
  transformer: boolean;
  layers: number;
  embeddings: { word?: string; vocab: number; width: number; position: string[]; tokenType: string[] };
  blocks: BlockReport[];
  heads: { layer: string; role: string; tiedTo?: string }[];
  encoderOutput?: string;
}

export function structureReport(model: string, structure: ModelStructure, layers: readonly Layer[]): StructureReport {
  const name = (i: number): string | undefined => (i >= 0 ? at(layers, i).name : undefined);
  const names = (list: readonly number[]): string[] => list.map((i) => at(layers, i).name);
  const attention = (a: AttentionStructure): AttentionReport => {
    const fused = a.projection === 'qkv' || a.projection === 'fused-node';
    const q = name(a.q);
    const k = fused ? undefined : name(a.k);
    const v = fused || a.projection === 'kv' ? undefined : name(a.v);
    const out = name(a.out);
    return {
      kind: a.kind, projection: a.projection, heads: a.heads, kvHeads: a.kvHeads, headDim: a.headDim, rotary: a.rotary, mask: a.mask,
      ...(q !== undefined ? { q } : {}), ...(k !== undefined ? { k } : {}), ...(v !== undefined ? { v } : {}),
      scores: at(layers, a.scores).name, context: at(layers, a.context).name,
      ...(out !== undefined ? { out } : {}), ...(a.source !== undefined ? { source: a.source } : {}),
    };
  };
  const mlp = (m: MlpStructure): MlpReport => ({
    kind: m.kind, width: m.width, up: names(m.up), gate: names(m.gate), down: names(m.down),
    ...(m.experts !== undefined ? { experts: m.experts.length } : {}), ...(m.topK !== undefined ? { topK: m.topK } : {}),
    ...(m.router !== undefined ? { router: at(layers, m.router).name } : {}),
    ...(m.dispatch !== undefined ? { dispatch: m.dispatch } : {}),
    ...(m.shared !== undefined ? { shared: m.shared.map((e) => names(at(structure.mlps, e).down).join(',')) } : {}),
  });
  const e = structure.embeddings;
  const word = name(e.word);
  return {
    model,
    transformer: structure.transformer,
    layers: layers.length,
    embeddings: { ...(word !== undefined ? { word } : {}), vocab: e.vocab, width: e.width, position: names(e.position), tokenType: names(e.tokenType) },
    blocks: structure.blocks.map((b, index) => ({
      index, stack: b.stack, residual: b.residual, first: at(layers, b.start).name, last: at(layers, b.end).name, layers: b.end - b.start + 1,
      attentions: b.attentions.map((a) => attention(at(structure.attentions, a))),
      ...(b.mlp !== undefined ? { mlp: mlp(at(structure.mlps, b.mlp)) } : {}),
      norms: names(b.norms),
    })),
    heads: structure.heads.map((h) => {
      const tiedTo = name(h.tiedTo);
      return { layer: at(layers, h.layer).name, role: h.role, ...(tiedTo !== undefined ? { tiedTo } : {}) };
    }),
    ...(structure.encoderOutput !== undefined ? { encoderOutput: structure.encoderOutput } : {}),
  };
}
