/**
 * Tensor dimensions: a number, or a symbolic expression of named dims (`batch`, `2*sequence`,
 * `batch*sequence+1`). Symbolic dims are polynomials with integer coefficients, kept canonical so
 * that equal expressions compare equal; a division that is not exact becomes an opaque atom.
 */

/** Monomial key ('' for the constant term, else sorted atom names joined by '*') -> coefficient. */
export class Sym {
  private constructor(readonly terms: ReadonlyMap<string, number>) {}

  static atom(name: string): Sym {
    return new Sym(new Map([[name, 1]]));
  }

  /** Builds a Dim from terms, collapsing to a number when only the constant term remains. */
  static of(terms: Map<string, number>): Dim {
    for (const [k, v] of terms) if (v === 0) terms.delete(k);
    if (terms.size === 0) return 0;
    if (terms.size === 1 && terms.has('')) return terms.get('')!;
    return new Sym(terms);
  }

  toString(): string {
    const keys = [...this.terms.keys()].sort((a, b) => (a === '' ? 1 : b === '' ? -1 : a < b ? -1 : a > b ? 1 : 0));
    let out = '';
    for (const key of keys) {
      const c = this.terms.get(key)!;
      const magnitude = Math.abs(c);
      const body = key === '' ? String(magnitude) : magnitude === 1 ? key : `${magnitude}*${key}`;
      out += out === '' ? (c < 0 ? `-${body}` : body) : c < 0 ? `-${body}` : `+${body}`;
    }
    return out;
  }

  /** Atom names appearing in this expression (opaque atoms contribute their whole text). */
  atoms(): string[] {
    const names = new Set<string>();
    for (const key of this.terms.keys()) if (key !== '') for (const a of key.split('*')) names.add(a);
    return [...names].sort();
  }
}

export type Dim = number | Sym;

export function isStaticDim(d: Dim): d is number {
  return typeof d === 'number';
}

export function isStaticShape(shape: readonly Dim[]): shape is readonly number[] {
  return shape.every(isStaticDim);
}

function termsOf(d: Dim): Map<string, number> {
  return typeof d === 'number' ? new Map([['', d]]) : new Map(d.terms);
}

function mulKeys(a: string, b: string): string {
  if (a === '') return b;
  if (b === '') return a;
  return [...a.split('*'), ...b.split('*')].sort().join('*');
}

export function dimAdd(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  const t = termsOf(a);
  for (const [k, v] of termsOf(b)) t.set(k, (t.get(k) ?? 0) + v);
  return Sym.of(t);
}

export function dimNeg(a: Dim): Dim {
  if (typeof a === 'number') return -a;
  const t = new Map<string, number>();
  for (const [k, v] of a.terms) t.set(k, -v);
  return Sym.of(t);
}

export function dimSub(a: Dim, b: Dim): Dim {
  return dimAdd(a, dimNeg(b));
}

export function dimMul(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a * b;
  const t = new Map<string, number>();
  for (const [ka, va] of termsOf(a)) {
    for (const [kb, vb] of termsOf(b)) {
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
  const bAtoms = bKey === '' ? [] : bKey.split('*');
  const out = new Map<string, number>();
  for (const [k, v] of termsOf(a)) {
    if (v === 0) continue; // 0 / b = 0 for any b
    if (v % bCoef !== 0) return undefined;
    const atoms = k === '' ? [] : k.split('*');
    for (const atom of bAtoms) {
      const i = atoms.indexOf(atom);
      if (i < 0) return undefined;
      atoms.splice(i, 1);
    }
    out.set(atoms.join('*'), v / bCoef);
  }
  return Sym.of(out);
}

/** floor(a / b). Exact polynomial division when possible, else an opaque atom. */
export function dimFloorDiv(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return Math.floor(a / b);
  const exact = exactDivide(a, b);
  if (exact !== undefined) return exact;
  return Sym.atom(`floor((${String(a)})/(${String(b)}))`);
}

/** ceil(a / b), for output sizes with symbolic spatial dims. */
export function dimCeilDiv(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return Math.ceil(a / b);
  const exact = exactDivide(a, b);
  if (exact !== undefined) return exact;
  return Sym.atom(`ceil((${String(a)})/(${String(b)}))`);
}

export function dimMod(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a - b * Math.floor(a / b);
  if (exactDivide(a, b) !== undefined) return 0;
  return Sym.atom(`mod((${String(a)}),(${String(b)}))`);
}

export function dimEquals(a: Dim, b: Dim): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  return a.toString() === b.toString();
}

/** Min/max only resolve when the answer is certain; otherwise an opaque atom. */
export function dimMin(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return Math.min(a, b);
  if (dimEquals(a, b)) return a;
  return Sym.atom(`min(${String(a)},${String(b)})`);
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
  return Sym.atom(`max(${String(a)},${String(b)})`);
}

export function dimToJson(d: Dim): number | string {
  return typeof d === 'number' ? d : d.toString();
}

export function shapeToString(shape: readonly Dim[]): string {
  return `[${shape.map(dimToJson).join(',')}]`;
}

/** Symbols (dim_params) left in a shape, for "bind it with --dim NAME=N" messages. */
export function unboundSymbols(shape: readonly Dim[]): string[] {
  const names = new Set<string>();
  for (const d of shape) if (typeof d !== 'number') for (const a of d.atoms()) names.add(a);
  return [...names].sort();
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
    for (const atom of key === '' ? [] : key.split('*')) term = dimMul(term, values.get(atom) ?? Sym.atom(atom));
    out = dimAdd(out, term);
  }
  return out;
}
