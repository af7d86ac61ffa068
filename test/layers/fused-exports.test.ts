/**
 * Norms and GELU in the forms PyTorch 1.13 exports them (test/helpers/torch-exports.ts): each is
 * one vector layer, a norm owning its scale (and shift). Expected figures come from the
 * initializer dims: a norm of width h holds h scale parameters (and h shift parameters), and its
 * work is the b x s x h elements of its input.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { uniqueParameterCount } from '../../src/layers/params.js';
import { analyseModel } from '../../src/pipeline.js';
import { buildModel, FLOAT, type GraphSpec } from '../helpers/onnx-builder.js';
import { decomposedLayerNorm, FLOAT16, gemmaRmsNorm, hfGelu, hfNewGelu, llamaRmsNorm, t5LayerNorm, torchGelu, torchTanhGelu, type GraphParts, type NormOptions } from '../helpers/torch-exports.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-fused-'));
let counter = 0;
const [b, s, h] = [2, 8, 32];
const E = b * s * h;

/** x [b, s, h] -> build(x) -> y, in `dtype`. */
function graphOf(build: (parts: GraphParts, x: string) => string, dtype: number = FLOAT, opset = 14): string {
  const parts: GraphParts = { nodes: [], initializers: [] };
  const y = build(parts, 'x');
  parts.nodes.push({ op: 'Identity', inputs: [y], outputs: ['y'], name: '/Identity' });
  const g: GraphSpec = { inputs: [{ name: 'x', dtype, dims: [b, s, h] }], outputs: [{ name: 'y', dtype, dims: [b, s, h] }], initializers: parts.initializers, nodes: parts.nodes };
  const path = join(dir, `m${counter++}.onnx`);
  writeFileSync(path, buildModel(g, opset));
  return path;
}
const layersOf = (path: string) => analyseModel(path, {}, {}, { vectorOps: true }).layers;
const summary = (path: string) => layersOf(path).map((l) => ({ op: l.op, opClass: l.vector?.opClass, elements: l.vector?.elements, weights: l.weightTensors, biases: l.biasTensors, params: l.weightParams + l.biasParams, inputs: l.activationInputs, bytesIn: l.inputActivationBytes }));

describe('RMSNorm export forms: one layernorm layer owning its scale', () => {
  const norm = (dtype: number) => ({ op: 'RMSNormalization', opClass: 'layernorm', elements: E, params: h, inputs: ['x'], bytesIn: E * (dtype === FLOAT ? 4 : 2) });
  const o = (dtype: typeof FLOAT | typeof FLOAT16): NormOptions => ({ path: 'ln', hidden: h, dtype });
  for (const dtype of [FLOAT, FLOAT16] as const) {
    const dt = dtype === FLOAT ? 'fp32' : 'fp16';
    it(`HF LlamaRMSNorm (${dt}): Cast, Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul, Cast, Mul(weight, .)`, () => {
      expect(summary(graphOf((p, x) => llamaRmsNorm(p, x, o(dtype)), dtype))).toEqual([{ ...norm(dtype), weights: ['ln.weight'], biases: [] }]);
    });
    it(`T5LayerNorm (${dt}): x cast once per use, weight * x`, () => {
      expect(summary(graphOf((p, x) => t5LayerNorm(p, x, o(dtype)), dtype))).toEqual([{ ...norm(dtype), weights: ['ln.weight'], biases: [] }]);
    });
    it(`Gemma's RMSNorm (${dt}): x (1 + weight), then cast back`, () => {
      expect(summary(graphOf((p, x) => gemmaRmsNorm(p, x, o(dtype)), dtype))).toEqual([{ ...norm(dtype), weights: ['ln.weight'], biases: [] }]);
    });
  }
  it("Gemma's RMSNorm with constant folding: the exporter's folded (1 + weight) initializer is the scale", () => {
    expect(summary(graphOf((p, x) => gemmaRmsNorm(p, x, { ...o(FLOAT), folded: true })))).toEqual([{ ...norm(FLOAT), weights: ['onnx::Mul_ln'], biases: [] }]);
  });
  it('rsqrt as Reciprocal(Sqrt) or as a power (v^-0.5), operands in either order', () => {
    for (const inverse of ['Reciprocal', 'Pow'] as const) {
      const path = graphOf((parts) => {
        parts.initializers.push({ name: 'g', dtype: FLOAT, dims: [h], external: { location: 'w.bin' } });
        const c = (name: string, v: number): string => {
          parts.nodes.push({ op: 'Constant', inputs: [], outputs: [name], attrs: { value: { tensor: { name, dtype: FLOAT, dims: [], values: [v] } } } });
          return name;
        };
        parts.nodes.push(
          { op: 'Mul', inputs: ['x', 'x'], outputs: ['sq'] },
          { op: 'ReduceMean', inputs: ['sq'], outputs: ['var'], attrs: { axes: [2] } },
          { op: 'Add', inputs: [c('eps', 1e-6), 'var'], outputs: ['ve'] },
          ...(inverse === 'Reciprocal'
            ? [{ op: 'Sqrt', inputs: ['ve'], outputs: ['std'] }, { op: 'Reciprocal', inputs: ['std'], outputs: ['r'] }]
            : [{ op: 'Pow', inputs: ['ve', c('p', -0.5)], outputs: ['r'] }]),
          { op: 'Mul', inputs: ['r', 'x'], outputs: ['n'] },
          { op: 'Mul', inputs: ['n', 'g'], outputs: ['out'] },
        );
        return 'out';
      });
      expect(summary(path)).toEqual([{ ...norm(FLOAT), weights: ['g'], biases: [] }]);
    }
  });
});

