/**
 * Neural-network ops (ONNX "NN" category): convolutions, pooling, normalisations, Dropout, Resize.
 * Spatial output sizes follow the operator specs, including auto_pad and ceil_mode.
 */
import { at } from '../../errors.js';
import { dimAdd, dimCeilDiv, dimFloorDiv, dimMul, dimSub, runtimeDim, Sym, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { opRows, sameRow, shapeRows, type OpRows } from '../op-table.js';
import { normaliseAxis, type TensorInfo } from '../tensor-info.js';

interface Window {
  kernel: number[];
  strides: number[];
  dilations: number[];
  /** begin pads then end pads, as in the ONNX attribute. */
  pads: number[];
  autoPad: string;
}

function windowAttrs(ctx: RuleContext, spatialRank: number, kernel: number[]): Window {
  if (spatialRank < 1) ctx.fail(`input must be N x C x spatial..., got ${ctx.describe(0)}`);
  const ones = Array<number>(spatialRank).fill(1);
  const strides = ctx.ints('strides') ?? ones;
  const dilations = ctx.ints('dilations') ?? ones;
  const pads = ctx.ints('pads') ?? Array<number>(2 * spatialRank).fill(0);
  const autoPad = ctx.string('auto_pad', 'NOTSET');
  if (kernel.length !== spatialRank) ctx.fail(`kernel has ${kernel.length} dims for ${spatialRank} spatial dims`);
  if (strides.length !== spatialRank || dilations.length !== spatialRank || pads.length !== 2 * spatialRank) {
    ctx.fail(`strides/dilations/pads do not match ${spatialRank} spatial dims`);
  }
  if (strides.some((s) => s <= 0) || dilations.some((d) => d <= 0)) ctx.fail(`strides and dilations must be positive`);
  return { kernel, strides, dilations, pads, autoPad };
}

/** Output size of one spatial axis of a convolution or pooling window. */
function slidingOutput(ctx: RuleContext, size: Dim, w: Window, axis: number, ceilMode: boolean): Dim {
  // windowAttrs checked every list against the spatial rank, so the axis is in range.
  const effectiveKernel = (at(w.kernel, axis) - 1) * at(w.dilations, axis) + 1;
  const stride = at(w.strides, axis);
  switch (w.autoPad) {
    case 'SAME_UPPER':
    case 'SAME_LOWER':
      return dimCeilDiv(size, stride);
    case 'VALID':
      return dimCeilDiv(dimAdd(dimSub(size, effectiveKernel), 1), stride);
    case 'NOTSET':
    case '': {
      const padded = dimAdd(size, at(w.pads, axis) + at(w.pads, axis + w.kernel.length) - effectiveKernel);
      if (typeof padded === 'number' && padded < 0) ctx.fail(`window of ${effectiveKernel} does not fit an input of ${String(size)} (+ pads)`);
      if (!ceilMode) return dimAdd(dimFloorDiv(padded, stride), 1);
      let out = dimAdd(dimCeilDiv(padded, stride), 1);
      // A window starting inside the right padding is dropped (PyTorch/ONNX ceil_mode rule).
      if (typeof out === 'number' && typeof size === 'number' && (out - 1) * stride >= size + at(w.pads, axis)) out -= 1;
      return out;
    }
    default:
      return ctx.fail(`unknown auto_pad '${w.autoPad}'`);
  }
}

/** Conv output shape from the data input xi and weight wi (QLinearConv interleaves scales). */
export function convShape(ctx: RuleContext, xi: number, wi: number): Dim[] {
  const x = ctx.shape(xi);
  const weight = ctx.shape(wi);
  if (x.length < 3) ctx.fail(`input must be N x C x spatial..., got ${ctx.describe(xi)}`);
  if (weight.length !== x.length) ctx.fail(`weight ${ctx.describe(wi)} and input ${ctx.describe(xi)} differ in rank`);
  const group = ctx.int('group', 1);
  const kernel = ctx.ints('kernel_shape') ?? weight.slice(2).map((d) => (typeof d === 'number' ? d : ctx.fail(`kernel dims must be static`)));
  const w = windowAttrs(ctx, x.length - 2, kernel);
  const cin = ctx.dim(xi, 1);
  const wc = ctx.dim(wi, 1);
  if (typeof cin === 'number' && typeof wc === 'number' && cin !== wc * group) {
    ctx.fail(`input has ${cin} channels but weight ${ctx.describe(wi)} with group ${group} expects ${wc * group}`);
  }
  const spatial = x.slice(2).map((d, i) => slidingOutput(ctx, d, w, i, false));
  return [ctx.dim(xi, 0), ctx.dim(wi, 0), ...spatial];
}

export const conv: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: convShape(ctx, 0, 1) }];

