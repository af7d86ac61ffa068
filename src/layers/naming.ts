/**
 * Layer names: the weight's name when it is meaningful ("fc.weight" -> "fc"), else the PyTorch
 * module path recovered from the node name ("/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1").
 * Names keep to [A-Za-z0-9_.-] (ASTRA-sim puts them in node names) and are made unique.
 */

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

/** `part` without a trailing `_<digits>` ("MatMul_1" -> "MatMul"). */
function withoutIndexSuffix(part: string): string {
  let i = part.length;
  while (i > 0 && part.charCodeAt(i - 1) >= 48 && part.charCodeAt(i - 1) <= 57) i--;
  return i < part.length && i > 0 && part.charCodeAt(i - 1) === 95 ? part.slice(0, i - 1) : part;
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
  const parts = nonEmptyParts(nodeName);
  let opPart = opType;
  const lastPart = parts[parts.length - 1];
  if (lastPart !== undefined && withoutIndexSuffix(lastPart) === opType) {
    parts.pop();
    opPart = lastPart;
  }
  // PyTorch repeats the parent path: layer1/layer1.0 -> keep the longer one.
  const kept: string[] = [];
  for (const p of parts) {
    const prev = kept[kept.length - 1];
    if (prev !== undefined && p.length > prev.length && p.charCodeAt(prev.length) === 46 && p.startsWith(prev)) kept[kept.length - 1] = p;
    else kept.push(p);
  }
  return { path: sanitise(kept.length === 1 ? (kept[0] ?? '') : kept.join('.')), opPart: sanitise(opPart) };
}

/** The '/'-separated parts of a name, empty ones left out (as split + filter, with one array). */
function nonEmptyParts(name: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i <= name.length; i++) {
    if (i < name.length && name.charCodeAt(i) !== 47) continue;
    if (i > start) parts.push(name.slice(start, i));
    start = i + 1;
  }
  return parts;
}

export class LayerNamer {
  private readonly used = new Set<string>();

  /**
   * `weightless` layers (attention products) keep their op in the name: blocks.0.attn.MatMul_1.
   * A `part` names one of several layers of a fused node: enc.attn.scores.
   */
  name(nodeName: string, opType: string, weight: string | undefined, weightless = false, part?: string): string {
    const fromWeight = nameFromWeight(weight);
    // The weight's name, when free, is the name: no need to parse the node's.
    if (fromWeight !== undefined && !this.used.has(fromWeight)) {
      this.used.add(fromWeight);
      return fromWeight;
    }
    const { path, opPart } = splitNodeName(nodeName, opType);
    const qualified = path === '' ? opPart : `${path}.${opPart}`;
    if (part !== undefined) return this.first([fromWeight, path === '' ? part : `${path}.${part}`, `${qualified}.${part}`]);
    return this.first([fromWeight, weightless ? undefined : path === '' ? undefined : path, qualified]);
  }

  /** The first unused candidate, else the last one with a counter. */
  private first(options: (string | undefined)[]): string {
    let base = 'layer';
    for (const c of options) {
      if (c === undefined || c === '') continue;
      if (!this.used.has(c)) {
        this.used.add(c);
        return c;
      }
      base = c;
    }
    for (let i = 2; ; i++) {
      const c = `${base}_${i}`;
      if (!this.used.has(c)) {
        this.used.add(c);
        return c;
      }
    }
  }
}