describe('LayerNorm export forms: one layernorm layer owning scale and shift', () => {
  const expected = { op: 'LayerNormalization', opClass: 'layernorm', elements: E, weights: ['ln.weight'], biases: ['ln.bias'], params: 2 * h, inputs: ['x'], bytesIn: 4 * E };
  it('nn.LayerNorm at opset 13 (normalised * weight + bias)', () => {
    expect(summary(graphOf((p, x) => decomposedLayerNorm(p, x, { path: 'ln', hidden: h, keepdims: false }), FLOAT, 13))).toEqual([expected]);
  });
  it("HF BertLayerNorm (weight * normalised + bias, the other operand order)", () => {
    expect(summary(graphOf((p, x) => decomposedLayerNorm(p, x, { path: 'ln', hidden: h, weightFirst: true })))).toEqual([expected]);
  });
  it('LayerNormalization (opset 17) and the onnxruntime fused norms hold their parameters', () => {
    const path = join(dir, `m${counter++}.onnx`);
    writeFileSync(path, buildModel({
      inputs: [{ name: 'x', dtype: FLOAT, dims: [b, s, h] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [b, s, h] }],
      initializers: ['g', 'beta', 'skip_bias', 'g2', 'g3'].map((name) => ({ name, dtype: FLOAT, dims: [h], external: { location: 'w.bin' } })),
      nodes: [
        { op: 'LayerNormalization', inputs: ['x', 'g', 'beta'], outputs: ['l1'], attrs: { axis: -1 } },
        { op: 'SkipSimplifiedLayerNormalization', domain: 'com.microsoft', inputs: ['l1', 'x', 'g2', 'skip_bias'], outputs: ['l2'] },
        { op: 'SimplifiedLayerNormalization', inputs: ['l2', 'g3'], outputs: ['y'], attrs: { axis: -1 } },
      ],
    }, 17, { 'com.microsoft': 1 }));
    expect(layersOf(path).map((l) => [l.vector?.opClass, l.weightTensors, l.biasTensors])).toEqual([
      ['layernorm', ['g'], ['beta']],
      ['layernorm', ['g2'], ['skip_bias']],
      ['layernorm', ['g3'], []],
    ]);
  });
});

