/**
 * Control flow: If (the taken branch when the condition folds, else both branches unified), Loop
 * and Scan (their bodies inferred once with the carried values' shapes, again if a carried shape
 * changes). Values that differ between branches or iterations become run-time dims.
 */
import { at } from '../../errors.js';
import { dimEquals, dimMul, runtimeDim, type Dim } from '../../ir/dim.js';
import { DType } from '../../ir/dtype.js';
import type { Graph } from '../../ir/graph.js';
import type { RuleContext, ShapeRule, SubgraphResult } from '../context.js';
import { shapeRows, type OpRows } from '../op-table.js';
import { normaliseAxis, unifyInfo, UNKNOWN_TENSOR, withoutValue, type TensorInfo } from '../tensor-info.js';

function requiredGraph(ctx: RuleContext, name: string): Graph {
  return ctx.graphAttr(name) ?? ctx.fail(`attribute '${name}' is required`);
}

export const ifRule: ShapeRule = (ctx) => {
  const thenBranch = requiredGraph(ctx, 'then_branch');
  const elseBranch = requiredGraph(ctx, 'else_branch');
  const cond = ctx.value(0)?.[0];
  if (typeof cond === 'number') {
    const taken = ctx.env.inferSubgraph(cond !== 0 ? thenBranch : elseBranch, []);
    ctx.env.useBodies({ bodies: [{ run: taken.run, repeat: 1, label: cond !== 0 ? 'then' : 'else' }] });
    return taken.outputs;
  }
  const a = ctx.env.inferSubgraph(thenBranch, []);
  const b = ctx.env.inferSubgraph(elseBranch, []);
  ctx.env.useBodies({ bodies: [], unresolved: { conditionInputs: ctx.env.inputsBehind(ctx.node.inputs[0] ?? ctx.fail(`needs the condition input`)), branches: [a.run, b.run] } });
  if (a.outputs.length !== b.outputs.length) return ctx.fail(`branches have ${a.outputs.length} and ${b.outputs.length} outputs`);
  return a.outputs.map((info, i) => {
    const merged = unifyInfo(info, at(b.outputs, i), `${ctx.node.outputs[i] ?? 'If'}`);
    if (merged.shape !== undefined || merged.kind !== undefined || info.shape === undefined || at(b.outputs, i).shape === undefined) return merged;
    // The branches give it different ranks (Silero VAD v5 squeezes a dim only when it is 1): say what would decide.
    const hints = ctx.env.bindingsBehind?.(ctx.node.inputs[0] ?? '') ?? [];
    const decide = hints.length > 0 ? `; bind ${hints.join(', ')}` : `; set the inputs it reads with --input`;
    return { ...merged, unknownBecause: `: it is an output of If '${ctx.node.name}', whose branches give it ranks ${info.shape.length} and ${at(b.outputs, i).shape?.length} and whose condition does not fold${decide}` };
  });
};

function sameShape(a: TensorInfo, b: TensorInfo): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind !== undefined) return sameShape(a.element ?? UNKNOWN_TENSOR, b.element ?? UNKNOWN_TENSOR);
  if (a.shape === undefined || b.shape === undefined) return a.shape === b.shape;
  const other = b.shape;
  return a.shape.length === other.length && a.shape.every((d, i) => dimEquals(d, at(other, i)));
}

/**
 * Infers a body whose first `carried.length` outputs feed back into the matching inputs: once with
 * the initial values, and once more with initial and first-iteration shapes unified if they differ.
 */
function inferCarried(
  ctx: RuleContext,
  body: Graph,
  fixedBefore: readonly TensorInfo[],
  carried: readonly TensorInfo[],
  fixedAfter: readonly TensorInfo[],
  outputOffset: number,
): SubgraphResult {
  let state = carried.map(withoutValue);
  let result = ctx.env.inferSubgraph(body, [...fixedBefore, ...state, ...fixedAfter]);
  const next = state.map((_, i) => result.outputs[outputOffset + i] ?? UNKNOWN_TENSOR);
  if (next.some((n, i) => n.kind === at(state, i).kind && !sameShape(n, at(state, i)))) {
    state = state.map((s, i) => unifyInfo(s, withoutValue(at(next, i)), `${ctx.node.outputs[i] ?? 'state'}`));
    result = ctx.env.inferSubgraph(body, [...fixedBefore, ...state, ...fixedAfter]);
  }
  return result;
}

/** Stacks per-iteration outputs along a new axis of length `count`. */
function stacked(element: TensorInfo, count: Dim, axis: number): TensorInfo {
  if (element.kind !== undefined || element.shape === undefined) return { dtype: element.dtype, shape: undefined };
  const shape = [...element.shape];
  shape.splice(axis, 0, count);
  return { dtype: element.dtype, shape };
}

