/** Graphs for the plan invariants' tests (src/plan/invariants.ts), norms and GELU as torch exports them. */
import { buildModel, FLOAT, type NodeSpec } from './onnx-builder.js';
import { hfGelu, llamaRmsNorm, type GraphParts } from './torch-exports.js';

/** `blocks` x (x + down(gelu(up(LlamaRMSNorm(x))))), norm and GELU as torch exports them. */
export function llamaMlpStack(blocks: number, h: number): Uint8Array {
  const parts: GraphParts = { nodes: [], initializers: [] };
  let x = 'x';
  for (let i = 0; i < blocks; i++) {
    const path = `blocks.${i}`;
    for (const name of ['up', 'down']) parts.initializers.push({ name: `${path}.${name}.weight`, dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } });
    const normed = llamaRmsNorm(parts, x, { path: `${path}.norm`, hidden: h });
    parts.nodes.push({ op: 'MatMul', inputs: [normed, `${path}.up.weight`], outputs: [`${path}.up`] });
    const act = hfGelu(parts, `${path}.up`, `${path}.act`);
    parts.nodes.push({ op: 'MatMul', inputs: [act, `${path}.down.weight`], outputs: [`${path}.down`] }, { op: 'Add', inputs: [x, `${path}.down`], outputs: [`${path}.out`] });
    x = `${path}.out`;
  }
  parts.nodes.push({ op: 'Identity', inputs: [x], outputs: ['y'] });
  return buildModel({ inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 8, h] }], outputs: [{ name: 'y', dtype: FLOAT, dims: [2, 8, h] }], initializers: parts.initializers, nodes: parts.nodes }, 14);
}

/** x -> LlamaRMSNorm -> MatMul, the normalised value also read by a second output (so the norm cannot own its scale). */
export function droppedScaleModel(h: number): Uint8Array {
  const parts: GraphParts = { nodes: [], initializers: [{ name: 'fc.weight', dtype: FLOAT, dims: [h, h], external: { location: 'w.bin' } }] };
  const normed = llamaRmsNorm(parts, 'x', { path: 'ln', hidden: h });
  const inner = parts.nodes.find((n) => n.name === '/ln/Cast_1')?.outputs[0] ?? '';
  const tail: NodeSpec[] = [{ op: 'MatMul', inputs: [normed, 'fc.weight'], outputs: ['y'] }, { op: 'Identity', inputs: [inner], outputs: ['n'] }];
  return buildModel({
    inputs: [{ name: 'x', dtype: FLOAT, dims: [2, 8, h] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [2, 8, h] }, { name: 'n', dtype: FLOAT, dims: [2, 8, h] }],
    initializers: parts.initializers, nodes: [...parts.nodes, ...tail],
  }, 14);
}
