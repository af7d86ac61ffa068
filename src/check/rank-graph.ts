/**
 * The dependency graph of one rank's file (docs/astra-sim-formats.md B.2, B.9, F.3): unique ids, dependencies on
 * ids that exist, no cycles, and the order ASTRA-sim issues nodes in when nothing else
 * interferes (ready nodes by ascending id), which fixes the order of each rank's collectives.
 */
import { at, indexOutOfRange, internalError, last } from '../errors.js';
import type { Effect, FindingKind } from './findings.js';

/**
 * Nodes of one file in columns: ids, name byte ranges, and each node's data_deps + ctrl_deps
 * flattened. Typed arrays, reused from file to file, so reading a file allocates almost nothing.
 */
export class GraphColumns {
  count = 0;
  ids = new Float64Array(1024);
  nameStart = new Int32Array(1024);
  nameEnd = new Int32Array(1024);
  /** deps of node i are deps[depStart[i] .. depStart[i + 1]). */
  depStart = new Float64Array(1025);
  deps = new Float64Array(4096);

  reset(): void {
    this.count = 0;
  }

  add(id: number, nameStart: number, nameEnd: number, deps: readonly number[], depCount: number): void {
    const i = this.count++;
    if (this.count >= this.ids.length) this.growNodes();
    this.ids[i] = id;
    this.nameStart[i] = nameStart;
    this.nameEnd[i] = nameEnd;
    let d = this.depStart[i] ?? indexOutOfRange(i);
    if (d + depCount > this.deps.length) this.deps = grown(this.deps, d + depCount);
    for (let k = 0; k < depCount; k++) this.deps[d++] = deps[k] ?? indexOutOfRange(k);
    this.depStart[i + 1] = d;
  }

  private growNodes(): void {
    const size = this.ids.length * 2;
    this.ids = grown(this.ids, size);
    this.nameStart = grown(this.nameStart, size);
    this.nameEnd = grown(this.nameEnd, size);
    this.depStart = grown(this.depStart, size + 1);
  }
}

function grown<T extends Float64Array | Int32Array>(a: T, atLeast: number): T {
  let size = a.length * 2;
  while (size < atLeast) size *= 2;
  const b = new (a.constructor as new (n: number) => T)(size);
  b.set(a);
  return b;
}

export type NodeReport = (index: number, kind: FindingKind, effect: Effect, message: string) => void;

/** A binary min-heap of node indices keyed by node id. */
class IdHeap {
  private readonly items: number[] = [];
  constructor(private readonly ids: ArrayLike<number>) {}
  get size(): number {
    return this.items.length;
  }
  /** The id of the node at heap slot k (slots and node indices are the heap's own). */
  private idAt(k: number): number {
    const i = this.items[k] ?? indexOutOfRange(k);
    return this.ids[i] ?? indexOutOfRange(i);
  }
  push(i: number): void {
    const a = this.items;
    a.push(i);
    const id = this.ids[i] ?? indexOutOfRange(i);
    let k = a.length - 1;
    while (k > 0) {
      const p = (k - 1) >> 1;
      if (this.idAt(p) <= id) break;
      a[k] = a[p] ?? indexOutOfRange(p);
      k = p;
    }
    a[k] = i;
  }
  /** The node with the lowest id; the caller checks size first. */
  pop(): number {
    const a = this.items;
    const top = a[0] ?? internalError('pop from an empty IdHeap');
    const moved = a.pop() ?? indexOutOfRange(0);
    if (a.length > 0) {
      const movedId = this.ids[moved] ?? indexOutOfRange(moved);
      let k = 0;
      for (;;) {
        const l = 2 * k + 1;
        if (l >= a.length) break;
        const r = l + 1;
        const c = r < a.length && this.idAt(r) < this.idAt(l) ? r : l;
        if (this.idAt(c) >= movedId) break;
        a[k] = a[c] ?? indexOutOfRange(c);
        k = c;
      }
      a[k] = moved;
    }
    return top;
  }
}

/**
 * Ids rise in file order (so they are unique) and every dependency names an existing, earlier
 * node. Then file order is a topological order and equals ASTRA-sim's ready-by-lowest-id order.
 */
function depsPointBack(g: GraphColumns): boolean {
  const { ids, depStart, deps } = g;
  for (let i = 0; i < g.count; i++) {
    const id = ids[i] ?? indexOutOfRange(i);
    if (i > 0 && id <= (ids[i - 1] ?? indexOutOfRange(i - 1))) return false;
    for (let d = depStart[i] ?? indexOutOfRange(i), end = depStart[i + 1] ?? indexOutOfRange(i + 1); d < end; d++) {
      const dep = deps[d] ?? indexOutOfRange(d);
      // An earlier id exists only if it is one of the ids before i (binary search).
      if (!(dep < id) || !hasId(ids, i, dep)) return false;
    }
  }
  return true;
}

