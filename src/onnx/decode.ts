/**
 * Decoders for the ONNX messages modtrans needs, one function per message over a `Wire`.
 * Unknown fields are skipped by wire type. Tensor payloads are never read: their span is recorded.
 * Field numbers are those of onnx/onnx.proto3.
 */
import { defined } from '../errors.js';
import type { Attribute, DataLocation, Graph, InlineEncoding, Node, SparseTensorRef, TensorRef, ValueInfo, ValueType } from '../ir/graph.js';
import { Sym, type Dim } from '../ir/dim.js';
import { checkDims } from './checks.js';
import { WireError, WireType, type Wire } from './wire.js';

/** Graphs nest (If/Loop bodies); this bounds recursion on hostile files. */
const MAX_GRAPH_DEPTH = 64;
/** Rank limit: no real tensor has more dims; stops a hostile packed field from growing an array. */
const MAX_RANK = 64;
/** Elements of one repeated attribute field (ints, floats): bounds memory on hostile files. */
const MAX_REPEATED_ELEMENTS = 1 << 20;

export interface ModelFields {
  irVersion: number;
  producerName: string;
  producerVersion: string;
  opsets: Map<string, number>;
  graph: Graph | undefined;
}

export function decodeModel(w: Wire, end: number): ModelFields {
  const out: ModelFields = { irVersion: 0, producerName: '', producerVersion: '', opsets: new Map(), graph: undefined };
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.VARINT) out.irVersion = w.int64();
    else if (field === 2 && wt === WireType.LEN) out.producerName = w.string();
    else if (field === 3 && wt === WireType.LEN) out.producerVersion = w.string();
    else if (field === 7 && wt === WireType.LEN) out.graph = decodeGraph(w, w.lengthEnd(), 0);
    else if (field === 8 && wt === WireType.LEN) {
      const [domain, version] = decodeOpset(w, w.lengthEnd());
      out.opsets.set(normaliseDomain(domain), version);
    } else w.skipType(wt);
  }
  checkEnd(w, end);
  return out;
}

function normaliseDomain(domain: string): string {
  return domain === 'ai.onnx' ? '' : domain;
}

function checkEnd(w: Wire, end: number): void {
  if (w.pos !== end) throw new WireError('a field runs past the end of its message', w.pos);
}

/**
 * A message of a string (field 1) and one value (field 2), the shape of OperatorSetIdProto
 * (domain, version) and StringStringEntryProto (key, value); a field of another wire type is skipped.
 */
function decodeKeyValue<T>(w: Wire, end: number, valueWireType: number, readValue: () => T, absent: T): [string, T] {
  let key = '';
  let value = absent;
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LEN) key = w.string();
    else if (field === 2 && wt === valueWireType) value = readValue();
    else w.skipType(wt);
  }
  checkEnd(w, end);
  return [key, value];
}

const decodeOpset = (w: Wire, end: number): [string, number] => decodeKeyValue(w, end, WireType.VARINT, () => w.int64(), 0);
const decodeStringPair = (w: Wire, end: number): [string, string] => decodeKeyValue(w, end, WireType.LEN, () => w.string(), '');

/** Tags of a node (GraphProto field 1) and of an initializer (field 5), both length-delimited. */
const NODE_TAG = (1 << 3) | WireType.LEN;
const INITIALIZER_TAG = (5 << 3) | WireType.LEN;
/** What a run returns when its message ended: no next tag. */
const NO_TAG = -1;

/**
 * Node inputs no node before them writes, in file order; `nextRead`: the first not yet named by an
 * initializer. Exporters write the initializers after the nodes, in the order nodes read them:
 * each is matched against the next few reads and, named alike, is that string.
 */
interface OutsideReads {
  names: string[];
  nextRead: number;
}

