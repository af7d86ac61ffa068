/**
 * Norms and activations as PyTorch 1.13's exporter writes them (torch.onnx.export, opset 14, the
 * op sequences copied from exports of the HF / torch modules named below): constants are
 * `Constant` nodes, node names follow the module path (`/ln/Pow`). Each builder appends its nodes
 * and initializers to a graph under construction and returns the value it writes.
 */
import { FLOAT, type NodeSpec, type TensorSpec } from './onnx-builder.js';

export const FLOAT16 = 10;

export interface GraphParts {
  nodes: NodeSpec[];
  initializers: TensorSpec[];
}

export interface NormOptions {
  /** Module path: node names /PATH/Op, weights PATH.weight and PATH.bias. */
  path: string;
  hidden: number;
  /** The model's dtype (fp32, or fp16 with the fp32 upcast inside the norm). */
  dtype?: typeof FLOAT | typeof FLOAT16;
}

const ext = { location: 'weights.bin' };

class Emitter {
  private counts = new Map<string, number>();
  constructor(private readonly parts: GraphParts, private readonly path: string) {}

  /** One node named as the exporter names it (/path/Op, /path/Op_1, ...); returns its output. */
  op(opType: string, inputs: string[], attrs?: NodeSpec['attrs']): string {
    const n = this.counts.get(opType) ?? 0;
    this.counts.set(opType, n + 1);
    const name = `/${this.path}/${opType}${n === 0 ? '' : `_${n}`}`;
    const out = `${name}_output_0`;
    this.parts.nodes.push({ op: opType, inputs, outputs: [out], name, ...(attrs ? { attrs } : {}) });
    return out;
  }

  constant(value: number): string {
    return this.op('Constant', [], { value: { tensor: { name: 'value', dtype: FLOAT, dims: [], values: [value] } } });
  }

  weight(name: string, dims: number[], dtype: number): string {
    this.parts.initializers.push({ name, dtype, dims, external: ext });
    return name;
  }
}

/**
 * HF LlamaRMSNorm (transformers >= 4.31): `x = x.to(float32); var = x.pow(2).mean(-1, keepdim);
 * x = x * rsqrt(var + eps); return weight * x.to(input_dtype)`. Exported (fp32 and fp16 alike):
 * Cast, Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul, Cast, Mul(weight, .).
 */
export function llamaRmsNorm(parts: GraphParts, x: string, o: NormOptions): string {
  const e = new Emitter(parts, o.path);
  const dtype = o.dtype ?? FLOAT;
  const xf = e.op('Cast', [x], { to: FLOAT });
  const variance = e.op('ReduceMean', [e.op('Pow', [xf, e.constant(2)])], { axes: [-1], keepdims: 1 });
  const rsqrt = e.op('Div', [e.constant(1), e.op('Sqrt', [e.op('Add', [variance, e.constant(1e-6)])])]);
  const normed = e.op('Cast', [e.op('Mul', [xf, rsqrt])], { to: dtype });
  return e.op('Mul', [e.weight(`${o.path}.weight`, [o.hidden], dtype), normed]);
}

/**
 * HF T5LayerNorm: `var = x.to(float32).pow(2).mean(-1, keepdim); x = x * rsqrt(var + eps);
 * if weight is fp16: x = x.to(fp16); return weight * x`. fp16 exports cast x twice (once for the
 * variance, once for the product): Cast, Pow, ReduceMean, Add, Sqrt, Div(1, .), Cast, Mul, Cast,
 * Mul(weight, .); fp32: Cast, Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul(Cast(x), .), Mul(weight, .).
 */
export function t5LayerNorm(parts: GraphParts, x: string, o: NormOptions): string {
  const e = new Emitter(parts, o.path);
  const dtype = o.dtype ?? FLOAT;
  const forVariance = e.op('Cast', [x], { to: FLOAT });
  const variance = e.op('ReduceMean', [e.op('Pow', [forVariance, e.constant(2)])], { axes: [-1], keepdims: 1 });
  const rsqrt = e.op('Div', [e.constant(1), e.op('Sqrt', [e.op('Add', [variance, e.constant(1e-6)])])]);
  const operand = dtype === FLOAT ? forVariance : e.op('Cast', [x], { to: FLOAT });
  const product = e.op('Mul', [operand, rsqrt]);
  const normed = dtype === FLOAT ? product : e.op('Cast', [product], { to: dtype });
  return e.op('Mul', [e.weight(`${o.path}.weight`, [o.hidden], dtype), normed]);
}

/**
 * Gemma's RMSNorm: `out = x.float() * rsqrt(x.float().pow(2).mean(-1, keepdim) + eps);
 * out = out * (1 + weight.float()); return out.type_as(x)`. Without constant folding the scale is
 * Add(Cast(weight), 1); with it (`folded`), the exporter writes `1 + weight` as a new initializer.
 */