describe('norms that are not one function of one input stay op by op', () => {
  it('a mean over another axis is not a norm', () => {
    const path = graphOf((parts) => {
      parts.initializers.push({ name: 'g', dtype: FLOAT, dims: [h], external: { location: 'w.bin' } });
      parts.nodes.push(
        { op: 'Mul', inputs: ['x', 'x'], outputs: ['sq'] },
        { op: 'ReduceMean', inputs: ['sq'], outputs: ['var'], attrs: { axes: [1] } },
        { op: 'Sqrt', inputs: ['var'], outputs: ['std'] },
        { op: 'Div', inputs: ['x', 'std'], outputs: ['n'] },
        { op: 'Mul', inputs: ['n', 'g'], outputs: ['out'] },
      );
      return 'out';
    });
    // (The Sqrt of the [2, 1, 32] mean is 64 elements: tiny, not work.)
    expect(layersOf(path).map((l) => l.op)).toEqual(['Mul', 'ReduceMean', 'Div', 'Mul']);
  });
  it('a normalised value read outside the norm keeps the scale product its own layer', () => {
    const parts: GraphParts = { nodes: [], initializers: [] };
    const y = llamaRmsNorm(parts, 'x', { path: 'ln', hidden: h });
    const normed = parts.nodes.find((n) => n.name === '/ln/Cast_1')?.outputs[0] ?? '';
    parts.nodes.push({ op: 'Identity', inputs: [y], outputs: ['y'] }, { op: 'Identity', inputs: [normed], outputs: ['n'] });
    const path = join(dir, `m${counter++}.onnx`);
    writeFileSync(path, buildModel({ inputs: [{ name: 'x', dtype: FLOAT, dims: [b, s, h] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [b, s, h] }, { name: 'n', dtype: FLOAT, dims: [b, s, h] }], initializers: parts.initializers, nodes: parts.nodes }, 14));
    const layers = layersOf(path);
    expect(layers.map((l) => l.op)).toEqual(['RMSNormalization', 'Mul']);
    expect(layers[0]?.weightTensors).toEqual([]);
  });
});

describe('a cast to the dtype its input has', () => {
  it("is no work: torch's `.to(float32)` of an fp32 residual that the residual add also reads", () => {
    // x + f(LlamaRMSNorm(x)): the exporter's Cast(x -> fp32) output is the norm's input and the residual's.
    const path = graphOf((parts, x) => {
      parts.initializers.push({ name: 'fc.weight', dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } });
      const n = llamaRmsNorm(parts, x, { path: 'ln', hidden: h });
      const cast = parts.nodes.find((node) => node.name === '/ln/Cast')?.outputs[0] ?? '';
      parts.nodes.push({ op: 'MatMul', inputs: [n, 'fc.weight'], outputs: ['fc'] }, { op: 'Add', inputs: [cast, 'fc'], outputs: ['res'] });
      return 'res';
    });
    expect(layersOf(path).map((l) => [l.op, l.activationInputs])).toEqual([
      ['RMSNormalization', ['/ln/Cast_output_0']],
      ['MatMul', ['/ln/Mul_1_output_0']],
      ['Add', ['/ln/Cast_output_0', 'fc']],
    ]);
  });
});