function decodeGraph(w: Wire, end: number, depth: number): Graph {
  if (depth > MAX_GRAPH_DEPTH) throw new WireError(`graphs nested more than ${MAX_GRAPH_DEPTH} deep`, w.pos);
  const nodes: Node[] = [];
  const inputs: ValueInfo[] = [];
  const outputs: ValueInfo[] = [];
  const valueInfo: ValueInfo[] = [];
  const initializers: TensorRef[] = [];
  const sparseInitializers: SparseTensorRef[] = [];
  let name = '';
  const reads: OutsideReads = { names: [], nextRead: 0 };
  // Nodes and initializers come in long runs: each run is decoded by a loop of its own, which
  // returns the tag after it. One loop for every field deoptimized twice on the 100k-node chain
  // (a field first met after the nodes), each time recompiling the whole loop.
  let tag = w.pos < end ? w.uint32() : NO_TAG;
  while (tag !== NO_TAG) {
    const field = tag >>> 3;
    const wt = tag & 7;
    if (tag === NODE_TAG) {
      tag = decodeNodeRun(w, end, depth, nodes, reads);
      continue;
    }
    if (tag === INITIALIZER_TAG) {
      tag = decodeInitializerRun(w, end, initializers, reads);
      continue;
    }
    if (wt !== WireType.LEN) w.skipType(wt);
    else if (field === 2) name = w.name();
    else if (field === 11) inputs.push(decodeValueInfo(w, w.lengthEnd()));
    else if (field === 12) outputs.push(decodeValueInfo(w, w.lengthEnd()));
    else if (field === 13) valueInfo.push(decodeValueInfo(w, w.lengthEnd()));
    else if (field === 15) sparseInitializers.push(decodeSparseTensor(w, w.lengthEnd()));
    else w.skipType(wt);
    tag = w.pos < end ? w.uint32() : NO_TAG;
  }
  checkEnd(w, end);
  return { name, nodes, inputs, outputs, valueInfo, initializers, sparseInitializers };
}

/** Decodes the node whose tag was just read and the nodes right after it; returns the next other tag. */
function decodeNodeRun(w: Wire, end: number, depth: number, nodes: Node[], reads: OutsideReads): number {
  for (;;) {
    const previousOutputs = nodes[nodes.length - 1]?.outputs;
    const node = decodeNode(w, w.lengthEnd(), depth, previousOutputs);
    nodes.push(node);
    if (node.inputs !== previousOutputs) noteOutsideReads(node.inputs, previousOutputs, reads.names);
    if (w.pos >= end) return NO_TAG;
    const tag = w.uint32();
    if (tag !== NODE_TAG) return tag;
  }
}

/** Decodes the initializer whose tag was just read and those right after it; returns the next other tag. */
function decodeInitializerRun(w: Wire, end: number, initializers: TensorRef[], reads: OutsideReads): number {
  const names = reads.names;
  let nextRead = reads.nextRead;
  for (;;) {
    const readsTo = Math.min(names.length, nextRead + INITIALIZER_MATCH_WINDOW);
    const tensor = decodeTensor(w, w.lengthEnd(), names, nextRead, readsTo);
    for (let k = nextRead; k < readsTo; k++) {
      if (names[k] === tensor.name) {
        nextRead = k + 1;
        break;
      }
    }
    initializers.push(tensor);
    const tag = w.pos < end ? w.uint32() : NO_TAG;
    if (tag !== INITIALIZER_TAG) {
      reads.nextRead = nextRead;
      return tag;
    }
  }
}

/** Reads after the last one an initializer named that the next initializer's name is matched against. */
const INITIALIZER_MATCH_WINDOW = 4;

/** Appends the inputs the node before does not write (''s aside) to `into`. */
function noteOutsideReads(inputs: readonly string[], previousOutputs: readonly string[] | undefined, into: string[]): void {
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i] ?? '';
    if (input !== '' && (previousOutputs === undefined || !previousOutputs.includes(input))) into.push(input);
  }
}

/**
 * A retained array built by push, copied to its exact length: V8 gives a pushed-to array room for
 * 17 elements, ~150 bytes where a node's two inputs need 16 (40 MB of a 100k-node graph's 87 MB).
 */
