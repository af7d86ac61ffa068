/**
 * Data-parallel gradient buckets (PyTorch DDP): gradients are grouped in reverse layer order, the
 * order backward produces them, into buckets of at least `dpBucketBytes`; a bucket is reduced as
 * soon as the backward of its last layer is done. A layer's gradients never straddle two buckets.
 * Parameters outside every layer (norm gains and biases) join the last bucket.
 */
import { at } from '../errors.js';
import type { ParallelPlan } from '../plan/types.js';
import { gradientParams } from '../plan/held-params.js';

export interface GradientBucket {
  /** Layer indices in the order their gradients arrive (descending). */
  layers: number[];
  bytes: number;
  /** The layer whose weight gradient completes the bucket. */
  closedBy: number;
}

export function gradientBuckets(plan: ParallelPlan, layerIndices: readonly number[], includeOtherParams: boolean, bucketBytes = plan.dpBucketBytes): GradientBucket[] {
  const buckets: GradientBucket[] = [];
  let current: GradientBucket | undefined;
  const descending = [...layerIndices].sort((a, b) => b - a);
  for (const i of descending) {
    const bytes = gradientParams(plan, at(plan.layers, i)) * plan.gradientBytes;
    if (bytes <= 0) continue;
    current ??= { layers: [], bytes: 0, closedBy: i };
    current.layers.push(i);
    current.bytes += bytes;
    current.closedBy = i;
    if (current.bytes >= bucketBytes) {
      buckets.push(current);
      current = undefined;
    }
  }
  const other = includeOtherParams ? plan.otherParams * plan.gradientBytes : 0;
  if (current !== undefined) {
    current.bytes += other;
    buckets.push(current);
  } else if (other > 0) {
    const lastBucket = buckets[buckets.length - 1];
    const lowestLayer = descending[descending.length - 1];
    if (lastBucket !== undefined) lastBucket.bytes += other;
    else if (lowestLayer !== undefined) buckets.push({ layers: [], bytes: other, closedBy: lowestLayer });
  }
  return buckets;
}
