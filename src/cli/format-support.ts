/**
 * What each `translate` format supports, declared once: the checks of the options (a flag that
 * only some formats read is an error elsewhere, never silently ignored) read this table instead
 * of naming formats. Constant data, cheap to import at start-up; the writers are in
 * translate-formats.ts, imported when a format runs.
 */

export interface FormatSupport {
  /** What -o must name (the set's files go under it), or undefined when standard output will do. */
  output?: 'PREFIX (files PREFIX.<rank>.et)' | 'DIR';
  /** Pipeline stages (point-to-point transfers between them). */
  pipeline: boolean;
  /** A step graph per rank (any number of collectives and transfers per layer): context and expert parallelism. */
  stepGraph: boolean;
  /** Files per rank (a trace set), each rank's groups and peers resolved as it is written. */
  perRankFiles: boolean;
  /** --time-unit: the text format's columns in ns, us or cycles. */
  timeUnits: boolean;
  /** --passes: training iterations per file. */
  iterations: boolean;
  /** --chakra-timing roofline: exact ns through num_ops. */
  rooflineTiming: boolean;
  /** --chakra-dims: the converter's graph with involved_dim masks. */
  networkDims: boolean;
  /** --text-vector-layers: a line per vector layer, or folded. */
  vectorLayerLines: boolean;
}

const CHAKRA: Omit<FormatSupport, 'output' | 'perRankFiles'> = { pipeline: true, stepGraph: true, timeUnits: false, iterations: true, rooflineTiming: true, networkDims: true, vectorLayerLines: false };

export const FORMAT_SUPPORT = {
  text: { pipeline: false, stepGraph: false, perRankFiles: false, timeUnits: true, iterations: false, rooflineTiming: false, networkDims: false, vectorLayerLines: true },
  chakra: { ...CHAKRA, output: 'PREFIX (files PREFIX.<rank>.et)', perRankFiles: true },
  'chakra-json': { ...CHAKRA, perRankFiles: false },
  scalesim: { output: 'DIR', pipeline: false, stepGraph: false, perRankFiles: false, timeUnits: false, iterations: false, rooflineTiming: false, networkDims: false, vectorLayerLines: false },
} as const satisfies Record<string, FormatSupport>;

export type TranslateFormat = keyof typeof FORMAT_SUPPORT;
export const TRANSLATE_FORMATS = Object.keys(FORMAT_SUPPORT) as TranslateFormat[];

/** The formats that support `what`, as a phrase: "chakra or chakra-json". */
export function formatsWith(what: keyof Omit<FormatSupport, 'output'>): string {
  return TRANSLATE_FORMATS.filter((f) => FORMAT_SUPPORT[f][what]).join(' or ');
}