function exact<T>(items: T[]): T[] {
  return items.slice();
}

/**
 * A node's name list of `count` names: the first two in `first` and `second`, any others in
 * `more`. Literal arrays have their exact length, and most nodes have one or two names a list: no
 * pushed-to array to copy and drop per list.
 */
function nameList(count: number, first: string, second: string, more: string[] | undefined): string[] {
  if (count === 1) return [first];
  if (count === 2) return [first, second];
  if (count === 0) return [];
  return [first, second, ...(more ?? [])];
}

/** Shared by every node without attributes (most of a large graph's): one Map less per node. */
const NO_ATTRIBUTES: ReadonlyMap<string, Attribute> = new Map();

/**
 * Op types met so far, each one string (a large graph repeats a handful): a node's op type is
 * matched against them byte by byte, no string made and dropped per node.
 */
const knownOpTypes: string[] = [];

/** Op types kept for matching (a file of random op types must not make each node scan more). */
const MAX_KNOWN_OP_TYPES = 64;

function opTypeName(w: Wire): string {
  const name = w.name(knownOpTypes);
  if (knownOpTypes.length < MAX_KNOWN_OP_TYPES && !knownOpTypes.includes(name)) knownOpTypes.push(name);
  return name;
}

/**
 * `previousOutputs`: the outputs of the node before it in the file. An input naming one of them
 * (most inputs of a chain of ops) is that string: one string per value instead of a copy per
 * reader, and the value table's matching of a node's inputs to the outputs before it compares
 * pointers. A node whose one input is the one output before it (an activation after its GEMM)
 * shares that list (lists are never changed).
 */
function decodeNode(w: Wire, end: number, depth: number, previousOutputs: readonly string[] | undefined): Node {
  let inputCount = 0;
  let input0 = '';
  let input1 = '';
  let moreInputs: string[] | undefined;
  let outputCount = 0;
  let output0 = '';
  let output1 = '';
  let moreOutputs: string[] | undefined;
  let attributes: Map<string, Attribute> | undefined;
  let name = '';
  let opType = '';
  let domain = '';
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (wt !== WireType.LEN) {
      w.skipType(wt);
      continue;
    }
    switch (field) {
      case 1: {
        const input = w.name(previousOutputs);
        if (inputCount === 0) input0 = input;
        else if (inputCount === 1) input1 = input;
        else if (moreInputs === undefined) moreInputs = [input];
        else moreInputs.push(input);
        inputCount++;
        break;
      }
      case 2: {
        const output = w.name();
        if (outputCount === 0) output0 = output;
        else if (outputCount === 1) output1 = output;
        else if (moreOutputs === undefined) moreOutputs = [output];
        else moreOutputs.push(output);
        outputCount++;
        break;
      }
      case 3: name = w.name(); break;
      case 4: opType = opTypeName(w); break;
      case 7: domain = normaliseDomain(w.name()); break;
      case 5: {
        attributes ??= new Map();
        decodeAttribute(w, w.lengthEnd(), depth, attributes);
        break;
      }
      default: w.skipType(wt);
    }
  }
  checkEnd(w, end);
  const inputs = inputCount === 1 && previousOutputs !== undefined && previousOutputs.length === 1 && previousOutputs[0] === input0
    ? previousOutputs
    : nameList(inputCount, input0, input1, moreInputs);
  return { name, opType, domain, inputs, outputs: nameList(outputCount, output0, output1, moreOutputs), attributes: attributes ?? NO_ATTRIBUTES };
}

const ATTR_KIND_BY_TYPE: Record<number, Attribute['kind']> = {
  1: 'float', 2: 'int', 3: 'string', 4: 'tensor', 5: 'graph', 6: 'floats', 7: 'ints', 8: 'strings',
  9: 'tensors', 10: 'graphs', 11: 'sparse_tensor', 12: 'sparse_tensors', 13: 'type_proto', 14: 'type_protos',
};