describe('GELU export forms: one gelu layer reading one input', () => {
  const forms = { 'torch F.gelu (erf)': torchGelu, "HF's erf gelu": hfGelu, "torch F.gelu(approximate='tanh')": torchTanhGelu, "HF's NewGELUActivation": hfNewGelu };
  for (const [name, form] of Object.entries(forms)) {
    it(name, () => {
      expect(summary(graphOf((p, x) => form(p, x, 'act')))).toEqual([{ op: 'Gelu', opClass: 'gelu', elements: E, weights: [], biases: [], params: 0, inputs: ['x'], bytesIn: 4 * E }]);
    });
  }
  it('computed in fp32 inside an fp16 model (Cast up, GELU, Cast back)', () => {
    const path = graphOf((parts, x) => {
      parts.nodes.push({ op: 'Cast', inputs: [x], outputs: ['xf'], attrs: { to: FLOAT } });
      const g = torchGelu(parts, 'xf', 'act');
      parts.nodes.push({ op: 'Cast', inputs: [g], outputs: ['g16'], attrs: { to: FLOAT16 } });
      return 'g16';
    }, FLOAT16);
    expect(summary(path)).toEqual([{ op: 'Gelu', opClass: 'gelu', elements: E, weights: [], biases: [], params: 0, inputs: ['x'], bytesIn: 2 * E }]);
  });
  it('after a Linear with its bias: the bias stays the GEMM\'s, the GELU reads the biased value', () => {
    const path = graphOf((parts, x) => {
      parts.initializers.push({ name: 'fc.weight', dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } }, { name: 'fc.bias', dtype: FLOAT, dims: [h], external: { location: 'w.bin' } });
      parts.nodes.push({ op: 'MatMul', inputs: [x, 'fc.weight'], outputs: ['mm'], name: '/fc/MatMul' }, { op: 'Add', inputs: ['fc.bias', 'mm'], outputs: ['fc'], name: '/fc/Add' });
      return torchGelu(parts, 'fc', 'act');
    });
    expect(layersOf(path).map((l) => [l.op, l.weightTensors, l.biasTensors, l.activationInputs])).toEqual([
      ['MatMul', ['fc.weight'], ['fc.bias'], ['x']],
      ['Add', [], [], ['mm']],
      ['Gelu', [], [], ['fc']],
    ]);
  });
  it('tanh(x) / 2 and erf(x) + 1 are not GELU (x is not read again by the product)', () => {
    const path = graphOf((parts, x) => {
      parts.nodes.push(
        { op: 'Constant', inputs: [], outputs: ['half'], attrs: { value: { tensor: { name: 'half', dtype: FLOAT, dims: [], values: [0.5] } } } },
        { op: 'Tanh', inputs: [x], outputs: ['t'] },
        { op: 'Mul', inputs: ['t', 'half'], outputs: ['out'] },
      );
      return 'out';
    });
    expect(layersOf(path).map((l) => l.op)).toEqual(['Tanh', 'Mul']);
  });
});

describe('parameters of a block of every form: every initializer held by a layer', () => {
  it('LlamaRMSNorm + MatMul + GELU + MatMul: h + 2 h^2 parameters', () => {
    const path = graphOf((parts, x) => {
      parts.initializers.push({ name: 'up.weight', dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } }, { name: 'down.weight', dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } });
      const n = llamaRmsNorm(parts, x, { path: 'ln', hidden: h });
      parts.nodes.push({ op: 'MatMul', inputs: [n, 'up.weight'], outputs: ['up'] });
      const g = hfGelu(parts, 'up', 'act');
      parts.nodes.push({ op: 'MatMul', inputs: [g, 'down.weight'], outputs: ['down'] });
      return 'down';
    });
    const layers = layersOf(path);
    expect(layers.map((l) => l.op)).toEqual(['RMSNormalization', 'MatMul', 'Gelu', 'MatMul']);
    expect(uniqueParameterCount(layers)).toBe(h + 2 * h * h);
  });

  it("inspect's parameter total counts a 1,024-wide LlamaRMSNorm's scale (it was 1,024 short)", async () => {
    const width = 1024;
    const parts: GraphParts = { nodes: [], initializers: [{ name: 'fc.weight', dtype: FLOAT, dims: [width, width], external: { location: 'w.bin' } }] };
    const n = llamaRmsNorm(parts, 'x', { path: 'ln', hidden: width });
    parts.nodes.push({ op: 'MatMul', inputs: [n, 'fc.weight'], outputs: ['y'] });
    const path = join(dir, `m${counter++}.onnx`);
    writeFileSync(path, buildModel({ inputs: [{ name: 'x', dtype: FLOAT, dims: [1, 4, width] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [1, 4, width] }], initializers: parts.initializers, nodes: parts.nodes }, 14));
    const { buildReport } = await import('../../src/report/layer-report.js');
    const { idealCostModel } = await import('../../src/cost/ideal.js');
    const { costModelLayers } = await import('../../src/costed/costed-plan.js');
    const { loadProfile } = await import('../../src/cli/options.js');
    const report = buildReport(path, costModelLayers(layersOf(path), idealCostModel(await loadProfile('tpu-256'))));
    expect(report.totals.params).toBe(width + width * width);
  });
});
