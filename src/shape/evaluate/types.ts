/** What an operator's evaluator sees: the rule's context, constant inputs, and the rule's outputs. */
import { internalError } from '../../errors.js';
import type { RuleContext } from '../context.js';
import type { NumTensor } from './tensor.js';

export interface EvalArgs {
  /** The node's rule context (attributes, opset, `fail` naming the node). */
  ctx: RuleContext;
  /** Inputs by position; undefined where the optional input is omitted. */
  inputs: readonly (NumTensor | undefined)[];
  /** The rule's outputs: dtypes and (static, within budget) shapes the values must fill. */
  outputs: readonly { dtype: number; shape: readonly number[] }[];
}

/** Row-major elements per output (undefined where that output cannot be computed). */
export type Evaluator = (args: EvalArgs) => readonly (readonly number[] | undefined)[] | undefined;

/** The rule's first output: every evaluated op has one, since the rule produced it. */
export function firstOutput(outputs: EvalArgs['outputs']): { dtype: number; shape: readonly number[] } {
  return outputs[0] ?? internalError('the rule gave no output to evaluate');
}
