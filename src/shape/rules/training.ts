/**
 * Training-graph ops: losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), random
 * generators (Dropout's relatives) and the ai.onnx.preview.training optimisers.
 */
import { DType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { shapeRows, type OpRows } from '../op-table.js';
import type { TensorInfo } from '../tensor-info.js';

/** reduction 'none' keeps the per-element loss (the target's shape); 'mean'/'sum' give a scalar. */
function lossShape(ctx: RuleContext, targetIndex: number): TensorInfo['shape'] {
  return ctx.string('reduction', 'mean') === 'none' ? ctx.shape(targetIndex) : [];
}

export const negativeLogLikelihoodLoss: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: lossShape(ctx, 1) }];

/** Output 1 (optional) is the log-probabilities, shaped like the scores. */
export const softmaxCrossEntropyLoss: ShapeRule = (ctx) => {
  const loss = { dtype: ctx.dtype(0), shape: lossShape(ctx, 1) };
  return ctx.node.outputs.length > 1 ? [loss, { dtype: ctx.dtype(0), shape: ctx.shape(0) }] : [loss];
};

/** *Like generators: input's shape, dtype attribute or the input's dtype. */
export const randomLike: ShapeRule = (ctx) => [{ dtype: ctx.int('dtype', ctx.dtype(0)), shape: ctx.input(0).shape }];

export const randomFromShape: ShapeRule = (ctx) => [{
  dtype: ctx.int('dtype', DType.FLOAT),
  shape: ctx.ints('shape') ?? ctx.fail(`attribute 'shape' is required`),
}];

/** input [batch, classes] -> [batch, sample_size]. */
export const multinomial: ShapeRule = (ctx) => [{ dtype: ctx.int('dtype', DType.INT32), shape: [ctx.dim(0, 0), ctx.int('sample_size', 1)] }];

/**
 * Adagrad (R, T, X.., G.., H..), Momentum (R, T, X.., G.., V..), Adam (R, T, X.., G.., V.., H..):
 * outputs are the new X.. then the new optimiser states, each shaped like its input.
 */
function optimiser(groups: number): ShapeRule {
  return (ctx) => {
    const n = (ctx.inputCount - 2) / groups;
    if (!Number.isInteger(n)) ctx.fail(`expects 2 + ${groups} x N inputs, got ${ctx.inputCount}`);
    return ctx.node.outputs.map((_, j) => ctx.input(2 + j + (j >= n ? n : 0)));
  };
}

export const TRAINING_OPS: OpRows = shapeRows({
  NegativeLogLikelihoodLoss: negativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: softmaxCrossEntropyLoss,
  Bernoulli: randomLike, RandomUniformLike: randomLike, RandomNormalLike: randomLike,
  RandomUniform: randomFromShape, RandomNormal: randomFromShape, Multinomial: multinomial,
});

/** Rules of the ai.onnx.preview.training domain, keyed 'domain::Op'. */
export const PREVIEW_TRAINING_OPS: OpRows = shapeRows({
  'ai.onnx.preview.training::Adagrad': optimiser(3),
  'ai.onnx.preview.training::Momentum': optimiser(3),
  'ai.onnx.preview.training::Adam': optimiser(4),
});
