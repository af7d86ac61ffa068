/**
 * Which nodes carry GEMMs. An op of the op table says so in its row (`gemm`, shape/op-table.ts);
 * an op outside the table (a custom domain whose shape rule the caller passed to inferShapes) is
 * guessed from its name, so an unknown 'MyMatMul' is still reported as compute missing from the
 * workload rather than silently left out.
 */
import type { Node } from '../ir/graph.js';
import { opRowOf } from '../shape/rules/index.js';

/** Names of GEMM-bearing ops, for ops outside the table only. */
const GEMM_OP_NAME = /Attention|MatMul|Conv|Gemm|LSTM|GRU|RNN|Einsum/;

/** 'lowered' when the node's GEMMs become layers, 'not-lowered' when they cannot, undefined for no GEMMs. */
export function gemmCarrier(node: Pick<Node, 'domain' | 'opType'>): 'lowered' | 'not-lowered' | undefined {
  const row = opRowOf(node);
  if (row === undefined) return GEMM_OP_NAME.test(node.opType) ? 'not-lowered' : undefined;
  if (row.gemm === true) return 'lowered';
  return row.gemm;
}