function tooManyElements(w: Wire, max: number): never {
  throw new WireError(`more than ${max} elements in a repeated field`, w.pos);
}

/**
 * Reads a repeated field of floats (fixed 32-bit) or of varint int64s (dims, ints) that may be
 * packed (LEN) or not (one value per tag); a field of another wire type is skipped. The element
 * kind is a flag, not a reader closure: no function object per field read.
 */
function readRepeated(w: Wire, wt: number, floats: boolean, into: number[], max: number): void {
  if (wt === WireType.LEN) {
    const end = w.lengthEnd();
    while (w.pos < end) {
      if (into.length >= max) tooManyElements(w, max);
      into.push(floats ? w.float() : w.int64());
    }
    checkEnd(w, end);
  } else if (wt === (floats ? WireType.I32 : WireType.VARINT)) {
    if (into.length >= max) tooManyElements(w, max);
    into.push(floats ? w.float() : w.int64());
  } else w.skipType(wt); // a wrong wire type: ignored like any unknown field
}

/**
 * `readRepeated` for varints into `into[count ..)` (a reused scratch list): returns the new count.
 */
function readInts(w: Wire, wt: number, into: number[], count: number, max: number): number {
  let n = count;
  if (wt === WireType.LEN) {
    const end = w.lengthEnd();
    while (w.pos < end) {
      if (n >= max) tooManyElements(w, max);
      into[n++] = w.int64();
    }
    checkEnd(w, end);
  } else if (wt === WireType.VARINT) {
    if (n >= max) tooManyElements(w, max);
    into[n++] = w.int64();
  } else w.skipType(wt); // a wrong wire type: ignored like any unknown field
  return n;
}

/** Decodes one AttributeProto into `into` (by its name; no name-value pair to destructure per attribute). */
function decodeAttribute(w: Wire, end: number, depth: number, into: Map<string, Attribute>): void {
  let name = '';
  let type = 0;
  let refAttrName = '';
  const floats: number[] = [];
  const ints: number[] = [];
  const strings: string[] = [];
  const tensors: TensorRef[] = [];
  const graphs: Graph[] = [];
  const sparse: SparseTensorRef[] = [];
  const types: ValueType[] = [];
  let f: number | undefined;
  let i: number | undefined;
  let s: string | undefined;
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    // Fields other than these scalars are length-delimited; a wrong wire type is skipped.
    if (wt !== WireType.LEN && field !== 2 && field !== 3 && field !== 7 && field !== 8 && field !== 20) {
      w.skipType(wt);
      continue;
    }
    switch (field) {
      case 1: name = w.name(); break;
      case 20: if (wt === WireType.VARINT) type = w.uint32(); else w.skipType(wt); break;
      case 21: refAttrName = w.string(); break;
      case 2: if (wt === WireType.I32) f = w.float(); else w.skipType(wt); break;
      case 3: if (wt === WireType.VARINT) i = w.int64(); else w.skipType(wt); break;
      case 4: s = w.string(); break;
      case 5: tensors.push(decodeTensor(w, w.lengthEnd())); break;
      case 6: graphs.push(decodeGraph(w, w.lengthEnd(), depth + 1)); break;
      case 7: readRepeated(w, wt, true, floats, MAX_REPEATED_ELEMENTS); break;
      case 8: readRepeated(w, wt, false, ints, MAX_REPEATED_ELEMENTS); break;
      case 9: strings.push(w.string()); break;
      case 10: tensors.push(decodeTensor(w, w.lengthEnd())); break;
      case 11: graphs.push(decodeGraph(w, w.lengthEnd(), depth + 1)); break;
      case 14: case 15: types.push(nameAnonymousDims(decodeType(w, w.lengthEnd()), name)); break;
      case 22: case 23: sparse.push(decodeSparseTensor(w, w.lengthEnd())); break;
      default: w.skipType(wt);
    }
  }
  checkEnd(w, end);
  if (refAttrName !== '') {
    into.set(name, { kind: 'ref', value: refAttrName });
    return;
  }
  // IR < 3 files may omit `type`: infer it from the one field that is set.
  let kind = ATTR_KIND_BY_TYPE[type];
  if (kind === undefined) {
    kind = f !== undefined ? 'float' : i !== undefined ? 'int' : s !== undefined ? 'string'
      : tensors.length > 0 ? 'tensor' : graphs.length > 0 ? 'graph' : floats.length > 0 ? 'floats'
      : ints.length > 0 ? 'ints' : strings.length > 0 ? 'strings' : 'ints';
  }
  const attr = buildAttribute(kind, { f, i, s, floats, ints, strings, tensors, graphs, sparse, types });
  if (attr === undefined) throw new WireError(`attribute '${name}' declares type ${type} but carries no such value`, w.pos);
  into.set(name, attr);
}

