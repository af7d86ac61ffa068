/** In-memory single-graph models for rule tests: no file, inputs with declared shapes and values. */
import type { Dim } from '../../src/ir/dim.js';
import type { Attribute, Model, Node, ValueInfo } from '../../src/ir/graph.js';
import type { LoadedModel } from '../../src/onnx/reader.js';
import { inferShapes, type InferredModel } from '../../src/shape/infer.js';

export interface InputSpec {
  name: string;
  dtype: number;
  shape: readonly Dim[];
  value?: readonly Dim[];
}

export function node(opType: string, inputs: string[], outputs: string[], attributes: Record<string, Attribute> = {}, domain = ''): Node {
  return { name: `${opType}_${outputs[0]}`, opType, domain, inputs, outputs, attributes: new Map(Object.entries(attributes)) };
}

export const ints = (value: number[]): Attribute => ({ kind: 'ints', value });
export const int = (value: number): Attribute => ({ kind: 'int', value });
export const str = (value: string): Attribute => ({ kind: 'string', value });

/** Infers a graph of `nodes` over `inputs`, with the given opsets (default: ONNX opset 18). */
export function inferGraph(nodes: Node[], inputs: InputSpec[], opsets: Record<string, number> = { '': 18 }): InferredModel {
  const infos: ValueInfo[] = inputs.map((i) => ({ name: i.name, type: { kind: 'tensor', dtype: i.dtype, shape: i.shape } }));
  const model: Model = {
    path: 'memory.onnx', irVersion: 8, producerName: 'test', producerVersion: '', opsets: new Map(Object.entries(opsets)),
    graph: { name: 'g', nodes, inputs: infos, outputs: [], valueInfo: [], initializers: [], sparseInitializers: [] },
  };
  const loaded: LoadedModel = { model, spans: { modelPath: 'memory.onnx', readSpan: () => new Uint8Array() }, stats: { bytesRead: 0, reads: 0, fileBytes: 0 } };
  const inputValues = new Map<string, readonly Dim[]>();
  for (const i of inputs) if (i.value !== undefined) inputValues.set(i.name, i.value);
  return inferShapes(loaded, { inputValues });
}
