/** `modtrans shapes`: every value of the graph with its dtype and dims (symbolic dims as strings). */
import { dimToJson } from '../ir/dim.js';
import { dtypeName } from '../ir/dtype.js';
import type { InferredModel } from '../shape/infer.js';

export function shapesToJson(inferred: InferredModel): string {
  const values: Record<string, { dtype: string; dims: (number | string)[] | null }> = {};
  for (const [name, info] of inferred.values) {
    values[name] = { dtype: dtypeName(info.dtype), dims: info.shape === undefined ? null : info.shape.map(dimToJson) };
  }
  return JSON.stringify({ values }, null, 2) + '\n';
}
