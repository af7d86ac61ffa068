/** Nested maps keyed by numbers (memos by GEMM dims, signature tables): no string key per lookup. */

/** The map under `key` in `outer`, made empty on first use. */
export function innerMap<K, IK, IV>(outer: Map<K, Map<IK, IV>>, key: K): Map<IK, IV> {
  let inner = outer.get(key);
  if (inner === undefined) {
    inner = new Map();
    outer.set(key, inner);
  }
  return inner;
}
