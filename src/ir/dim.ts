/**
 * Tensor dimensions: a number, or a symbolic expression of named dims (`batch`, `2*sequence`,
 * `batch*sequence+1`). Symbolic dims are polynomials with integer coefficients, kept canonical so
 * that equal expressions compare equal; a division that is not exact becomes an opaque atom.
 */
import { indexOutOfRange } from '../errors.js';

/**
 * Joins the atoms of a monomial key. Not '*': opaque atoms such as `floor((2*batch)/(3))` and
 * dim_params such as `batch*seq` contain '*', and a key must split back into its atoms.
 */
const ATOM_SEPARATOR = '\u0000';

/**
 * Past these sizes a polynomial becomes one opaque atom: repeated squaring of shape values (a
 * Mul chain over Shape outputs) would otherwise double the degree, and the work, at every node.
 */
const MAX_TERMS = 64;
const MAX_DEGREE = 16;
/** Longer atom names are replaced by a hash, so nested opaque atoms stay short. */
const MAX_ATOM_NAME = 200;

/** Monomial key ('' for the constant term, else sorted atom names joined by ATOM_SEPARATOR) -> coefficient. */
export class Sym {
  private text: string | undefined;
  private constructor(readonly terms: ReadonlyMap<string, number>) {}

  static atom(name: string): Sym {
    return new Sym(new Map([[name, 1]]));
  }

  /** Builds a Dim from terms (which it takes over), collapsing to a number when only the constant term remains. */
  static of(terms: Map<string, number>): Dim {
    for (const [k, v] of terms) if (v === 0) terms.delete(k);
    if (terms.size === 0) return 0;
    if (terms.size === 1) {
      const constant = terms.get('');
      if (constant !== undefined) return constant;
    }
    const sym = new Sym(terms);
    return terms.size > MAX_TERMS || [...terms.keys()].some((k) => degree(k) > MAX_DEGREE) ? opaque(`(${sym.toString()})`) : sym;
  }

  toString(): string {
    if (this.text !== undefined) return this.text;
    const terms = [...this.terms].sort(([a], [b]) => (a === '' ? 1 : b === '' ? -1 : a < b ? -1 : a > b ? 1 : 0));
    let out = '';
    for (const [key, c] of terms) {
      const magnitude = Math.abs(c);
      const monomial = key.split(ATOM_SEPARATOR).join('*');
      const body = key === '' ? String(magnitude) : magnitude === 1 ? monomial : `${magnitude}*${monomial}`;
      out += out === '' ? (c < 0 ? `-${body}` : body) : c < 0 ? `-${body}` : `+${body}`;
    }
    this.text = out;
    return out;
  }

  /** Atom names appearing in this expression (opaque atoms contribute their whole text). */
  atoms(): string[] {
    const names = new Set<string>();
    for (const key of this.terms.keys()) if (key !== '') for (const a of key.split(ATOM_SEPARATOR)) names.add(a);
    return [...names].sort();
  }
}

export type Dim = number | Sym;

function degree(key: string): number {
  if (key === '') return 0;
  let n = 1;
  for (let i = key.indexOf(ATOM_SEPARATOR); i >= 0; i = key.indexOf(ATOM_SEPARATOR, i + 1)) n++;
  return n;
}

/** An atom standing for an expression modtrans does not simplify; long texts are hashed (53-bit). */
function opaque(text: string): Sym {
  if (text.length <= MAX_ATOM_NAME) return Sym.atom(text);
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const hash = (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
  return Sym.atom(`${text.slice(0, 40)}…#${hash}`);
}

function isStaticDim(d: Dim): d is number {
  return typeof d === 'number';
}

/** Elements of a static shape (1 for a scalar). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  // Indexed: called once per initializer and value, before the loop's code is optimized.
  for (let i = 0; i < shape.length; i++) n *= shape[i] ?? 1;
  return n;
}

export function isStaticShape(shape: readonly Dim[]): shape is readonly number[] {
  return shape.every(isStaticDim);
}

/** A mutable copy of d's terms. */
function termsOf(d: Dim): Map<string, number> {
  return typeof d === 'number' ? new Map([['', d]]) : new Map(d.terms);
}

/** The key of the product of two monomials: both are sorted atom lists, so merge them. */
function mulKeys(a: string, b: string): string {
  if (a === '') return b;
  if (b === '') return a;
  const x = a.split(ATOM_SEPARATOR);
  const y = b.split(ATOM_SEPARATOR);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    const xi = x[i] ?? indexOutOfRange(i);
    const yj = y[j] ?? indexOutOfRange(j);
    if (xi <= yj) {
      out.push(xi);
      i++;
    } else {
      out.push(yj);
      j++;
    }
  }
  out.push(...x.slice(i), ...y.slice(j));
  return out.join(ATOM_SEPARATOR);
}

export function dimAdd(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if (a === 0) return b;
  if (b === 0) return a;
  const [big, small] = typeof a === 'number' || (typeof b !== 'number' && b.terms.size > a.terms.size) ? [b as Sym, a] : [a, b];
  const t = new Map(big.terms);
  if (typeof small === 'number') t.set('', (t.get('') ?? 0) + small);
  else for (const [k, v] of small.terms) t.set(k, (t.get(k) ?? 0) + v);
  return Sym.of(t);
}

function dimNeg(a: Dim): Dim {
  return dimMul(a, -1);
}

export function dimSub(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return dimAdd(a, dimNeg(b));
}