export function gemmaRmsNorm(parts: GraphParts, x: string, o: NormOptions & { folded?: boolean }): string {
  const e = new Emitter(parts, o.path);
  const dtype = o.dtype ?? FLOAT;
  const xf = e.op('Cast', [x], { to: FLOAT });
  const variance = e.op('ReduceMean', [e.op('Pow', [xf, e.constant(2)])], { axes: [-1], keepdims: 1 });
  const rsqrt = e.op('Div', [e.constant(1), e.op('Sqrt', [e.op('Add', [variance, e.constant(1e-6)])])]);
  const normed = e.op('Mul', [xf, rsqrt]);
  const scale = o.folded ? e.weight(`onnx::Mul_${o.path}`, [o.hidden], FLOAT) : e.op('Add', [e.op('Cast', [e.weight(`${o.path}.weight`, [o.hidden], dtype)], { to: FLOAT }), e.constant(1)]);
  const out = e.op('Mul', [normed, scale]);
  return dtype === FLOAT ? out : e.op('Cast', [out], { to: dtype });
}

/**
 * LayerNorm decomposed, as torch exports nn.LayerNorm below opset 17 (`weightFirst`: false) and
 * HF's hand-written BertLayerNorm (`weight * x + bias`, `weightFirst`: true): ReduceMean, Sub,
 * Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
 */
export function decomposedLayerNorm(parts: GraphParts, x: string, o: NormOptions & { weightFirst?: boolean; keepdims?: boolean }): string {
  const e = new Emitter(parts, o.path);
  const keep: Record<string, number> = o.keepdims === false ? {} : { keepdims: 1 }; // nn.LayerNorm at opset 13 omits it (default 1)
  const centred = e.op('Sub', [x, e.op('ReduceMean', [x], { axes: [-1], ...keep })]);
  const variance = e.op('ReduceMean', [e.op('Pow', [centred, e.constant(2)])], { axes: [-1], ...keep });
  const normed = e.op('Div', [centred, e.op('Sqrt', [e.op('Add', [variance, e.constant(1e-5)])])]);
  const weight = e.weight(`${o.path}.weight`, [o.hidden], FLOAT);
  const bias = e.weight(`${o.path}.bias`, [o.hidden], FLOAT);
  const scaled = e.op('Mul', o.weightFirst ? [weight, normed] : [normed, weight]);
  return e.op('Add', o.weightFirst ? [bias, scaled] : [scaled, bias]);
}

/** torch's F.gelu (approximate='none'): Div(x, sqrt 2), Erf, Add(., 1), Mul(x, .), Mul(., 0.5). */
export function torchGelu(parts: GraphParts, x: string, path: string): string {
  const e = new Emitter(parts, path);
  const erf = e.op('Erf', [e.op('Div', [x, e.constant(Math.SQRT2)])]);
  return e.op('Mul', [e.op('Mul', [x, e.op('Add', [erf, e.constant(1)])]), e.constant(0.5)]);
}

/** HF's gelu `x * 0.5 * (1 + erf(x / sqrt 2))`: Mul(x, 0.5), Div(x, sqrt 2), Erf, Add(., 1), Mul. */
export function hfGelu(parts: GraphParts, x: string, path: string): string {
  const e = new Emitter(parts, path);
  const half = e.op('Mul', [x, e.constant(0.5)]);
  const erf = e.op('Erf', [e.op('Div', [x, e.constant(Math.SQRT2)])]);
  return e.op('Mul', [half, e.op('Add', [erf, e.constant(1)])]);
}

/**
 * torch's F.gelu(approximate='tanh'): Mul(x, x), Mul(x, .), Mul(0.044715, .), Add(x, .),
 * Mul(sqrt(2/pi), .), Tanh, Add(1, .), Mul(x, .), Mul(0.5, .).
 */
export function torchTanhGelu(parts: GraphParts, x: string, path: string): string {
  const e = new Emitter(parts, path);
  const cube = e.op('Mul', [x, e.op('Mul', [x, x])]);
  const inner = e.op('Mul', [e.constant(Math.sqrt(2 / Math.PI)), e.op('Add', [x, e.op('Mul', [e.constant(0.044715), cube])])]);
  const tanh = e.op('Tanh', [inner]);
  return e.op('Mul', [e.constant(0.5), e.op('Mul', [x, e.op('Add', [e.constant(1), tanh])])]);
}

/**
 * HF's NewGELUActivation (GPT-2): `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`:
 * Mul(x, 0.5), Pow(x, 3), Mul(., 0.044715), Add(x, .), Mul(., sqrt(2/pi)), Tanh, Add(., 1), Mul.
 */
export function hfNewGelu(parts: GraphParts, x: string, path: string): string {
  const e = new Emitter(parts, path);
  const half = e.op('Mul', [x, e.constant(0.5)]);
  const inner = e.op('Mul', [e.op('Add', [x, e.op('Mul', [e.op('Pow', [x, e.constant(3)]), e.constant(0.044715)])]), e.constant(Math.sqrt(2 / Math.PI))]);
  return e.op('Mul', [half, e.op('Add', [e.op('Tanh', [inner]), e.constant(1)])]);
}