export const convTranspose: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const weight = ctx.shape(1);
  const group = ctx.int('group', 1);
  const spatialRank = x.length - 2;
  const kernel = ctx.ints('kernel_shape') ?? weight.slice(2).map((d) => (typeof d === 'number' ? d : ctx.fail(`kernel dims must be static`)));
  const w = windowAttrs(ctx, spatialRank, kernel);
  const outputPadding = ctx.ints('output_padding') ?? Array<number>(spatialRank).fill(0);
  const outputShape = ctx.ints('output_shape');
  const cout = dimMul(ctx.dim(1, 1), group);
  let spatial: Dim[];
  if (outputShape !== undefined) spatial = outputShape.slice(-spatialRank);
  else {
    spatial = x.slice(2).map((size, i) => {
      if (w.autoPad === 'SAME_UPPER' || w.autoPad === 'SAME_LOWER') return dimMul(size, at(w.strides, i));
      const effectiveKernel = (at(kernel, i) - 1) * at(w.dilations, i) + 1;
      const pads = w.autoPad === 'VALID' ? 0 : at(w.pads, i) + at(w.pads, i + spatialRank);
      const padding = outputPadding[i] ?? ctx.fail(`output_padding [${outputPadding.join(',')}] is shorter than the ${spatialRank} spatial dims`);
      return dimAdd(dimMul(dimSub(size, 1), at(w.strides, i)), padding + effectiveKernel - pads);
    });
  }
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(0, 0), cout, ...spatial] }];
};

export const pool: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const kernel = ctx.ints('kernel_shape') ?? ctx.fail(`attribute 'kernel_shape' is required`);
  const w = windowAttrs(ctx, x.length - 2, kernel);
  const ceilMode = ctx.int('ceil_mode', 0) === 1;
  const spatial = x.slice(2).map((d, i) => slidingOutput(ctx, d, w, i, ceilMode));
  const shape = [ctx.dim(0, 0), ctx.dim(0, 1), ...spatial];
  const outputs = [{ dtype: ctx.dtype(0), shape }];
  if (ctx.node.outputs.length > 1) outputs.push({ dtype: DType.INT64, shape }); // MaxPool indices
  return outputs;
};

export const globalPool: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(0, 0), ctx.dim(0, 1), ...x.slice(2).map(() => 1)] }];
};

export const batchNorm: ShapeRule = (ctx) => {
  const x = { dtype: ctx.dtype(0), shape: ctx.shape(0) };
  const extra = ctx.node.outputs.slice(1);
  if (extra.length === 0) return [x];
  const stats = { dtype: ctx.dtype(0), shape: [ctx.dim(0, 1)] };
  return [x, ...extra.map(() => stats)];
};

/** LayerNormalization: Y, then Mean and InvStdDev reduced over the normalised axes. */
export const layerNorm: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const axis = normaliseAxis(ctx.int('axis', -1), x.length) ?? ctx.fail(`axis is out of range`);
  const reduced = x.map((d, i) => (i < axis ? d : 1));
  const statsType = ctx.int('stash_type', 1) === 1 ? DType.FLOAT : ctx.dtype(0);
  return [{ dtype: ctx.dtype(0), shape: x }, ...ctx.node.outputs.slice(1).map(() => ({ dtype: statsType, shape: reduced }))];
};

