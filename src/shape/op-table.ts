/**
 * The op table: one row per supported op, holding everything the pipeline knows of it — its
 * shape rule, whether it carries GEMMs and which lowering turns it into layers, which inputs are
 * weights, its vector-unit class, and whether a weight seen through it stays a weight. Rows are declared in the family files of shape/rules/ and
 * merged in shape/rules/index.ts (`OP_TABLE`).
 *
 * It lives in shape/ because inference reads it and shape/ may not import layers/. Lowerings are
 * therefore named, not referenced: layers/lower.ts implements them as a
 * `Record<LoweringName, Lowering>`, so the compiler rejects a name without an implementation, and
 * the row types reject a GEMM-bearing row without a lowering.
 */
import type { Node } from '../ir/graph.js';
import type { VectorOpClass } from '../ir/op-class.js';
import type { ShapeRule } from './context.js';

/** The lowerings of layers/lower.ts, by name. */
export type LoweringName =
  | 'conv'
  | 'conv-integer'
  | 'qlinear-conv'
  | 'conv-transpose'
  | 'gemm'
  | 'matmul'
  | 'qlinear-matmul'
  | 'einsum'
  | 'recurrent'
  | 'embedding'
  | 'onnx-attention'
  | 'ms-attention'
  | 'ms-multi-head-attention';

/** Input positions of a vector op's trainable parameters. Running mean and variance are not trained. */
export interface ParameterInputs {
  scale: readonly number[];
  shift: readonly number[];
}

/**
 * An op that changes a tensor's view or precision but keeps one element per parameter: a weight
 * seen through it is still that weight (layers/weights.ts). 'first': through input 0 (Reshape,
 * Cast, DequantizeLinear...); 'all': through every input (Concat of packed weights).
 */
export type WeightView = 'first' | 'all';

/**
 * How an op's output depends on its activation inputs, the fact model-structure recognition
 * (structure/) walks the graph by: 'layout' keeps the elements, only in another view, order,
 * selection or precision (Reshape, Transpose, Slice, Concat, Cast, Expand); 'linear' is linear in
 * each activation operand (Add, Sub, a Mul or Div by a constant, a mean, dropout, rotary
 * embedding); 'nonlinear' is anything else that does work (activations, norms, softmax,
 * transcendental functions). A row without it: vector rows are nonlinear, shape rows opaque (a
 * walk stops there). See `flowOf`.
 */
export type DataFlow = 'layout' | 'linear' | 'nonlinear';

/**
 * What a vector op keeps for its backward pass (the activation-memory model, memory/activations.ts;
 * Korthikanti et al. 2022): 'input' (GELU, norms, transcendental functions, max-pools: the
 * default), 'output' (softmax: the default of its class), 'nothing' (additions, casts, selections,
 * means: their gradient needs no activation), 'operands' (a product or quotient keeps its inputs
 * only when both are activations; scaling by a constant keeps nothing), 'mask' (dropout: one byte
 * per element). See `backwardKeepsOf`.
 */
export type BackwardKeeps = 'input' | 'output' | 'nothing' | 'operands' | 'mask';

/** Fields a row kind does not use are declared absent, so every field reads on any row. */
interface Absent {
  gemm?: undefined;
  lowering?: undefined;
  weightInputs?: undefined;
  vectorClass?: undefined;
  parameterInputs?: undefined;
  weightView?: undefined;
  flow?: undefined;
  keeps?: undefined;
}

/** Only a shape: shape, index and control ops; no work of their own. */
export interface ShapeRow extends Omit<Absent, 'weightView' | 'flow'> {
  /** Output dtypes and shapes from the inputs' (shape/context.ts). */
  shape: ShapeRule;
  weightView?: WeightView;
  flow?: DataFlow;
}

/** Non-GEMM work on the vector unit (layers/vector.ts), when vector ops are lowered. */
export interface VectorRow extends Omit<Absent, 'vectorClass' | 'parameterInputs' | 'weightView' | 'flow' | 'keeps'> {
  shape: ShapeRule;
  vectorClass: VectorOpClass;
  parameterInputs?: ParameterInputs;
  weightView?: WeightView;
  flow?: DataFlow;
  keeps?: BackwardKeeps;
}

/** Carries GEMMs: the lowering that makes its layers, and the inputs that may be weights. */
export interface GemmRow extends Omit<Absent, 'gemm' | 'lowering' | 'weightInputs'> {
  shape: ShapeRule;
  gemm: true;
  lowering: LoweringName;
  /** Operand positions whose weights must trace to initializers (layers/weights.ts warns otherwise). */
  weightInputs: readonly number[];
}

/** Carries GEMMs that modtrans does not lower yet: every node is reported as compute missing from the workload. */
export interface UnloweredGemmRow extends Omit<Absent, 'gemm'> {
  shape: ShapeRule;
  gemm: 'not-lowered';
}

/** Layers without GEMMs (Gather on a weight table: an embedding). */
export interface LoweredRow extends Omit<Absent, 'lowering' | 'flow'> {
  shape: ShapeRule;
  lowering: LoweringName;
  flow?: DataFlow;
}

export type OpRow = ShapeRow | VectorRow | GemmRow | UnloweredGemmRow | LoweredRow;

/** Rows by op type ('domain::Op' outside the default domain). */
export type OpRows = Readonly<Record<string, OpRow>>;

/** An op's data flow: its row's `flow`, else nonlinear for vector work and opaque for the rest. */
export function flowOf(row: OpRow | undefined): DataFlow | 'opaque' {
  if (row === undefined) return 'opaque';
  if (row.flow !== undefined) return row.flow;
  return row.vectorClass !== undefined ? 'nonlinear' : 'opaque';
}

/** What a vector op keeps for backward: its row's `keeps`, else its class's default (softmax its output, the rest their input). */
export function backwardKeepsOf(row: OpRow | undefined): BackwardKeeps {
  if (row?.keeps !== undefined) return row.keeps;
  return row?.vectorClass === 'softmax' ? 'output' : 'input';
}

/** The table key of a node: its op type, domain-qualified outside the default domain. */
export function opKey(node: Pick<Node, 'domain' | 'opType'>): string {
  return node.domain === '' ? node.opType : `${node.domain}::${node.opType}`;
}

/** One row shared by several ops (same rule, same work). */
export function sameRow(row: OpRow, ops: readonly string[]): OpRows {
  return Object.fromEntries(ops.map((op) => [op, row]));
}

/** Shape-only rows from a map of rules. */
export function shapeRows(rules: Readonly<Record<string, ShapeRule>>): OpRows {
  return Object.fromEntries(Object.entries(rules).map(([op, shape]) => [op, { shape }]));
}

/** Merges row groups; an op registered twice is a programming error. */
export function opRows(...groups: OpRows[]): OpRows {
  const merged: Record<string, OpRow> = {};
  for (const group of groups) {
    for (const [op, row] of Object.entries(group)) {
      if (Object.hasOwn(merged, op)) throw new Error(`op table: '${op}' is registered twice`);
      merged[op] = row;
    }
  }
  return merged;
}
