import { indexOutOfRange } from '../errors.js';

/** A binary min-heap of integers ordered by `less` (ready node ids; stages by their compute end time). */
export class MinHeap {
  private readonly items: number[] = [];

  constructor(private readonly less: (a: number, b: number) => boolean = (a, b) => a < b) {}

  get size(): number {
    return this.items.length;
  }

  peek(): number | undefined {
    return this.items[0];
  }

  push(x: number): void {
    const a = this.items;
    let i = a.length;
    a.push(x);
    // Sift up: parents larger than x move down one level; x lands in the hole.
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = a[parent] ?? indexOutOfRange(parent);
      if (!this.less(x, above)) break;
      a[i] = above;
      i = parent;
    }
    a[i] = x;
  }

  pop(): number | undefined {
    const a = this.items;
    const top = a[0];
    const moved = a.pop();
    if (a.length === 0 || moved === undefined) return top;
    // Sift down: the smaller child moves up while it is less than the moved last item.
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      let least = moved;
      if (l < a.length) {
        const left = a[l] ?? indexOutOfRange(l);
        if (this.less(left, least)) {
          m = l;
          least = left;
        }
      }
      if (r < a.length) {
        const right = a[r] ?? indexOutOfRange(r);
        if (this.less(right, least)) {
          m = r;
          least = right;
        }
      }
      if (m === i) break;
      a[i] = least;
      i = m;
    }
    a[i] = moved;
    return top;
  }
}
