/** Image ops: AffineGrid, CenterCropPad, Col2Im, MaxRoiPool, DeformConv, ImageDecoder. */
import { dimFloorDiv, dimProduct, runtimeDim, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { ShapeRule } from '../context.js';
import { opRows, shapeRows, type OpRows } from '../op-table.js';
import { normaliseAxis } from '../tensor-info.js';
import { convShape } from './nn.js';

/** theta [N, 2, 3] (or [N, 3, 4]), size (N, C, H, W[, D]) -> grid [N, H, W(, D), 2 | 3]. */
export const affineGrid: ShapeRule = (ctx) => {
  const size = ctx.dimsValue(1, 'size');
  const spatial = size.slice(2);
  return [{ dtype: ctx.dtype(0), shape: [size[0] ?? ctx.fail(`size (input 1) is empty`), ...spatial, spatial.length] }];
};

/** The given axes take the target sizes (cropped or padded around the centre). */
export const centerCropPad: ShapeRule = (ctx) => {
  const x = ctx.shape(0);
  const sizes = ctx.dimsValue(1, 'shape');
  const axes = (ctx.ints('axes') ?? x.map((_, i) => i)).map((a) => normaliseAxis(a, x.length) ?? ctx.fail(`axis ${a} is out of range`));
  const shape = [...x];
  for (const [i, a] of axes.entries()) {
    const size = sizes[i];
    if (size === undefined) return ctx.fail(`shape [${sizes.join(',')}] has fewer values than the ${axes.length} axes`);
    shape[a] = size;
  }
  return [{ dtype: ctx.dtype(0), shape }];
};

/** input [N, C x prod(block), L], image_shape, block_shape -> [N, C, image...]. */
export const col2Im: ShapeRule = (ctx) => {
  const image = ctx.dimsValue(1, 'image_shape');
  const block = ctx.dimsValue(2, 'block_shape');
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(0, 0), dimFloorDiv(ctx.dim(0, 1), dimProduct(block)), ...image] }];
};

/** X [N, C, H, W], rois [R, 5] -> [R, C, pooled_shape...]. */
export const maxRoiPool: ShapeRule = (ctx) => {
  const pooled = ctx.ints('pooled_shape') ?? ctx.fail(`attribute 'pooled_shape' is required`);
  return [{ dtype: ctx.dtype(0), shape: [ctx.dim(1, 0), ctx.dim(0, 1), ...pooled] }];
};

export const deformConv: ShapeRule = (ctx) => [{ dtype: ctx.dtype(0), shape: convShape(ctx, 0, 1) }];

/** Decoded image [H, W, C]: sizes depend on the encoded bytes. */
export const imageDecoder: ShapeRule = (ctx) => {
  const name = ctx.node.outputs[0] ?? 'image';
  const channels: Dim = ctx.string('pixel_format', 'RGB') === 'Grayscale' ? 1 : 3;
  return [{ dtype: DType.UINT8, shape: [runtimeDim(`${name}:height`), runtimeDim(`${name}:width`), channels] }];
};

export const VISION_OPS: OpRows = opRows(
  shapeRows({ AffineGrid: affineGrid, CenterCropPad: centerCropPad, Col2Im: col2Im, MaxRoiPool: maxRoiPool, ImageDecoder: imageDecoder }),
  // A convolution at learned offsets: its GEMMs are reported as missing from the workload.
  { DeformConv: { shape: deformConv, gemm: 'not-lowered' } },
);
