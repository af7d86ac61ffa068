/**
 * A graph-only ONNX writer that names and writes nodes as PyTorch 1.13's exporter does (checked
 * against torch 1.13.1 exports of the modules each builder copies, opset 14-17, constant folding
 * on): node names `/scope/Op_n`, outputs `/scope/Op_n_output_0`; scalars and shape vectors as
 * `Constant` nodes; nn.Linear on 3-D input as `MatMul(x, onnx::MatMul_N)` (the weight transposed
 * into an anonymous initializer) then `Add(bias, y)`, on 2-D input with a bias as `Gemm` with
 * transB; module parameters (norm scales, embeddings, biases) keep their module path.
 * With `dynamic`, shapes that depend on the batch and sequence are built at run time
 * (`Shape -> Gather -> Unsqueeze -> Concat`), as the exporter writes them for dynamic axes.
 */
import { buildModel, FLOAT, INT64, type AttrValue, type NodeSpec, type TensorSpec, type ValueSpec } from '../onnx-builder.js';

const ext = { location: 'none.bin' };

export class TorchGraph {
  readonly nodes: NodeSpec[] = [];
  readonly inits: TensorSpec[] = [];
  /** Trainable parameters written (name -> elements), the ground truth for parameter counts. */
  readonly params = new Map<string, number>();
  /** Float buffers folded into initializers (rotary tables): in the file, but no module's parameters. */
  readonly buffers = new Map<string, number>();
  private readonly names = new Map<string, number>();
  private anonymous = 100;

  constructor(readonly opset: number, readonly dynamic = false) {}

  /** One node; returns its outputs. `scope` is the module path ('/model/layers.0/self_attn'). */
  node(op: string, inputs: string[], scope: string, attrs?: Record<string, AttrValue>, outputs = 1): string[] {
    const key = `${scope}/${op}`;
    const n = this.names.get(key) ?? 0;
    this.names.set(key, n + 1);
    const name = n === 0 ? key : `${key}_${n}`;
    const outs = Array.from({ length: outputs }, (_, i) => `${name}_output_${i}`);
    this.nodes.push({ op, inputs, outputs: outs, name, ...(attrs ? { attrs } : {}) });
    return outs;
  }

  op(op: string, inputs: string[], scope: string, attrs?: Record<string, AttrValue>): string {
    return this.node(op, inputs, scope, attrs)[0] as string;
  }

  /** A float scalar as a Constant node (the exporter's form for Python numbers). */
  scalar(value: number, scope: string): string {
    return this.op('Constant', [], scope, { value: { tensor: { name: 'value', dtype: FLOAT, dims: [], values: [value] } } });
  }

  /** An int64 vector (shapes, axes, slice bounds) as a Constant node. */
  ints(values: number[], scope: string): string {
    return this.op('Constant', [], scope, { value: { tensor: { name: 'value', dtype: INT64, dims: [values.length], values } } });
  }

  /** An int64 scalar Constant (the index of a Gather that picks one dim). */
  intScalar(value: number, scope: string): string {
    return this.op('Constant', [], scope, { value: { tensor: { name: 'value', dtype: INT64, dims: [], values: [value] } } });
  }

  /** A float Constant tensor of zeros (folded buffers: rotary tables, causal masks, zeros_like). */
  table(dims: number[], scope: string): string {
    const count = dims.reduce((a, b) => a * b, 1);
    return this.op('Constant', [], scope, { value: { tensor: { name: 'value', dtype: FLOAT, dims, values: new Array<number>(count).fill(0) } } });
  }

  /** An initializer with dims and no data; trainable ones are counted in `params`. */
  weight(name: string, dims: number[], trainable = true): string {
    this.inits.push({ name, dtype: FLOAT, dims, external: ext });
    (trainable ? this.params : this.buffers).set(name, dims.reduce((a, b) => a * b, 1));
    return name;
  }

  /** An anonymous transposed Linear weight, as constant folding writes it. */
  matmulWeight(k: number, n: number): string {
    return this.weight(`onnx::MatMul_${this.anonymous++}`, [k, n]);
  }

