/**
 * Sequence and optional ops. A sequence is described by one element type covering all its
 * tensors (differing dims become run-time dims) and, when known, its length.
 */
import { at } from '../../errors.js';
import { dimAdd, dimMul, dimSub, runtimeDim, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { RuleContext, ShapeRule } from '../context.js';
import { shapeRows, type OpRows } from '../op-table.js';
import { declaredInfo, normaliseAxis, optionalOf, sequenceOf, unifyInfo, UNKNOWN_TENSOR, withoutValue, type TensorInfo } from '../tensor-info.js';

function sequenceInput(ctx: RuleContext, i: number): TensorInfo {
  const info = ctx.input(i);
  if (info.kind !== 'sequence') return ctx.fail(`input ${i} must be a sequence`);
  return info;
}

/** The element type of a sequence, or the unification of a new element with it. */
function elementOf(seq: TensorInfo): TensorInfo {
  return seq.element ?? UNKNOWN_TENSOR;
}

function withLength(info: TensorInfo, length: Dim | undefined): TensorInfo {
  return length === undefined ? info : { ...info, length };
}

/** Unifies a new element with the existing ones; an empty sequence takes the new element as is. */
function addElement(ctx: RuleContext, seq: TensorInfo, element: TensorInfo): TensorInfo {
  const current = elementOf(seq);
  const empty = seq.length === 0 || (current.shape === undefined && current.kind === undefined);
  const merged = empty ? { ...withoutValue(element), dtype: element.dtype || current.dtype } : unifyInfo(current, withoutValue(element), ctx.node.outputs[0] ?? 'sequence');
  return sequenceOf(merged);
}

export const sequenceEmpty: ShapeRule = (ctx) => [{ ...sequenceOf({ dtype: ctx.int('dtype', DType.FLOAT), shape: undefined }), length: 0 }];

export const sequenceConstruct: ShapeRule = (ctx) => {
  let seq: TensorInfo = { ...sequenceOf(UNKNOWN_TENSOR), length: 0 };
  for (let i = 0; i < ctx.inputCount; i++) seq = addElement(ctx, seq, ctx.input(i));
  return [withLength(seq, ctx.inputCount)];
};

export const sequenceInsert: ShapeRule = (ctx) => {
  const seq = sequenceInput(ctx, 0);
  const length = seq.length === undefined ? undefined : dimAdd(seq.length, 1);
  return [withLength(addElement(ctx, seq, ctx.input(1)), length)];
};

export const sequenceErase: ShapeRule = (ctx) => {
  const seq = sequenceInput(ctx, 0);
  return [withLength(sequenceOf(elementOf(seq)), seq.length === undefined ? undefined : dimSub(seq.length, 1))];
};

export const sequenceAt: ShapeRule = (ctx) => [elementOf(sequenceInput(ctx, 0))];

export const sequenceLength: ShapeRule = (ctx) => {
  const length = sequenceInput(ctx, 0).length;
  return [{ dtype: DType.INT64, shape: [], ...(length === undefined ? {} : { value: [length] }) }];
};

export const splitToSequence: ShapeRule = (ctx) => {
  const input = ctx.shape(0);
  const axis = normaliseAxis(ctx.int('axis', 0), input.length) ?? ctx.fail(`axis is out of range`);
  const split = ctx.has(1) ? ctx.dimsValue(1, 'split') : undefined;
  const label = ctx.node.outputs[0] ?? 'SplitToSequence';
  let dim: Dim;
  let length: Dim | undefined;
  if (split === undefined) {
    dim = 1;
    length = input[axis];
  } else if (ctx.shape(1).length === 0) {
    dim = split[0] ?? ctx.fail(`split (input 1) is empty`); // chunks of this size (the last may be shorter)
  } else {
    const head = split[0];
    dim = head !== undefined && split.every((s) => s === head) ? head : runtimeDim(`${label}[${axis}]`);
    length = split.length;
  }
  const keep = split !== undefined || ctx.int('keepdims', 1) === 1;
  const shape = keep ? input.map((d, i) => (i === axis ? dim : d)) : input.filter((_, i) => i !== axis);
  return [withLength(sequenceOf({ dtype: ctx.dtype(0), shape }), length)];
};

export const concatFromSequence: ShapeRule = (ctx) => {
  const seq = sequenceInput(ctx, 0);
  const element = elementOf(seq);
  if (element.shape === undefined) return [{ dtype: element.dtype, shape: undefined }];
  const newAxis = ctx.int('new_axis', 0) === 1;
  const rank = element.shape.length + (newAxis ? 1 : 0);
  const axis = normaliseAxis(ctx.int('axis') ?? ctx.fail(`attribute 'axis' is required`), rank) ?? ctx.fail(`axis is out of range`);
  const count = seq.length ?? runtimeDim(`${ctx.node.outputs[0]}:count`);
  const shape = [...element.shape];
  if (newAxis) shape.splice(axis, 0, count);
  else shape[axis] = dimMul(at(shape, axis), count);
  return [{ dtype: element.dtype, shape }];
};

/** SequenceMap: the body maps one element of every sequence input (tensors pass whole). */
export const sequenceMap: ShapeRule = (ctx) => {
  const body = ctx.graphAttr('body') ?? ctx.fail(`attribute 'body' is required`);
  const inputs = Array.from({ length: ctx.inputCount }, (_, i) => {
    const info = ctx.input(i);
    return info.kind === 'sequence' ? elementOf(info) : info;
  });
  const length = ctx.input(0).length;
  return ctx.env.inferSubgraph(body, inputs).outputs.map((o) => withLength(sequenceOf(withoutValue(o)), length));
};

/** Optional(x) wraps x; with no input it is an empty optional of the `type` attribute. */
export const optional: ShapeRule = (ctx) => {
  if (ctx.has(0)) return [optionalOf(ctx.input(0))];
  const type = ctx.attr('type');
  return [optionalOf(type?.kind === 'type_proto' ? declaredInfo(type.value) : UNKNOWN_TENSOR)];
};

export const optionalHasElement: ShapeRule = () => [{ dtype: DType.BOOL, shape: [] }];

/** From opset 18 a plain tensor or sequence is accepted and returned as is. */
export const optionalGetElement: ShapeRule = (ctx) => {
  const info = ctx.input(0);
  return [info.kind === 'optional' ? info.element ?? UNKNOWN_TENSOR : info];
};

export const SEQUENCE_OPS: OpRows = shapeRows({
  SequenceEmpty: sequenceEmpty, SequenceConstruct: sequenceConstruct, SequenceInsert: sequenceInsert,
  SequenceErase: sequenceErase, SequenceAt: sequenceAt, SequenceLength: sequenceLength,
  SplitToSequence: splitToSequence, ConcatFromSequence: concatFromSequence, SequenceMap: sequenceMap,
  Optional: optional, OptionalHasElement: optionalHasElement, OptionalGetElement: optionalGetElement,
});
