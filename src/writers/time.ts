/** Cycles -> the time unit a writer emits. ASTRA-sim's text format counts 1 ns ticks. */
export type TimeUnit = 'ns' | 'cycles';

export function cyclesToUnit(cycles: number, clockMHz: number, unit: TimeUnit): number {
  return unit === 'cycles' ? cycles : Math.round((cycles * 1000) / clockMHz);
}