export const dropout: ShapeRule = (ctx) => {
  const shape = ctx.shape(0);
  const out = [{ dtype: ctx.dtype(0), shape }];
  if (ctx.node.outputs.length > 1) out.push({ dtype: DType.BOOL, shape });
  return out;
};

/** floor(d x scale) for a symbolic d: exact for integer scales and their reciprocals, else opaque. */
function scaleDim(d: Dim, scale: number): Dim {
  if (typeof d === 'number') return Math.floor(d * scale);
  if (Number.isInteger(scale)) return dimMul(d, scale);
  const inverse = 1 / scale;
  if (Number.isInteger(inverse)) return dimFloorDiv(d, inverse);
  return Sym.atom(`floor((${String(d)})*${scale})`);
}

/** Resize / Upsample: from sizes, or floor(dim x scale). */
export const resize: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const isUpsample = ctx.node.opType === 'Upsample';
  const scalesIndex = isUpsample ? 1 : ctx.opset >= 11 ? 2 : 1;
  const sizesIndex = 3;
  let axes = ctx.ints('axes')?.map((a) => normaliseAxis(a, x.length) ?? ctx.fail(`axis ${a} out of range`)) ?? x.map((_, i) => i);
  if (!isUpsample && ctx.opset >= 11 && ctx.has(sizesIndex) && (ctx.value(sizesIndex)?.length ?? 0) > 0) {
    const sizes = ctx.dimsValue(sizesIndex, 'sizes');
    const policy = ctx.string('keep_aspect_ratio_policy', 'stretch');
    if (sizes.length !== axes.length) return ctx.fail(`sizes has ${sizes.length} entries for ${axes.length} axes`);
    if (policy !== 'stretch') {
      if (!axes.every((a, i) => typeof x[a] === 'number' && typeof sizes[i] === 'number')) {
        return ctx.fail(`keep_aspect_ratio_policy '${policy}' needs static dims and sizes`);
      }
      const scales = axes.map((a, i) => (sizes[i] as number) / (x[a] as number));
      const s = policy === 'not_larger' ? Math.min(...scales) : Math.max(...scales);
      return [{ dtype: ctx.dtype(0), shape: x.map((d, i) => (axes.includes(i) ? Math.round(Number(d) * s) : d)) }];
    }
    const shape = [...x];
    for (const [i, a] of axes.entries()) {
      const size = sizes[i];
      if (size === undefined) return ctx.fail(`sizes [${sizes.join(',')}] do not fit ${axes.length} axes`);
      shape[a] = size;
    }
    return [{ dtype: ctx.dtype(0), shape }];
  }
  // Scales or sizes computed at run time (a graph input, data-dependent values): the resized dims
  // are run-time sizes named after the output and axis, which `--dim` can bind.
  const atRunTime = (): TensorInfo[] => [{ dtype: ctx.dtype(0), shape: x.map((d, i) => (axes.includes(i) ? runtimeDim(`${ctx.node.opType}:${ctx.node.outputs[0]}[${i}]`) : d)) }];
  if (!isUpsample && ctx.opset >= 11 && ctx.has(sizesIndex) && ctx.value(sizesIndex) === undefined) return atRunTime();
  const scaleValues = isUpsample && ctx.opset < 9 ? ctx.floats('scales') ?? ctx.fail(`scales are required`) : ctx.has(scalesIndex)
    ? ctx.value(scalesIndex)?.map(Number)
    : ctx.fail(`neither scales nor sizes are given`);
  if (scaleValues === undefined) return atRunTime();
  const scales = scaleValues;
  if (scales.length === 0 && ctx.has(sizesIndex)) return atRunTime();
  if (scales.length !== axes.length) axes = x.map((_, i) => i);
  if (scales.length !== axes.length || scales.some((s) => !(s > 0))) return ctx.fail(`scales [${scales.join(',')}] do not fit a rank-${x.length} input`);
  const shape = [...x];
  for (const [i, a] of axes.entries()) {
    const dim = x[a];
    const scale = scales[i];
    if (dim === undefined || scale === undefined) return ctx.fail(`axis ${a} or scale ${i} is out of range for a rank-${x.length} input`);
    shape[a] = scaleDim(dim, scale);
  }
  return [{ dtype: ctx.dtype(0), shape }];
};

