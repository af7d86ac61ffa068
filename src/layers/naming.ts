/**
 * Layer names: the weight's name when it is meaningful ("fc.weight" -> "fc"), else the PyTorch
 * module path recovered from the node name ("/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1").
 * Names keep to [A-Za-z0-9_.-] (ASTRA-sim puts them in node names) and are made unique.
 */
import { NameIndex } from '../shape/value-table.js';

function sanitise(name: string): string {
  return isClean(name) ? name : name.replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[_.]+|[_.]+$/g, '');
}

/** Whether sanitising would leave `name` as it is (most names): only [A-Za-z0-9_.-], no '_' or '.' at either end. */
function isClean(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const alphanumeric = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (alphanumeric || c === 45) continue; // '-'
    if ((c === 95 || c === 46) && i > 0 && i < name.length - 1) continue; // '_' '.' inside
    return false;
  }
  return true;
}

/** /^[0-9]+$/ without a regex run per layer. */
function isAllDigits(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** "fc.weight" -> "fc"; exporter-generated names ("onnx::Conv_497") are not meaningful. */
export function nameFromWeight(weight: string | undefined): string | undefined {
  if (weight === undefined || weight.startsWith('onnx::') || isAllDigits(weight)) return undefined;
  // The common "x.weight" without the regex (a '.weight_ih'/'.weight_hh' earlier would match first).
  const plain = weight.endsWith('.weight') && !weight.includes('.weight_ih') && !weight.includes('.weight_hh');
  const base = plain ? weight.slice(0, -'.weight'.length) : weight.replace(/\.(weight|weight_ih.*|weight_hh.*|W|kernel)$/, '');
  const s = sanitise(base);
  return s === '' ? undefined : s;
}

/** Module path and op part of a node name like "/encoder/layers.0/self_attn/MatMul_1". */
export function splitNodeName(nodeName: string, opType: string): { path: string; opPart: string } {
  return { path: nodePath(nodeName, opType), opPart: opPartOf(nodeName, opType) };
}

/** End of a name's last non-empty '/'-separated part (trailing slashes left out). */
function lastPartEnd(name: string): number {
  let end = name.length;
  while (end > 0 && name.charCodeAt(end - 1) === 47) end--;
  return end;
}

/** Start of the part that ends at `end`. */
function partStart(name: string, end: number): number {
  let start = end;
  while (start > 0 && name.charCodeAt(start - 1) !== 47) start--;
  return start;
}

/** The sanitised op part of a node name: its last part when that is the op ("MatMul_1" of a MatMul), else the op type. */
function opPartOf(nodeName: string, opType: string): string {
  const end = lastPartEnd(nodeName);
  const start = partStart(nodeName, end);
  return sanitise(end > start && isOpPart(nodeName, start, end, opType) ? nodeName.slice(start, end) : opType);
}

/**
 * The sanitised module path of a node name: the '/'-separated parts, empty ones left out, the last
 * one dropped when it is the op ("MatMul_1" of a MatMul), a part that repeats its parent's path
 * ("layer1/layer1.0") kept instead of the parent, joined by '.'. Read in place, without an array
 * of parts per layer.
 */
function nodePath(nodeName: string, opType: string): string {
  const lastEnd = lastPartEnd(nodeName);
  const lastStart = partStart(nodeName, lastEnd);
  const dropsLast = lastEnd > lastStart && isOpPart(nodeName, lastStart, lastEnd, opType);
  const pathEnd = dropsLast ? lastStart : nodeName.length;
  // Kept parts before the last kept one, joined with a '.' after each; the last kept one [keptStart, keptEnd).
  let head = '';
  let keptStart = -1;
  let keptEnd = -1;
  let start = 0;
  for (let i = 0; i <= pathEnd; i++) {
    if (i < pathEnd && nodeName.charCodeAt(i) !== 47) continue;
    if (i > start) {
      const length = keptEnd - keptStart;
      // PyTorch repeats the parent path: layer1/layer1.0 -> keep the longer one.
      if (keptStart >= 0 && i - start > length && nodeName.charCodeAt(start + length) === 46 && sameChars(nodeName, start, keptStart, length)) {
        keptStart = start;
        keptEnd = i;
      } else {
        if (keptStart >= 0) head += `${nodeName.slice(keptStart, keptEnd)}.`;
        keptStart = start;
        keptEnd = i;
      }
    }
    start = i + 1;
  }
  if (keptStart < 0) return sanitise('');
  const last = nodeName.slice(keptStart, keptEnd);
  return sanitise(head === '' ? last : head + last);
}

/** Whether `s[from, to)` is `opType`, with or without a `_<digits>` suffix ("MatMul_1" of a MatMul). */
function isOpPart(s: string, from: number, to: number, opType: string): boolean {
  let i = to;
  while (i > from && s.charCodeAt(i - 1) >= 48 && s.charCodeAt(i - 1) <= 57) i--;
  const end = i < to && i > from && s.charCodeAt(i - 1) === 95 ? i - 1 : to;
  return end - from === opType.length && s.startsWith(opType, from);
}

/** Whether `s` holds the same `length` characters at `a` and at `b`. */
function sameChars(s: string, a: number, b: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (s.charCodeAt(a + k) !== s.charCodeAt(b + k)) return false;
  return true;
}

/**
 * `a.b` as one flat string. V8 makes a concatenation of 13 characters or more a rope (a 32-byte
 * pair pointing at both parts), and hashing it into the namer's set adds a flat copy: a long
 * name kept so costs three strings. A join writes the flat string once (on the 100k-node chain,
 * 45k names of the Relu layers: ~1.5 MB less kept).
 */
export function dotted(a: string, b: string): string {
  return a.length + b.length < 12 ? `${a}.${b}` : [a, b].join('.');
}

export class LayerNamer {
  /**
   * The names taken so far: shape/'s seeded open-addressing index (a Set of 100k fresh names cost
   * ~110 ms of the 100k-node chain's lowering; the index is sized once, and names crafted to
   * collide send it to a Map instead of a quadratic probe).
   */
  private readonly used = new NameIndex();

  /** `expectedLayers`: how many names to size the index for (a graph's node count). */
  constructor(expectedLayers = 8) {
    this.used.reserve(expectedLayers);
  }

  /**
   * `weightless` layers (attention products) keep their op in the name: blocks.0.attn.MatMul_1.
   * A `part` names one of several layers of a fused node: enc.attn.scores.
   */
  name(nodeName: string, opType: string, weight: string | undefined, weightless = false, part?: string): string {
    const fromWeight = nameFromWeight(weight);
    // The weight's name, when free, is the name: no need to parse the node's.
    if (fromWeight !== undefined && this.take(fromWeight)) return fromWeight;
    const path = nodePath(nodeName, opType);
    const opPart = opPartOf(nodeName, opType);
    const qualified = path === '' ? opPart : dotted(path, opPart);
    if (part !== undefined) return this.first(fromWeight, path === '' ? part : dotted(path, part), dotted(qualified, part));
    return this.first(fromWeight, weightless ? undefined : path === '' ? undefined : path, qualified);
  }

  /** The first unused candidate (undefined and '' are none), else the last one with a counter. */
  private first(a: string | undefined, b: string | undefined, c: string): string {
    let base = 'layer';
    if (a !== undefined && a !== '') {
      if (this.take(a)) return a;
      base = a;
    }
    if (b !== undefined && b !== '') {
      if (this.take(b)) return b;
      base = b;
    }
    if (c !== '') {
      if (this.take(c)) return c;
      base = c;
    }
    for (let i = 2; ; i++) {
      const candidate = `${base}_${i}`;
      if (this.take(candidate)) return candidate;
    }
  }

  /** Claims `name` when it is unused (one hash lookup). */
  private take(name: string): boolean {
    const taken = this.used.size;
    return this.used.intern(name) === taken;
  }
}
