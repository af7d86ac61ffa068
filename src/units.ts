/**
 * Time units: array clock cycles -> ns and µs, the one place they are converted. One cycle at
 * `clockMHz` lasts 1000 / clockMHz ns. The rounding, stated once:
 * - `cyclesToNs` is exact (unrounded): figures that are summed or set side by side (`compare`);
 * - `cyclesToWholeNs` rounds to the nearest ns (halves up, `Math.round`): every ns column a
 *   report or a text workload prints (ASTRA-sim's text format counts whole 1 ns ticks);
 * - `computeDurationNs` is a compute event's duration in a trace or a prediction: whole ns, at
 *   least 1, since a 0 ns event aborts ASTRA-sim's roofline mode (docs/astra-sim-formats.md F.1);
 * - `cyclesToWholeUs` rounds cycles / clockMHz (µs) to the nearest µs (the text format's
 *   `--time-unit us`), and `nsToWholeUs` a whole-ns duration to Chakra's `duration_micros`.
 */

export function cyclesToNs(cycles: number, clockMHz: number): number {
  return (cycles * 1000) / clockMHz;
}

export function cyclesToWholeNs(cycles: number, clockMHz: number): number {
  return Math.round(cyclesToNs(cycles, clockMHz));
}

export function computeDurationNs(cycles: number, clockMHz: number): number {
  return Math.max(1, cyclesToWholeNs(cycles, clockMHz));
}

export function cyclesToWholeUs(cycles: number, clockMHz: number): number {
  return Math.round(cycles / clockMHz);
}

export function nsToWholeUs(ns: number): number {
  return Math.round(ns / 1000);
}