/** X [N, C, spatial...], grid [N, out spatial..., rank] -> [N, C, out spatial...]. */
export const gridSample: ShapeRule = (ctx) => {
  const grid = ctx.shape(1);
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(0, 0), ctx.dim(0, 1), ...grid.slice(1, -1)] }];
};

/** X [N, C, H, W], rois [R, 4] -> [R, C, output_height, output_width]. */
export const roiAlign: ShapeRule = (ctx) => [{
  dtype: ctx.dtype(0),
  shape: [ctx.dim(1, 0), ctx.dim(0, 1), ctx.int('output_height', 1), ctx.int('output_width', 1)],
}];

/** The inverse of MaxPool: output_shape when given, else (in - 1) x stride - pads + kernel. */
export const maxUnpool: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  if (ctx.has(2)) return [{ dtype: ctx.dtype(0), shape: [...ctx.dimsValue(2, 'output_shape')] }];
  const kernel = ctx.ints('kernel_shape') ?? ctx.fail(`attribute 'kernel_shape' is required`);
  const w = windowAttrs(ctx, x.length - 2, kernel);
  const spatial = x.slice(2).map((d, i) => dimAdd(dimMul(dimSub(d, 1), at(w.strides, i)), at(kernel, i) - at(w.pads, i) - at(w.pads, i + kernel.length)));
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(0, 0), ctx.dim(0, 1), ...spatial] }];
};

const sameShape: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: ctx.shape(0) }];

/** Norms with a per-channel (or per-feature) scale, input 1, and shift, input 2. */
const SCALE_SHIFT = { scale: [1], shift: [2] };

export const NN_OPS: OpRows = opRows(
  {
    Conv: { shape: conv, gemm: true, lowering: 'conv', weightInputs: [1] },
    // onnxruntime's Conv with a fused activation: the same attributes, inputs and output shape.
    'com.microsoft::FusedConv': { shape: conv, gemm: true, lowering: 'conv', weightInputs: [1] },
    ConvTranspose: { shape: convTranspose, gemm: true, lowering: 'conv-transpose', weightInputs: [1] },
    BatchNormalization: { shape: batchNorm, vectorClass: 'layernorm', parameterInputs: SCALE_SHIFT },
    LayerNormalization: { shape: layerNorm, vectorClass: 'layernorm', parameterInputs: SCALE_SHIFT },
    InstanceNormalization: { shape: sameShape, vectorClass: 'layernorm', parameterInputs: SCALE_SHIFT },
    GroupNormalization: { shape: sameShape, vectorClass: 'layernorm', parameterInputs: SCALE_SHIFT },
    // A mask and a scale per element: linear in its input.
    Dropout: { shape: dropout, vectorClass: 'elementwise', flow: 'linear', keeps: 'mask' },
  },
  // Average pools spread their gradient evenly: no activation kept; max and Lp pools keep their input.
  sameRow({ shape: pool, vectorClass: 'pool' }, ['MaxPool', 'LpPool']),
  { AveragePool: { shape: pool, vectorClass: 'pool', keeps: 'nothing' }, GlobalAveragePool: { shape: globalPool, vectorClass: 'pool', keeps: 'nothing' } },
  sameRow({ shape: globalPool, vectorClass: 'pool' }, ['GlobalMaxPool', 'GlobalLpPool']),
  shapeRows({ Resize: resize, Upsample: resize, GridSample: gridSample, RoiAlign: roiAlign, MaxUnpool: maxUnpool }),
);
