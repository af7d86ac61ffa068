/** The median of timing samples (mean of the middle two for an even count); no samples is a bug of the caller. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid];
  const lower = sorted[mid - 1];
  if (upper === undefined) throw new Error('internal error: median of no samples');
  return sorted.length % 2 === 1 || lower === undefined ? upper : (lower + upper) / 2;
}