interface AttrFields {
  f: number | undefined; i: number | undefined; s: string | undefined; floats: number[]; ints: number[];
  strings: string[]; tensors: TensorRef[]; graphs: Graph[]; sparse: SparseTensorRef[]; types: ValueType[];
}

function buildAttribute(kind: Attribute['kind'], a: AttrFields): Attribute | undefined {
  switch (kind) {
    case 'float': return { kind, value: a.f ?? 0 };
    case 'int': return { kind, value: a.i ?? 0 };
    case 'string': return { kind, value: a.s ?? '' };
    case 'tensor': return a.tensors[0] && { kind, value: a.tensors[0] };
    case 'graph': return a.graphs[0] && { kind, value: a.graphs[0] };
    case 'sparse_tensor': return a.sparse[0] && { kind, value: a.sparse[0] };
    case 'type_proto': return a.types[0] && { kind, value: a.types[0] };
    case 'floats': return { kind, value: a.floats };
    case 'ints': return { kind, value: a.ints };
    case 'strings': return { kind, value: a.strings };
    case 'tensors': return { kind, value: a.tensors };
    case 'graphs': return { kind, value: a.graphs };
    case 'sparse_tensors': return { kind, value: a.sparse };
    case 'type_protos': return { kind, value: a.types };
    default: return undefined;
  }
}

const INLINE_FIELDS: Record<number, InlineEncoding> = { 4: 'float', 5: 'int32', 6: 'string', 7: 'int64', 9: 'raw', 10: 'double', 11: 'uint64' };

/** TensorProto: dims and dtype decoded; the payload's span recorded, never read. */
const MIXED: DataLocation = { kind: 'empty' };

/**
 * Dims of the tensor being decoded, `[0 .. dimCount)` (one list for all: 50k initializers, 50k
 * lists less). Never truncated: setting `length = 0` frees its backing store, and the next push
 * allocates a new one (7 MB on the 100k-node chain).
 */
const scratchDims: number[] = [];

