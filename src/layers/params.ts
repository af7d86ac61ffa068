/**
 * Parameters over a whole model. A tensor two layers hold (a weight shared by two MatMuls, a tied
 * embedding and output projection) is one set of parameters: counted once, and its gradient is
 * all-reduced once, by the first layer that holds it (the last to finish its backward pass).
 */
import type { Layer } from './types.js';

/** Elements of each tensor a layer holds (from `tensorParams`, else the layer's own totals when it holds one tensor of each kind). */
function heldTensors(layer: Layer): { name: string; elements: number; bias: boolean }[] {
  const elementsOf = (name: string, bias: boolean): number => {
    const known = layer.tensorParams?.get(name);
    if (known !== undefined) return known;
    const total = bias ? layer.biasParams : layer.weightParams;
    const tensors = bias ? layer.biasTensors : layer.weightTensors;
    return tensors.length === 1 ? total : 0;
  };
  return [
    ...layer.weightTensors.map((name) => ({ name, elements: elementsOf(name, false), bias: false })),
    ...layer.biasTensors.map((name) => ({ name, elements: elementsOf(name, true), bias: true })),
  ];
}

/** Parameters of the model: every tensor any layer holds, counted once. */
export function uniqueParameterCount(layers: readonly Layer[]): number {
  const seen = new Map<string, number>();
  for (const layer of layers) for (const t of heldTensors(layer)) if (!seen.has(t.name)) seen.set(t.name, t.elements);
  return [...seen.values()].reduce((a, n) => a + n, 0);
}

/** Per layer, the weight and bias parameters no earlier layer holds: what its gradient all-reduce carries. */
export function ownParameters(layers: readonly Layer[]): { weightParams: number; biasParams: number }[] {
  const seen = new Set<string>();
  return layers.map((layer) => {
    let weightParams = 0;
    let biasParams = 0;
    for (const t of heldTensors(layer)) {
      if (seen.has(t.name)) continue;
      seen.add(t.name);
      if (t.bias) biasParams += t.elements;
      else weightParams += t.elements;
    }
    return { weightParams, biasParams };
  });
}
