/** Every shape rule of the default ONNX domain, by op type. One file per op family. */
import type { ShapeRule } from '../context.js';
import { ELEMENTWISE_RULES } from './elementwise.js';
import { GENERATOR_RULES } from './generator.js';
import { MATH_RULES } from './math.js';
import { NN_RULES } from './nn.js';
import { REDUCE_RULES } from './reduce.js';
import { RNN_RULES } from './rnn.js';
import { TENSOR_RULES } from './tensor.js';

export const ONNX_RULES: ReadonlyMap<string, ShapeRule> = new Map(Object.entries({
  ...ELEMENTWISE_RULES,
  ...GENERATOR_RULES,
  ...MATH_RULES,
  ...NN_RULES,
  ...REDUCE_RULES,
  ...RNN_RULES,
  ...TENSOR_RULES,
}));