/** `knownNames[knownFrom .. knownTo)`: names the tensor likely has (it is then that string). */
export function decodeTensor(w: Wire, end: number, knownNames?: readonly string[], knownFrom?: number, knownTo?: number): TensorRef {
  const messageStart = w.pos;
  // Read into the shared scratch list (a tensor's fields hold no tensor): tensorDims keeps a copy.
  const dims = scratchDims;
  let dimCount = 0;
  let dtype = 0;
  let name = '';
  let inline: DataLocation | undefined;
  let externalMode = false;
  // Created for external-data tensors only (most initializers of a large graph have none).
  let external: Map<string, string> | undefined;
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1) dimCount = readInts(w, wt, dims, dimCount, MAX_RANK);
    else if (field === 2 && wt === WireType.VARINT) dtype = w.uint32();
    else if (field === 8 && wt === WireType.LEN) name = w.name(knownNames, knownFrom, knownTo);
    else if (field === 14 && wt === WireType.VARINT) externalMode = w.uint32() === 1;
    else if (field === 13 && wt === WireType.LEN) {
      const [k, v] = decodeStringPair(w, w.lengthEnd());
      external ??= new Map();
      external.set(k, v);
    } else if (field in INLINE_FIELDS) {
      if (wt === WireType.LEN) {
        const fieldEnd = w.lengthEnd();
        inline = inline === undefined
          ? { kind: 'inline', encoding: defined(INLINE_FIELDS[field], `inline encoding of TensorProto field ${field}`), offset: w.pos, byteLength: fieldEnd - w.pos }
          : MIXED;
        w.skip(fieldEnd - w.pos);
      } else {
        w.skipType(wt);
        inline = MIXED;
      }
    } else w.skipType(wt);
  }
  checkEnd(w, end);
  checkDims(dims, 'tensor', name, messageStart, dimCount);
  if (inline === MIXED) {
    // Elements split over several tags (string_data, unpacked numbers): re-decode the message.
    inline = { kind: 'inline', encoding: 'mixed', offset: messageStart, byteLength: end - messageStart };
  }
  let data: DataLocation = inline ?? NO_DATA;
  if (externalMode || external !== undefined) {
    const location = external?.get('location');
    if (location === undefined) throw new WireError(`tensor '${name}' has external data without a location`, w.pos);
    const offset = Number(external?.get('offset') ?? '0');
    const lengthText = external?.get('length');
    const length = lengthText === undefined ? undefined : Number(lengthText);
    if (!Number.isSafeInteger(offset) || offset < 0 || (length !== undefined && (!Number.isSafeInteger(length) || length < 0))) {
      throw new WireError(`tensor '${name}' has an invalid external data offset or length`, w.pos);
    }
    data = { kind: 'external', location, offset, length };
  }
  return { name, dtype, dims: tensorDims(dims, dimCount), data };
}

/** Every tensor without data (a graph-only export's weights) shares this location. */
const NO_DATA: DataLocation = Object.freeze({ kind: 'empty' });

/**
 * The last few distinct dims lists of tensors, shared (frozen) by the tensors after them with the
 * same dims: a model's weights repeat a few shapes block after block, and a 100k-node graph's
 * 50k weights would otherwise hold 50k equal arrays.
 */
const recentDims: (readonly number[])[] = [];
const RECENT_DIMS = 8;

function tensorDims(dims: readonly number[], count: number): readonly number[] {
  for (let k = 0; k < recentDims.length; k++) {
    const known = recentDims[k] ?? [];
    if (known.length !== count) continue;
    let same = true;
    for (let i = 0; i < count && same; i++) same = known[i] === dims[i];
    if (same) return known;
  }
  const kept = Object.freeze(dims.slice(0, count));
  if (recentDims.length === RECENT_DIMS) recentDims.pop();
  recentDims.unshift(kept);
  return kept;
}

function decodeSparseTensor(w: Wire, end: number): SparseTensorRef {
  let values: TensorRef | undefined;
  let indices: TensorRef | undefined;
  const dims: number[] = [];
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LEN) values = decodeTensor(w, w.lengthEnd());
    else if (field === 2 && wt === WireType.LEN) indices = decodeTensor(w, w.lengthEnd());
    else if (field === 3) readRepeated(w, wt, false, dims, MAX_RANK);
    else w.skipType(wt);
  }
  checkEnd(w, end);
  checkDims(dims, 'sparse tensor', values?.name ?? '', end);
  const empty: TensorRef = { name: '', dtype: 0, dims: [], data: { kind: 'empty' } };
  return { values: values ?? empty, indices: indices ?? empty, dims };
}

function decodeValueInfo(w: Wire, end: number): ValueInfo {
  let name = '';
  let type: ValueType = { kind: 'unknown' };
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LEN) name = w.name();
    else if (field === 2 && wt === WireType.LEN) type = decodeType(w, w.lengthEnd());
    else w.skipType(wt);
  }
  checkEnd(w, end);
  if (type.kind === 'tensor' && type.shape !== undefined) checkDims(type.shape, 'value', name, end);
  return { name, type: nameAnonymousDims(type, name) };
}

