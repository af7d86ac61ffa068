/**
 * The parsed model: an immutable description of the ONNX graph with every tensor's data left
 * where it is (a lazy `DataLocation`), so one parse can be costed on many hardware profiles.
 */
import type { Dim } from './dim.js';
import type { DTypeCode } from './dtype.js';

/** Where a tensor's elements are stored. Nothing is read until a shape rule needs the values. */
export type DataLocation =
  /** A field of the TensorProto in the model file: byte span [offset, offset + byteLength). */
  | { kind: 'inline'; encoding: InlineEncoding; offset: number; byteLength: number }
  /** ONNX external data: `location` relative to the model's folder. `length` absent = to end. */
  | { kind: 'external'; location: string; offset: number; length: number | undefined }
  /** No data at all (a tensor with zero elements, or data the file does not carry). */
  | { kind: 'empty' };

/**
 * How inline elements are encoded: `raw` = raw_data little-endian bytes; the others are the typed
 * repeated fields (packed or not) of TensorProto.
 */
export type InlineEncoding = 'raw' | 'float' | 'int32' | 'int64' | 'double' | 'uint64' | 'string' | 'mixed';

export interface TensorRef {
  name: string;
  dtype: DTypeCode;
  dims: readonly number[];
  data: DataLocation;
}

export interface SparseTensorRef {
  values: TensorRef;
  indices: TensorRef;
  dims: readonly number[];
}

export type Attribute =
  | { kind: 'float'; value: number }
  | { kind: 'int'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'tensor'; value: TensorRef }
  | { kind: 'graph'; value: Graph }
  | { kind: 'sparse_tensor'; value: SparseTensorRef }
  | { kind: 'type_proto'; value: ValueType }
  | { kind: 'floats'; value: number[] }
  | { kind: 'ints'; value: number[] }
  | { kind: 'strings'; value: string[] }
  | { kind: 'tensors'; value: TensorRef[] }
  | { kind: 'graphs'; value: Graph[] }
  | { kind: 'sparse_tensors'; value: SparseTensorRef[] }
  | { kind: 'type_protos'; value: ValueType[] }
  /** A reference to an attribute of the enclosing function (`ref_attr_name`). */
  | { kind: 'ref'; value: string };

export interface Node {
  name: string;
  opType: string;
  /** '' is the default ONNX domain ('ai.onnx' is normalised to ''). */
  domain: string;
  /** Input value names; '' marks an omitted optional input. */
  inputs: readonly string[];
  outputs: readonly string[];
  attributes: ReadonlyMap<string, Attribute>;
}

/** A value's type as declared in the file: a tensor with optional shape, or another kind. */
export type ValueType =
  | { kind: 'tensor'; dtype: DTypeCode; shape: readonly Dim[] | undefined }
  | { kind: 'sequence' | 'optional'; element: ValueType }
  | { kind: 'map' | 'sparse_tensor' | 'unknown' };

export interface ValueInfo {
  name: string;
  type: ValueType;
}

export interface Graph {
  name: string;
  nodes: readonly Node[];
  inputs: readonly ValueInfo[];
  outputs: readonly ValueInfo[];
  valueInfo: readonly ValueInfo[];
  initializers: readonly TensorRef[];
  sparseInitializers: readonly SparseTensorRef[];
}

export interface Model {
  /** Path the model was read from (messages name it). */
  path: string;
  irVersion: number;
  producerName: string;
  producerVersion: string;
  /** Opset version per domain ('' = default ONNX domain). */
  opsets: ReadonlyMap<string, number>;
  graph: Graph;
}

/** Who writes and who reads each value of a node list (`''`, an omitted input, is skipped). */
export interface ValueLinks {
  producer: ReadonlyMap<string, Node>;
  consumers: ReadonlyMap<string, readonly Node[]>;
}

export function valueLinks(nodes: readonly Node[]): ValueLinks {
  // Structure recognition and the plan's checks each ask for the same graph's links.
  const known = linksOf.get(nodes);
  if (known !== undefined) return known;
  const links = new LazyValueLinks(nodes);
  linksOf.set(nodes, links);
  return links;
}

const linksOf = new WeakMap<readonly Node[], ValueLinks>();

/** Each map built when first read: lowering a plain chain reads only the consumers. */
class LazyValueLinks implements ValueLinks {
  private producers: Map<string, Node> | undefined;
  private consumerLists: Map<string, Node[]> | undefined;
  constructor(private readonly nodes: readonly Node[]) {}

  get producer(): ReadonlyMap<string, Node> {
    if (this.producers === undefined) {
      this.producers = new Map();
      for (const node of this.nodes) for (const out of node.outputs) if (out !== '') this.producers.set(out, node);
    }
    return this.producers;
  }

  get consumers(): ReadonlyMap<string, readonly Node[]> {
    if (this.consumerLists === undefined) {
      const consumers = new Map<string, Node[]>();
      for (const node of this.nodes) {
        // Few inputs (almost every node): no Set to drop duplicates; a wide Concat gets one.
        const inputs = node.inputs.length <= 8 ? node.inputs : [...new Set(node.inputs)];
        for (let i = 0; i < inputs.length; i++) {
          const input = inputs[i] ?? '';
          // A value read twice by one node lists the node once.
          if (input === '' || inputs.indexOf(input) < i) continue;
          const list = consumers.get(input);
          if (list) list.push(node);
          else consumers.set(input, [node]);
        }
      }
      this.consumerLists = consumers;
    }
    return this.consumerLists;
  }
}
