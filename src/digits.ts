/**
 * Integers with their digits grouped by thousands (12,345), exactly as `toLocaleString('en-US')`
 * writes them, by hand: the first toLocaleString call of a process loads ICU's number formatting
 * (~20 ms of CPU, a sixth of a small model's whole translate). Other numbers (fractions, beyond
 * 2^53) still go to toLocaleString.
 */
export function withThousands(n: number): string {
  if (!Number.isSafeInteger(n)) return n.toLocaleString('en-US');
  const digits = String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ',');
  return n < 0 ? `-${digits}` : digits;
}
