/**
 * ASTRA-sim's legacy text workload, written so both ASTRA-sim 1.0's parser and Chakra's text
 * converter accept it: keyword line, layer count, one 12-column TAB-separated line per layer,
 * integers only, reserved -1, `NONE 0` for no collective, LF endings, no blank line.
 */
import { InputError } from '../errors.js';
import type { Collective } from '../plan/legacy.js';
import type { LayerTable } from '../schedule/types.js';
import { fileOrStdout, type Writer } from './output.js';
import { cyclesToUnit, type TimeUnit } from './time.js';

function comm(c: Collective): string {
  return c.type === 'NONE' ? 'NONE\t0' : `${c.type}\t${c.bytes}`;
}

function checkInteger(value: number, layer: string, pass: string, hardware: string, unit: TimeUnit): string {
  // A time past 2^53 (104 days in ns) cannot be written exactly: a profile that slow cannot time this model.
  if (value > Number.MAX_SAFE_INTEGER && Number.isFinite(value)) throw new InputError(`layer ${layer}: its ${pass} time on ${hardware} is ${value.toExponential(3)} ${unit}, more than the text format holds exactly (2^53); the profile's clock or bandwidths are too low for this model`);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`internal error: ${layer} ${pass} = ${value} is not a non-negative integer`);
  return String(value);
}

export function writeAstraText(table: LayerTable, timeUnit: TimeUnit = 'ns'): string {
  // The error's words are built only on an error: a 100k-layer table would build 400k of them.
  const t = (cycles: number, layer: string, pass: string): string => checkInteger(cyclesToUnit(cycles, table.clockMHz, timeUnit), layer, pass, table.hardware, timeUnit);
  const lines = [table.config.parallelism, String(table.layers.length)];
  for (const l of table.layers) {
    lines.push([
      l.name, '-1',
      t(l.fwdCycles, l.name, 'fwd'), comm(l.fwdComm),
      t(l.igCycles, l.name, 'ig'), comm(l.igComm),
      t(l.wgCycles, l.name, 'wg'), comm(l.wgComm),
      t(l.updateCycles, l.name, 'update'),
    ].join('\t'));
  }
  // The final newline as an empty last line: `join(...) + '\n'` made a concatenation of the
  // whole text, flattened (copied, 4 MB for the 100k-node chain) again when it is written.
  lines.push('');
  return lines.join('\n');
}

/** `--format text`: the table to `output` (or standard output). */
export const textWriter: Writer<LayerTable, { output?: string; timeUnit: TimeUnit }> = (table, o) => fileOrStdout(o.output, writeAstraText(table, o.timeUnit));