  /** nn.Linear on a 3-D (or bias-less 2-D) input: MatMul, then Add(bias, y). */
  linear(x: string, scope: string, k: number, n: number, bias: boolean, biasName = `${scope.slice(1).replaceAll('/', '.')}.bias`): string {
    const y = this.op('MatMul', [x, this.matmulWeight(k, n)], scope);
    return bias ? this.op('Add', [this.weight(biasName, [n]), y], scope) : y;
  }

  /** nn.Linear with a bias on a 2-D input: Gemm(x, W[n, k], b, transB=1). */
  gemm(x: string, scope: string, k: number, n: number, path = scope.slice(1).replaceAll('/', '.')): string {
    return this.op('Gemm', [x, this.weight(`${path}.weight`, [n, k]), this.weight(`${path}.bias`, [n])], scope, { alpha: { float: 1 }, beta: { float: 1 }, transB: 1 });
  }

  /**
   * A shape for Reshape/Expand: `leading` dims of `source` (batch, sequence) then fixed dims.
   * Static: one Constant; dynamic: Shape -> Gather -> Unsqueeze per leading dim, Concat.
   */
  shapeOf(source: string, leading: number[], values: number[], fixed: number[], scope: string): string {
    if (!this.dynamic) return this.ints([...values, ...fixed], scope);
    const pieces = leading.map((axis) => {
      const dim = this.op('Gather', [this.op('Shape', [source], scope), this.intScalar(axis, scope)], scope, { axis: 0 });
      return this.op('Unsqueeze', [dim, this.ints([0], scope)], scope);
    });
    return this.op('Concat', [...pieces, ...fixed.map((f) => this.ints([f], scope))], scope, { axis: 0 });
  }

  /** Reshape + Transpose into heads: [b, s, heads*d] -> [b, heads, s, d] (or `perm`). */
  toHeads(x: string, source: string, b: number, s: number, heads: number, d: number, scope: string, perm = [0, 2, 1, 3]): string {
    const r = this.op('Reshape', [x, this.shapeOf(source, [0, 1], [b, s], [heads, d], scope)], scope, { allowzero: 0 });
    return this.op('Transpose', [r], scope, { perm });
  }

  /** [b, heads, s, d] -> [b, s, heads*d]. */
  mergeHeads(ctx: string, source: string, b: number, s: number, width: number, scope: string): string {
    const t = this.op('Transpose', [ctx], scope, { perm: [0, 2, 1, 3] });
    return this.op('Reshape', [t, this.shapeOf(source, [0, 1], [b, s], [width], scope)], scope, { allowzero: 0 });
  }

  /** Softmax over the last axis, with the Cast the exporter writes for `dtype=torch.float32`. */
  softmax(x: string, scope: string, cast: boolean): string {
    const p = this.op('Softmax', [x], scope, { axis: -1 });
    return cast ? this.op('Cast', [p], scope, { to: FLOAT }) : p;
  }

  build(inputs: ValueSpec[], outputs: ValueSpec[]): Uint8Array {
    return buildModel({ inputs, outputs, initializers: this.inits, nodes: this.nodes }, this.opset);
  }
}

/** HF LlamaRMSNorm / T5LayerNorm: weight * (x * rsqrt(mean(x^2) + eps)), rsqrt as Div(1, Sqrt). */
export function rmsNorm(g: TorchGraph, x: string, scope: string, h: number, o: { casts?: boolean; reciprocal?: boolean } = {}): string {
  const path = scope.slice(1).replaceAll('/', '.');
  const xf = o.casts ? g.op('Cast', [x], scope, { to: FLOAT }) : x;
  const mean = g.op('ReduceMean', [g.op('Pow', [xf, g.scalar(2, scope)], scope)], scope, { axes: [-1], keepdims: 1 });
  const root = g.op('Sqrt', [g.op('Add', [mean, g.scalar(1e-6, scope)], scope)], scope);
  const inv = o.reciprocal ? g.op('Reciprocal', [root], scope) : g.op('Div', [g.scalar(1, scope), root], scope);
  const normed = g.op('Mul', [xf, inv], scope);
  const back = o.casts ? g.op('Cast', [normed], scope, { to: FLOAT }) : normed;
  return g.op('Mul', [g.weight(`${path}.weight`, [h]), back], scope);
}

