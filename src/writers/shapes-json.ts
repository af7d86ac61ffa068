/** `modtrans shapes`: every value of the graph with its dtype and dims (symbolic dims as strings). */
import { type Dim, dimToJson } from '../ir/dim.js';
import { type DTypeCode, dtypeName } from '../ir/dtype.js';

/** What the writer reads of shape inference's result (an `InferredModel` is one): each value's dtype and shape. */
export interface ValueShapes {
  values: ReadonlyMap<string, { dtype: DTypeCode; shape: readonly Dim[] | undefined }>;
}

export function shapesToJson(inferred: ValueShapes): string {
  const values: Record<string, { dtype: string; dims: (number | string)[] | null }> = {};
  for (const [name, info] of inferred.values) {
    values[name] = { dtype: dtypeName(info.dtype), dims: info.shape === undefined ? null : info.shape.map(dimToJson) };
  }
  return JSON.stringify({ values }, null, 2) + '\n';
}