/** Sequence and optional types nest; this bounds recursion on hostile files. */
const MAX_TYPE_DEPTH = 16;

function decodeType(w: Wire, end: number, depth = 0): ValueType {
  if (depth > MAX_TYPE_DEPTH) throw new WireError(`value types nested more than ${MAX_TYPE_DEPTH} deep`, w.pos);
  let type: ValueType = { kind: 'unknown' };
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LEN) type = decodeTensorType(w, w.lengthEnd());
    else if (field === 4 && wt === WireType.LEN) type = { kind: 'sequence', element: decodeElementType(w, w.lengthEnd(), depth) };
    else if (field === 5 && wt === WireType.LEN) { w.skipType(wt); type = { kind: 'map' }; }
    else if (field === 8 && wt === WireType.LEN) { w.skipType(wt); type = { kind: 'sparse_tensor' }; }
    else if (field === 9 && wt === WireType.LEN) type = { kind: 'optional', element: decodeElementType(w, w.lengthEnd(), depth) };
    else w.skipType(wt);
  }
  checkEnd(w, end);
  return type;
}

/** TypeProto.Sequence and TypeProto.Optional: field 1 is the element's TypeProto. */
function decodeElementType(w: Wire, end: number, depth: number): ValueType {
  let element: ValueType = { kind: 'unknown' };
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LEN) element = decodeType(w, w.lengthEnd(), depth + 1);
    else w.skipType(wt);
  }
  checkEnd(w, end);
  return element;
}

function decodeTensorType(w: Wire, end: number): ValueType {
  let dtype = 0;
  let shape: Dim[] | undefined;
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.VARINT) dtype = w.uint32();
    else if (field === 2 && wt === WireType.LEN) shape = decodeShape(w, w.lengthEnd());
    else w.skipType(wt);
  }
  checkEnd(w, end);
  return { kind: 'tensor', dtype, shape };
}

/** Stands for a dim with neither value nor name until its value's name is known. */
const ANONYMOUS_DIM = Sym.atom('\u0000anonymous');

/**
 * Dims with neither dim_value nor dim_param get stable names from their value and axis
 * (`x.1` = axis 1 of value 'x'), so messages can show them and `--dim x.1=N` can bind them.
 */
function nameAnonymousDims(type: ValueType, name: string): ValueType {
  if (type.kind === 'sequence' || type.kind === 'optional') return { ...type, element: nameAnonymousDims(type.element, name) };
  if (type.kind !== 'tensor' || type.shape === undefined || !type.shape.includes(ANONYMOUS_DIM)) return type;
  return { ...type, shape: type.shape.map((d, axis) => (d === ANONYMOUS_DIM ? Sym.atom(`${name || 'unnamed'}.${axis}`) : d)) };
}

function decodeShape(w: Wire, end: number): Dim[] {
  const dims: Dim[] = [];
  while (w.pos < end) {
    const tag = w.uint32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LEN) {
      if (dims.length >= MAX_RANK) throw new WireError(`a shape with more than ${MAX_RANK} dims`, w.pos);
      const dimEnd = w.lengthEnd();
      let value: number | undefined;
      let param: string | undefined;
      while (w.pos < dimEnd) {
        const tag = w.uint32();
    const f = tag >>> 3;
    const t = tag & 7;
        if (f === 1 && t === WireType.VARINT) value = w.int64();
        else if (f === 2 && t === WireType.LEN) param = w.name();
        else w.skipType(t);
      }
      checkEnd(w, dimEnd);
      // A dim with neither value nor name is named after its value once that is known.
      dims.push(value !== undefined ? value : param !== undefined && param !== '' ? Sym.atom(param) : ANONYMOUS_DIM);
    } else w.skipType(wt);
  }
  checkEnd(w, end);
  return exact(dims);
}