/** nn.LayerNorm: LayerNormalization at opset 17, else the opset-9 pieces torch writes. */
export function layerNorm(g: TorchGraph, x: string, scope: string, h: number): string {
  const path = scope.slice(1).replaceAll('/', '.');
  const gamma = g.weight(`${path}.weight`, [h]);
  const beta = g.weight(`${path}.bias`, [h]);
  if (g.opset >= 17) return g.op('LayerNormalization', [x, gamma, beta], scope, { axis: -1, epsilon: { float: 1e-5 } });
  const mean = g.op('ReduceMean', [x], scope, { axes: [-1] });
  const centred = g.op('Sub', [x, mean], scope);
  const variance = g.op('ReduceMean', [g.op('Pow', [centred, g.scalar(2, scope)], scope)], scope, { axes: [-1] });
  const root = g.op('Sqrt', [g.op('Add', [variance, g.scalar(1e-5, scope)], scope)], scope);
  return g.op('Add', [g.op('Mul', [g.op('Div', [centred, root], scope), gamma], scope), beta], scope);
}

/** GELU as nn.GELU / HF's erf gelu exports it: x * 0.5 * (1 + erf(x / sqrt 2)). */
export function geluErf(g: TorchGraph, x: string, scope: string): string {
  const erf = g.op('Erf', [g.op('Div', [x, g.scalar(1.4142135381698608, scope)], scope)], scope);
  return g.op('Mul', [g.op('Mul', [x, g.op('Add', [erf, g.scalar(1, scope)], scope)], scope), g.scalar(0.5, scope)], scope);
}

/** HF's gelu_new (GPT-J): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
export function geluTanh(g: TorchGraph, x: string, scope: string): string {
  const cube = g.op('Mul', [g.scalar(0.044715, scope), g.op('Pow', [x, g.scalar(3, scope)], scope)], scope);
  const inner = g.op('Mul', [g.scalar(0.7978845608028654, scope), g.op('Add', [x, cube], scope)], scope);
  const t = g.op('Add', [g.scalar(1, scope), g.op('Tanh', [inner], scope)], scope);
  return g.op('Mul', [g.op('Mul', [g.scalar(0.5, scope), x], scope), t], scope);
}

/** SiLU as torch 1.13 exports F.silu: x * Sigmoid(x). */
export function silu(g: TorchGraph, x: string, scope: string): string {
  return g.op('Mul', [x, g.op('Sigmoid', [x], scope)], scope);
}

/**
 * The MLP activation: the default export form of the builder, or any other unary nonlinearity
 * written as one op (Selu, Elu, Softplus, Mish, Tanh, Sigmoid, LeakyRelu, Relu).
 */
export type UnaryActivation = 'Relu' | 'Selu' | 'Elu' | 'Softplus' | 'Mish' | 'Tanh' | 'Sigmoid' | 'LeakyRelu';
export function unary(g: TorchGraph, x: string, scope: string, op: UnaryActivation): string {
  return g.op(op, [x], scope);
}

/** HF's rotary embedding on [b, heads, s, d]: q * cos + rotate_half(q) * sin (the exporter ends the second slice at INT64_MAX; JS numbers stop at 2^53, which clamps the same). */
export function rotary(g: TorchGraph, x: string, cos: string, sin: string, d: number, scope: string): string {
  const x1 = g.op('Slice', [x, g.ints([0], scope), g.ints([d / 2], scope), g.ints([3], scope), g.ints([1], scope)], scope);
  const x2 = g.op('Slice', [x, g.ints([d / 2], scope), g.ints([Number.MAX_SAFE_INTEGER], scope), g.ints([3], scope), g.ints([1], scope)], scope);
  const rotated = g.op('Concat', [g.op('Neg', [x2], scope), x1], scope, { axis: -1 });
  return g.op('Add', [g.op('Mul', [x, cos], scope), g.op('Mul', [rotated, sin], scope)], scope);
}

export { FLOAT, INT64 };
