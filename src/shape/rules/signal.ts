/** Signal processing (opset 17): DFT, STFT, the window generators and MelWeightMatrix. */
import { dimAdd, dimFloorDiv, dimSub, runtimeDim, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { shapeRows, type OpRows } from '../op-table.js';
import { normaliseAxis } from '../tensor-info.js';

/** Bins of a one-sided transform of length n: floor(n / 2) + 1. */
function oneSidedBins(n: Dim): Dim {
  return dimAdd(dimFloorDiv(n, 2), 1);
}

/** A scalar (or 1-element) size input, or a run-time dim when not folded. */
function sizeInput(ctx: RuleContext, i: number, what: string): Dim {
  return ctx.value(i)?.[0] ?? runtimeDim(`${ctx.node.opType}:${what}`);
}

/** input [batch, signal..., 1 | 2] -> the same with the transformed axis resized and 2 components. */
export const dft: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const axisValue = ctx.opset >= 20 ? (ctx.has(2) ? (ctx.intsValue(2, 'axis')[0] ?? ctx.fail(`axis (input 2) is empty`)) : -2) : ctx.int('axis', 1);
  const axis = normaliseAxis(axisValue, x.length) ?? ctx.fail(`axis ${axisValue} is out of range`);
  const length = ctx.has(1) ? sizeInput(ctx, 1, 'dft_length') : ctx.dim(0, axis);
  const onesided = ctx.int('onesided', 0) === 1;
  const inverse = ctx.int('inverse', 0) === 1;
  const shape = [...x];
  shape[axis] = onesided && !inverse ? oneSidedBins(length) : length;
  shape[shape.length - 1] = 2;
  return [{ dtype: ctx.dtype(0), shape }];
};

/** signal [batch, length, 1 | 2] -> [batch, frames, bins, 2]. */
export const stft: ShapeRule = (ctx) => {
  const step = sizeInput(ctx, 1, 'frame_step');
  const frameLength = ctx.has(3) ? sizeInput(ctx, 3, 'frame_length') : ctx.has(2) ? ctx.dim(2, 0) : ctx.fail(`needs a window or frame_length`);
  const frames = dimAdd(dimFloorDiv(dimSub(ctx.dim(0, 1), frameLength), step), 1);
  const bins = ctx.int('onesided', 1) === 1 ? oneSidedBins(frameLength) : frameLength;
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(0, 0), frames, bins, 2] }];
};

export const window: ShapeRule = (ctx) => [{ dtype: ctx.int('output_datatype', DType.FLOAT), shape: [sizeInput(ctx, 0, 'size')] }];

/** num_mel_bins, dft_length, ... -> [floor(dft_length / 2) + 1, num_mel_bins]. */
export const melWeightMatrix: ShapeRule = (ctx) => [{
  dtype: ctx.int('output_datatype', DType.FLOAT),
  shape: [oneSidedBins(sizeInput(ctx, 1, 'dft_length')), sizeInput(ctx, 0, 'num_mel_bins')],
}];

export const SIGNAL_OPS: OpRows = shapeRows({
  DFT: dft, STFT: stft, HannWindow: window, HammingWindow: window, BlackmanWindow: window,
  MelWeightMatrix: melWeightMatrix,
});