export function dimMul(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a * b;
  if (typeof a === 'number' || typeof b === 'number') {
    const [s, c] = typeof a === 'number' ? [b as Sym, a] : [a, b as number];
    if (c === 1) return s;
    if (c === 0) return 0;
    const t = new Map<string, number>();
    for (const [k, v] of s.terms) t.set(k, v * c);
    return Sym.of(t);
  }
  const t = new Map<string, number>();
  for (const [ka, va] of a.terms) {
    for (const [kb, vb] of b.terms) {
      const k = mulKeys(ka, kb);
      t.set(k, (t.get(k) ?? 0) + va * vb);
    }
  }
  return Sym.of(t);
}

export function dimProduct(dims: readonly Dim[]): Dim {
  let p: Dim = 1;
  for (const d of dims) p = dimMul(p, d);
  return p;
}

/** Divides every term by a monomial when that is exact; undefined otherwise. */
function exactDivide(a: Dim, b: Dim): Dim | undefined {
  const bt = termsOf(b);
  if (bt.size !== 1) return dimEquals(a, b) ? 1 : undefined;
  const [[bKey, bCoef]] = [...bt] as [[string, number]];
  if (bCoef === 0) return undefined;
  const bAtoms = bKey === '' ? [] : bKey.split(ATOM_SEPARATOR);
  const out = new Map<string, number>();
  for (const [k, v] of termsOf(a)) {
    if (v === 0) continue; // 0 / b = 0 for any b
    if (v % bCoef !== 0) return undefined;
    const atoms = k === '' ? [] : k.split(ATOM_SEPARATOR);
    for (const atom of bAtoms) {
      const i = atoms.indexOf(atom);
      if (i < 0) return undefined;
      atoms.splice(i, 1);
    }
    out.set(atoms.join(ATOM_SEPARATOR), v / bCoef);
  }
  return Sym.of(out);
}

/** floor(a / b). Exact polynomial division when possible, else an opaque atom. */
export function dimFloorDiv(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return Math.floor(a / b);
  const exact = exactDivide(a, b);
  if (exact !== undefined) return exact;
  return opaque(`floor((${String(a)})/(${String(b)}))`);
}

/** ceil(a / b), for output sizes with symbolic spatial dims. */
export function dimCeilDiv(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return Math.ceil(a / b);
  const exact = exactDivide(a, b);
  if (exact !== undefined) return exact;
  return opaque(`ceil((${String(a)})/(${String(b)}))`);
}

export function dimMod(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a - b * Math.floor(a / b);
  if (exactDivide(a, b) !== undefined) return 0;
  return opaque(`mod((${String(a)}),(${String(b)}))`);
}

export function dimEquals(a: Dim, b: Dim): boolean {
  if (a === b) return true;
  if (typeof a === 'number' || typeof b === 'number') return false;
  return a.terms.size === b.terms.size && a.toString() === b.toString();
}

/** Min/max only resolve when the answer is certain; otherwise an opaque atom. */
export function dimMin(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return Math.min(a, b);
  if (dimEquals(a, b)) return a;
  return opaque(`min(${String(a)},${String(b)})`);
}

/** True when a symbolic dim is certainly >= 0: every term non-negative (dims are >= 0). */
function nonNegative(d: Dim): boolean {
  return typeof d === 'number' ? d >= 0 : [...d.terms.values()].every((c) => c >= 0);
}

export function dimMax(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return Math.max(a, b);
  if (dimEquals(a, b)) return a;
  if (a === 0 && nonNegative(b)) return b;
  if (b === 0 && nonNegative(a)) return a;
  return opaque(`max(${String(a)},${String(b)})`);
}

export function dimToJson(d: Dim): number | string {
  return typeof d === 'number' ? d : d.toString();
}

export function shapeToString(shape: readonly Dim[]): string {
  return `[${shape.map(dimToJson).join(',')}]`;
}

/** Symbols (dim_params) left in a shape, for "bind it with --dim NAME=N" messages. */
export function unboundSymbols(shape: readonly Dim[]): string[] {
  // Asked of every shape lowering reads: most are all numbers, and need no set.
  let names: Set<string> | undefined;
  for (const d of shape) {
    if (typeof d === 'number') continue;
    names ??= new Set<string>();
    for (const a of d.atoms()) names.add(a);
  }
  return names === undefined ? [] : [...names].sort();
}

/** Prefix of dims known only at run time (NonZero's count, Unique's length): never bound by --dim. */
export const RUNTIME_DIM_PREFIX = '?';

/** A data-dependent dim, named after the value it sizes, e.g. `?NonZero:result`. */
export function runtimeDim(label: string): Sym {
  return Sym.atom(`${RUNTIME_DIM_PREFIX}${label}`);
}

/** Whether a dim depends only on run-time data (every atom a runtime dim). */
export function isRuntimeDim(d: Dim): boolean {
  return typeof d !== 'number' && d.atoms().every((a) => a.startsWith(RUNTIME_DIM_PREFIX));
}

/**
 * Replaces bound atoms by their values (e.g. evaluates `12*batch` at batch = 3). Opaque atoms
 * (floor(...), min(...)) are kept as they are.
 */
export function substituteDim(d: Dim, values: ReadonlyMap<string, number>): Dim {
  if (typeof d === 'number') return d;
  let out: Dim = 0;
  for (const [key, coefficient] of d.terms) {
    let term: Dim = coefficient;
    for (const atom of key === '' ? [] : key.split(ATOM_SEPARATOR)) term = dimMul(term, values.get(atom) ?? Sym.atom(atom));
    out = dimAdd(out, term);
  }
  return out;
}