/** Whether ids[0 .. end) (rising) holds `id`. */
function hasId(ids: ArrayLike<number>, end: number, id: number): boolean {
  let lo = 0;
  let hi = end - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = ids[mid] ?? indexOutOfRange(mid);
    if (v === id) return true;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/**
 * Checks ids and dependencies; returns the issue order (node indices), or 'file-order' when that
 * is the order. Nodes on a cycle or behind a missing dependency never run: they are not in it.
 */
export function checkGraph(g: GraphColumns, report: NodeReport): number[] | 'file-order' {
  if (depsPointBack(g)) return 'file-order';
  const n = g.count;
  const indexOf = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const id = g.ids[i] ?? indexOutOfRange(i);
    const first = indexOf.get(id);
    if (first === undefined) indexOf.set(id, i);
    else report(i, 'duplicate-id', 'hang', `id ${id} is also the id of node #${first} of the file; ASTRA-sim indexes nodes by id and loses one`);
  }

  const waiting = new Int32Array(n);
  const dependents: number[][] = Array.from({ length: n }, () => []);
  for (let i = 0; i < n; i++) {
    if (indexOf.get(g.ids[i] ?? indexOutOfRange(i)) !== i) continue; // a duplicate: ASTRA-sim keeps one node per id
    for (let d = g.depStart[i] ?? indexOutOfRange(i); d < (g.depStart[i + 1] ?? indexOutOfRange(i + 1)); d++) {
      const dep = g.deps[d] ?? indexOutOfRange(d);
      const j = indexOf.get(dep);
      waiting[i] = (waiting[i] ?? indexOutOfRange(i)) + 1;
      if (j === undefined) report(i, 'unknown-dependency', 'hang', `depends on id ${dep}, which is not in this file; the node never runs`);
      else at(dependents, j).push(i);
    }
  }
  const heap = new IdHeap(g.ids);
  for (let i = 0; i < n; i++) if (waiting[i] === 0 && indexOf.get(g.ids[i] ?? indexOutOfRange(i)) === i) heap.push(i);
  const order: number[] = [];
  while (heap.size > 0) {
    const i = heap.pop();
    order.push(i);
    for (const j of dependents[i] ?? indexOutOfRange(i)) {
      const left = (waiting[j] ?? indexOutOfRange(j)) - 1;
      waiting[j] = left;
      if (left === 0) heap.push(j);
    }
  }
  if (order.length < indexOf.size) reportCycles(g, indexOf, waiting, indexOf.size - order.length, report);
  return order;
}

/** Each strongly connected component among the nodes that never ran (iterative Tarjan). */
function reportCycles(g: GraphColumns, indexOf: Map<number, number>, waiting: Int32Array, stuck: number, report: NodeReport): void {
  const n = g.count;
  const depsOf = (i: number): number[] => {
    const out: number[] = [];
    for (let d = at(g.depStart, i); d < at(g.depStart, i + 1); d++) {
      const j = indexOf.get(at(g.deps, d));
      if (j !== undefined && at(waiting, j) > 0) out.push(j);
    }
    return out;
  };
  const low = new Int32Array(n).fill(-1);
  const num = new Int32Array(n).fill(-1);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  let counter = 0;
  let first = true;
  for (let root = 0; root < n; root++) {
    if (waiting[root] === 0 || at(num, root) >= 0) continue;
    const work: { i: number; next: number[]; k: number }[] = [{ i: root, next: depsOf(root), k: 0 }];
    num[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (work.length > 0) {
      const top = last(work, 'Tarjan work stack');
      if (top.k < top.next.length) {
        const j = at(top.next, top.k++);
        if (at(num, j) < 0) {
          num[j] = low[j] = counter++;
          stack.push(j);
          onStack[j] = 1;
          work.push({ i: j, next: depsOf(j), k: 0 });
        } else if (onStack[j]) low[top.i] = Math.min(at(low, top.i), at(num, j));
        continue;
      }
      work.pop();
      const caller = work[work.length - 1];
      if (caller !== undefined) low[caller.i] = Math.min(at(low, caller.i), at(low, top.i));
      if (low[top.i] !== num[top.i]) continue;
      const component: number[] = [];
      let j: number;
      do {
        j = stack.pop() ?? internalError('Tarjan stack emptied before its component root');
        onStack[j] = 0;
        component.push(j);
      } while (j !== top.i);
      const selfLoop = component.length === 1 && top.next.includes(top.i);
      if (component.length < 2 && !selfLoop) continue;
      component.sort((a, b) => at(g.ids, a) - at(g.ids, b));
      const ids = component.slice(0, 8).map((c) => at(g.ids, c)).join(', ') + (component.length > 8 ? ', ...' : '');
      const tail = first ? `; ${stuck} node(s) of this file never run` : '';
      first = false;
      report(at(component, 0), 'dependency-cycle', 'hang', `dependency cycle through ${component.length} node(s): ids ${ids}${tail}`);
    }
  }
}
