/**
 * The constant evaluator: an operator whose inputs are all known constants (static shapes, numeric
 * elements) and whose outputs are small is computed exactly, with its ONNX semantics, at any rank.
 * The driver runs it after the node's shape rule, so exporters' shape arithmetic (F.pad's
 * Concat -> Reshape(-1, 2) -> Slice(step -1) -> Transpose -> Cast chain, window partitions built
 * from constants) folds. Values holding symbolic dims stay with the rules' own folding.
 */
import { indexOutOfRange } from '../../errors.js';
import { elementCount, isStaticShape } from '../../ir/dim.js';
import type { RuleContext } from '../context.js';
import { MAX_FOLDED_ELEMENTS, type TensorInfo } from '../tensor-info.js';
import { ELEMENTWISE_EVALUATORS } from './elementwise.js';
import { INDEXING_EVALUATORS } from './indexing.js';
import { REDUCE_EVALUATORS } from './reduce.js';
import { TENSOR_EVALUATORS } from './tensor-ops.js';
import type { NumTensor } from './tensor.js';
import type { Evaluator } from './types.js';

/** Outputs above this many elements are not computed (shape arithmetic never needs them). */
export const EVALUATION_BUDGET_ELEMENTS = MAX_FOLDED_ELEMENTS;

const EVALUATORS: Readonly<Record<string, Evaluator>> = {
  ...ELEMENTWISE_EVALUATORS,
  ...TENSOR_EVALUATORS,
  ...REDUCE_EVALUATORS,
  ...INDEXING_EVALUATORS,
};

/** Default-domain ops the evaluator computes. */
export const EVALUATED_OPS: ReadonlySet<string> = new Set(Object.keys(EVALUATORS));

/** A tensor whose elements are all known numbers, as a NumTensor. */
function constantOf(info: TensorInfo): NumTensor | undefined {
  const { shape, value } = info;
  if (info.kind !== undefined || shape === undefined || value === undefined || !isStaticShape(shape)) return undefined;
  if (value.length !== elementCount(shape) || !value.every((v) => typeof v === 'number')) return undefined;
  return { shape, data: value as number[] };
}

/** The rule's outputs with their elements filled in, when the node is computable. */
export function evaluateConstants(ctx: RuleContext, outputs: TensorInfo[]): TensorInfo[] {
  // An input without elements (a node of data, most of a graph's) ends it before anything is
  // made or looked up (the op's evaluator is a lookup by its name).
  for (let i = 0; i < ctx.inputCount; i++) if (ctx.has(i) && ctx.input(i).value === undefined) return outputs;
  const evaluator = ctx.node.domain === '' ? EVALUATORS[ctx.node.opType] : undefined;
  if (evaluator === undefined) return outputs;
  const inputs: (NumTensor | undefined)[] = [];
  for (let i = 0; i < ctx.inputCount; i++) {
    if (!ctx.has(i)) {
      inputs.push(undefined);
      continue;
    }
    const t = constantOf(ctx.input(i));
    if (t === undefined) return outputs;
    inputs.push(t);
  }
  const shapes: { dtype: number; shape: readonly number[] }[] = [];
  for (const o of outputs) {
    // Invalid dims are left for the driver's size check to report.
    if (o.kind !== undefined || o.shape === undefined || !isStaticShape(o.shape) || o.shape.some((d) => !Number.isSafeInteger(d) || d < 0)) return outputs;
    if (elementCount(o.shape) > EVALUATION_BUDGET_ELEMENTS) return outputs;
    shapes.push({ dtype: o.dtype, shape: o.shape });
  }
  const values = evaluator({ ctx, inputs, outputs: shapes });
  if (values === undefined) return outputs;
  return outputs.map((o, i) => {
    const v = values[i];
    // A count that disagrees with the rule's shape would be a defect here: keep the rule's view.
    return v === undefined || v.length !== elementCount((shapes[i] ?? indexOutOfRange(i)).shape) ? o : { ...o, value: v };
  });
}
