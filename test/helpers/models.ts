/** Paths of the shipped example models and their ground-truth fixtures. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const MODELS = ['alexnet', 'resnet50', 'resnet50_dynamic', 'vgg16', 'vgg19', 'squeezenet1_0', 'bert_base_like', 'bert_base_like_dynamic', 'gpt2_small_like', 'lstm_lm'] as const;
export type ModelName = (typeof MODELS)[number];

export const modelPath = (name: string): string => `${ROOT}examples/${name}.onnx`;
export const fixturePath = (rel: string): string => `${ROOT}test/fixtures/${rel}`;

export interface ShapesTruth {
  values: Record<string, { dtype: string; dims: (number | string | null)[] | null }>;
  runtime_values: Record<string, number[]>;
  nodes: { name: string; op_type: string; macs?: number | string | null; macs_runtime?: number | null }[];
  initializers: Record<string, { dtype: string; dims: number[]; numel: number; bytes: number }>;
  inputs: Record<string, (number | string)[]>;
}

export function truth(name: string): ShapesTruth {
  return JSON.parse(readFileSync(fixturePath(`models/${name}.shapes.json`), 'utf8')) as ShapesTruth;
}

/** Bindings that make the dynamic twins equal to the static exports (batch 1, sequence 128). */
export function staticBindings(name: string): Map<string, number> {
  if (name === 'resnet50_dynamic') return new Map([['batch', 1]]);
  if (name === 'bert_base_like_dynamic') return new Map([['batch', 1], ['sequence', 128]]);
  return new Map();
}