export const loop: ShapeRule = (ctx) => {
  const body = requiredGraph(ctx, 'body');
  const carriedCount = ctx.inputCount - 2;
  const maxTrips = ctx.has(0) ? ctx.value(0)?.[0] : undefined;
  const initialCond = ctx.has(1) ? ctx.value(1)?.[0] : 1;
  const iteration: TensorInfo = { dtype: DType.INT64, shape: [], value: [runtimeDim(`${ctx.node.name || 'Loop'}:iteration`)] };
  // The body only runs while cond is true, so it is inferred under that assumption.
  const condIn: TensorInfo = { dtype: DType.BOOL, shape: [], value: [1] };
  const carried = Array.from({ length: carriedCount }, (_, i) => ctx.input(i + 2));
  const { outputs, run } = inferCarried(ctx, body, [iteration, condIn], carried, [], 1);
  // A body whose cond stays true runs M times (if it starts); otherwise the count is data-dependent.
  const condOut = outputs[0]?.value?.[0];
  const trips: Dim = initialCond === 0 ? 0
    : condOut === 1 && maxTrips !== undefined ? maxTrips
    : runtimeDim(`${ctx.node.name || 'Loop'}:trips`);
  ctx.env.useBodies({ bodies: [{ run, repeat: trips, label: 'body' }] });
  // An optional initial value may come out as its content (opset 16): the body's kind wins.
  const finals = outputs.slice(1, 1 + carriedCount).map((o, i) =>
    (o.kind !== at(carried, i).kind ? o : unifyInfo(withoutValue(o), withoutValue(at(carried, i)), `${ctx.node.outputs[i]}`)));
  const scans = outputs.slice(1 + carriedCount).map((o) => stacked(o, trips, 0));
  // With zero trips the carried values are the inputs; with some, the body's outputs.
  return [...(trips === 0 ? carried : finals), ...scans];
};

function axisList(ctx: RuleContext, name: string, count: number): number[] {
  return ctx.ints(name) ?? Array<number>(count).fill(0);
}

/** Scan from opset 9: no batch dim, scan axes configurable. */
function scan9(ctx: RuleContext, body: Graph): TensorInfo[] {
  const scanInputs = ctx.int('num_scan_inputs') ?? ctx.fail(`attribute 'num_scan_inputs' is required`);
  const stateCount = ctx.inputCount - scanInputs;
  const inputAxes = axisList(ctx, 'scan_input_axes', scanInputs);
  const states = Array.from({ length: stateCount }, (_, i) => ctx.input(i));
  let length: Dim | undefined;
  const slices = Array.from({ length: scanInputs }, (_, j) => {
    const shape = ctx.shape(stateCount + j);
    const axisAttr = inputAxes[j] ?? ctx.fail(`scan_input_axes has ${inputAxes.length} entries for ${scanInputs} scan inputs`);
    const axis = normaliseAxis(axisAttr, shape.length) ?? ctx.fail(`scan input axis ${axisAttr} is out of range`);
    length ??= at(shape, axis);
    return { dtype: ctx.dtype(stateCount + j), shape: shape.filter((_, k) => k !== axis) };
  });
  const { outputs, run } = inferCarried(ctx, body, [], states, slices, 0);
  ctx.env.useBodies({ bodies: [{ run, repeat: length ?? runtimeDim('Scan:length'), label: 'body' }] });
  const scanOutputCount = outputs.length - stateCount;
  const outputAxes = axisList(ctx, 'scan_output_axes', scanOutputCount);
  const scans = outputs.slice(stateCount).map((o, k) => {
    const rank = (o.shape?.length ?? 0) + 1;
    const axisAttr = outputAxes[k] ?? ctx.fail(`scan_output_axes has ${outputAxes.length} entries for ${scanOutputCount} scan outputs`);
    const axis = normaliseAxis(axisAttr, rank) ?? ctx.fail(`scan output axis ${axisAttr} is out of range`);
    return stacked(o, length ?? runtimeDim('Scan:length'), axis);
  });
  return [...outputs.slice(0, stateCount).map(withoutValue), ...scans];
}

/** Scan of opset 8: optional sequence_lens first, then states [batch, ...] and inputs [batch, seq, ...]. */
function scan8(ctx: RuleContext, body: Graph): TensorInfo[] {
  const scanInputs = ctx.int('num_scan_inputs') ?? ctx.fail(`attribute 'num_scan_inputs' is required`);
  const stateCount = ctx.inputCount - 1 - scanInputs;
  const states = Array.from({ length: stateCount }, (_, i) => ctx.input(1 + i));
  const batch = states[0]?.shape?.[0] ?? ctx.dim(1 + stateCount, 0);
  const inner = (info: TensorInfo, drop: number): TensorInfo => ({ dtype: info.dtype, shape: info.shape?.slice(drop) });
  const slices = Array.from({ length: scanInputs }, (_, j) => inner(ctx.input(1 + stateCount + j), 2));
  const length = ctx.dim(1 + stateCount, 1);
  const { outputs, run } = inferCarried(ctx, body, [], states.map((s) => inner(s, 1)), slices, 0);
  // Opset-8 Scan runs its body once per batch element and sequence step.
  ctx.env.useBodies({ bodies: [{ run, repeat: dimMul(batch, length), label: 'body' }] });
  const withBatch = (o: TensorInfo, extra: Dim[]): TensorInfo => ({ dtype: o.dtype, shape: o.shape && [batch, ...extra, ...o.shape] });
  return [...outputs.slice(0, stateCount).map((o) => withBatch(o, [])), ...outputs.slice(stateCount).map((o) => withBatch(o, [length]))];
}

export const scan: ShapeRule = (ctx) => {
  const body = requiredGraph(ctx, 'body');
  return ctx.opset >= 9 ? scan9(ctx, body) : scan8(ctx, body);
};

export const CONTROL_FLOW_OPS: OpRows = shapeRows({ If: ifRule, Loop: loop, Scan: scan });
