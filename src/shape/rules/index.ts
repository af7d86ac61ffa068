/** Every shape rule of the default ONNX domain by op type ('domain::Op' for other domains). One file per op family. */
import type { ShapeRule } from '../context.js';
import { ATTENTION_RULES } from './attention.js';
import { CONTROL_FLOW_RULES } from './control-flow.js';
import { DATA_DEPENDENT_RULES } from './data-dependent.js';
import { EINSUM_RULES } from './einsum.js';
import { ELEMENTWISE_RULES } from './elementwise.js';
import { GENERATOR_RULES } from './generator.js';
import { MATH_RULES } from './math.js';
import { NN_RULES } from './nn.js';
import { QUANTIZE_RULES } from './quantize.js';
import { REDUCE_RULES } from './reduce.js';
import { RNN_RULES } from './rnn.js';
import { SEQUENCE_RULES } from './sequence.js';
import { SIGNAL_RULES } from './signal.js';
import { SLICE_RULES } from './slice.js';
import { TENSOR_RULES } from './tensor.js';
import { PREVIEW_TRAINING_RULES, TRAINING_RULES } from './training.js';
import { VISION_RULES } from './vision.js';

export const ONNX_RULES: ReadonlyMap<string, ShapeRule> = new Map(Object.entries({
  ...ATTENTION_RULES,
  ...CONTROL_FLOW_RULES,
  ...DATA_DEPENDENT_RULES,
  ...EINSUM_RULES,
  ...ELEMENTWISE_RULES,
  ...GENERATOR_RULES,
  ...MATH_RULES,
  ...NN_RULES,
  ...QUANTIZE_RULES,
  ...REDUCE_RULES,
  ...RNN_RULES,
  ...SEQUENCE_RULES,
  ...SIGNAL_RULES,
  ...SLICE_RULES,
  ...TENSOR_RULES,
  ...TRAINING_RULES,
  ...PREVIEW_TRAINING_RULES,
  ...VISION_RULES,
}));
