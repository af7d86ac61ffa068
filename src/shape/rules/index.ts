/**
 * The op table (shape/op-table.ts): every supported op's row by op type ('domain::Op' outside the
 * default domain), merged from one file per op family. An op registered by two families throws.
 */
import { opKey, opRows, type OpRow } from '../op-table.js';
import { ATTENTION_OPS } from './attention.js';
import { CONTROL_FLOW_OPS } from './control-flow.js';
import { DATA_DEPENDENT_OPS } from './data-dependent.js';
import { EINSUM_OPS } from './einsum.js';
import { ELEMENTWISE_OPS } from './elementwise.js';
import { GENERATOR_OPS } from './generator.js';
import { MATH_OPS } from './math.js';
import { NN_OPS } from './nn.js';
import { QUANTIZE_OPS } from './quantize.js';
import { REDUCE_OPS } from './reduce.js';
import { RNN_OPS } from './rnn.js';
import { SEQUENCE_OPS } from './sequence.js';
import { SIGNAL_OPS } from './signal.js';
import { SLICE_OPS } from './slice.js';
import { TENSOR_OPS } from './tensor.js';
import { PREVIEW_TRAINING_OPS, TRAINING_OPS } from './training.js';
import { VISION_OPS } from './vision.js';

export const OP_TABLE: ReadonlyMap<string, OpRow> = new Map(Object.entries(opRows(
  ATTENTION_OPS,
  CONTROL_FLOW_OPS,
  DATA_DEPENDENT_OPS,
  EINSUM_OPS,
  ELEMENTWISE_OPS,
  GENERATOR_OPS,
  MATH_OPS,
  NN_OPS,
  QUANTIZE_OPS,
  REDUCE_OPS,
  RNN_OPS,
  SEQUENCE_OPS,
  SIGNAL_OPS,
  SLICE_OPS,
  TENSOR_OPS,
  TRAINING_OPS,
  PREVIEW_TRAINING_OPS,
  VISION_OPS,
)));

/** A node's row, or undefined for an op outside the table (a custom domain given rules by the caller). */
export function opRowOf(node: { domain: string; opType: string }): OpRow | undefined {
  return OP_TABLE.get(opKey(node));
}
