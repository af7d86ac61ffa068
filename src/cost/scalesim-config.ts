/**
 * SCALE-sim v2 `.cfg` files (`scale_config.py`, docs/scalesim-model.md §1), read with Python configparser's
 * semantics: `[section]` headers (case-sensitive), `key = value` or `key: value` (keys
 * case-insensitive, both sides trimmed), full-line `#`/`;` comments, indented continuation lines,
 * duplicate sections/keys rejected. No inline comments, as in configparser's defaults.
 *
 * Units: SCALE-sim's word is 1 byte and `*SramSzkB` are KiB, so an SRAM holds kB*1024 words.
 * `Bandwidth` (words/cycle) is only read in USER mode and only its first entry is used; CALC mode
 * reads DRAM at SCALE-sim's fixed 10 words/cycle. SCALE-sim has no clock: we assume 1000 MHz.
 * The operand offsets are kept when one is negative: SCALE-sim reads address -1 as "no element".
 */
import { readRegularFile } from '../files.js';
import { basename, extname } from 'node:path';
import { InputError } from '../errors.js';
import { CALC_READ_BANDWIDTH_WORDS, MAX_ARRAY_DIM } from './access/constants.js';
import type { BandwidthMode, Dataflow, HardwareProfile } from './types.js';
import { DEFAULT_VECTOR_BYTES_PER_LANE } from './vector.js';

/** SCALE-sim has no clock frequency; cycle counts are converted to time at this clock. */
export const SCALESIM_DEFAULT_CLOCK_MHZ = 1000;

export interface ScaleSimConfig {
  runName: string;
  bandwidthMode: BandwidthMode;
  arrayHeight: number;
  arrayWidth: number;
  ifmapSramKiB: number;
  filterSramKiB: number;
  ofmapSramKiB: number;
  ifmapOffset: number;
  filterOffset: number;
  ofmapOffset: number;
  dataflow: Dataflow;
  /** `Bandwidth` list (USER mode only; empty in CALC mode). */
  bandwidths: number[];
}

/** SRAM sizes are KiB; their word counts (x1024) must stay exact doubles. */
const MAX_SRAM_KIB = Math.floor(Number.MAX_SAFE_INTEGER / 1024);

type Sections = Map<string, Map<string, string>>;

/** configparser's reading of an INI file into sections of lowercased keys. */
export function parseIni(text: string, file: string): Sections {
  const sections: Sections = new Map();
  let current: Map<string, string> | undefined;
  let lastKey: string | undefined;
  text.split(/\r\n|\r|\n/).forEach((raw, index) => {
    const where = `${file}:${index + 1}`;
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) {
      if (line === '') lastKey = undefined;
      return;
    }
    if (/^\s/.test(raw) && current && lastKey !== undefined) {
      current.set(lastKey, `${current.get(lastKey)}\n${line}`); // continuation line
      return;
    }
    const name = /^\[(.+)\]$/.exec(line)?.[1];
    if (name !== undefined) {
      if (sections.has(name)) throw new InputError(`${where}: section '[${name}]' appears twice`);
      current = new Map();
      sections.set(name, current);
      lastKey = undefined;
      return;
    }
    const delim = line.search(/[=:]/);
    if (delim <= 0) throw new InputError(`${where}: expected 'key = value' or '[section]', got '${line}'`);
    if (!current) throw new InputError(`${where}: key outside of any [section]`);
    const key = line.slice(0, delim).trim().toLowerCase();
    if (current.has(key)) throw new InputError(`${where}: key '${key}' appears twice in its section`);
    current.set(key, line.slice(delim + 1).trim());
    lastKey = key;
  });
  return sections;
}

function getter(sections: Sections, file: string) {
  const raw = (section: string, key: string): string => {
    const values = sections.get(section);
    if (!values) throw new InputError(`${file}: missing section '[${section}]' (needed for key '${key}')`);
    const value = values.get(key.toLowerCase());
    if (value === undefined) throw new InputError(`${file}: missing key '${key}' in section '[${section}]'`);
    return value;
  };
  /** Python's int() of the value; `max` bounds it (array sides are allocated per line). */
  const int = (section: string, key: string, positive: boolean, max = Number.MAX_SAFE_INTEGER): number => {
    const text = raw(section, key);
    if (!/^[+-]?\d+(_\d+)*$/.test(text)) throw new InputError(`${file}: key '${key}' must be an integer, got '${text}'`);
    const value = Number(text.replace(/_/g, ''));
    if (positive && value <= 0) throw new InputError(`${file}: key '${key}' must be positive, got '${text}'`);
    if (Math.abs(value) > max) throw new InputError(`${file}: key '${key}' must be at most ${max}, got '${text}'`);
    return value;
  };
  return { raw, int };
}

export function parseScaleSimConfig(text: string, file: string): ScaleSimConfig {
  const get = getter(parseIni(text, file), file);
  const mode = get.raw('run_presets', 'InterfaceBandwidth');
  if (mode !== 'USER' && mode !== 'CALC') {
    throw new InputError(`${file}: key 'InterfaceBandwidth' must be USER or CALC, got '${mode}'`);
  }
  const arch = 'architecture_presets';
  const dataflow = get.raw(arch, 'Dataflow');
  if (dataflow !== 'os' && dataflow !== 'ws' && dataflow !== 'is') {
    throw new InputError(`${file}: key 'Dataflow' must be os, ws or is, got '${dataflow}'`);
  }
  let bandwidths: number[] = [];
  if (mode === 'USER') {
    bandwidths = get.raw(arch, 'Bandwidth').split(',').map((part) => {
      const text = part.trim();
      const value = Number(text);
      if (!/^\d+$/.test(text) || value <= 0 || !Number.isSafeInteger(value)) {
        throw new InputError(`${file}: key 'Bandwidth' must list positive integers, got '${text}'`);
      }
      return value;
    });
  }
  return {
    runName: get.raw('general', 'run_name'),
    bandwidthMode: mode === 'USER' ? 'user' : 'calc',
    arrayHeight: get.int(arch, 'ArrayHeight', true, MAX_ARRAY_DIM),
    arrayWidth: get.int(arch, 'ArrayWidth', true, MAX_ARRAY_DIM),
    ifmapSramKiB: get.int(arch, 'IfmapSramSzkB', true, MAX_SRAM_KIB),
    filterSramKiB: get.int(arch, 'FilterSramSzkB', true, MAX_SRAM_KIB),
    ofmapSramKiB: get.int(arch, 'OfmapSramSzkB', true, MAX_SRAM_KIB),
    ifmapOffset: get.int(arch, 'IfmapOffset', false),
    filterOffset: get.int(arch, 'FilterOffset', false),
    ofmapOffset: get.int(arch, 'OfmapOffset', false),
    dataflow,
    bandwidths,
  };
}

/** Largest .cfg file (a real one is under 1 KiB). */
const MAX_CONFIG_BYTES = 1024 * 1024;

export function readScaleSimConfig(path: string): ScaleSimConfig {
  return parseScaleSimConfig(readRegularFile(path, path, 'SCALE-sim config', MAX_CONFIG_BYTES), path);
}

/** The hardware profile SCALE-sim simulates for this config (one array, 1-byte words). */
export function scaleSimProfile(config: ScaleSimConfig, file: string): HardwareProfile {
  const user = config.bandwidthMode === 'user';
  const userBandwidth = config.bandwidths[0];
  if (user && userBandwidth === undefined) throw new InputError(`${file}: USER bandwidth mode needs a value for key 'Bandwidth'`);
  return {
    name: basename(file, extname(file)),
    source:
      `SCALE-sim v2 config ${basename(file)} (run_name ${config.runName}); word = 1 byte; ` +
      (user
        ? `USER mode, DRAM ${userBandwidth} words/cycle; `
        : `CALC mode, DRAM reads estimated at ${CALC_READ_BANDWIDTH_WORDS} words/cycle; `) +
      `SCALE-sim has no clock: ${SCALESIM_DEFAULT_CLOCK_MHZ} MHz assumed; ` +
      `SCALE-sim models no vector unit: modtrans's default, ${config.arrayWidth} lanes (one per array column), ${DEFAULT_VECTOR_BYTES_PER_LANE} bytes per lane and cycle`,
    arrayRows: config.arrayHeight,
    arrayCols: config.arrayWidth,
    arrays: 1,
    dataflow: config.dataflow,
    ifmapSramBytes: config.ifmapSramKiB * 1024,
    filterSramBytes: config.filterSramKiB * 1024,
    ofmapSramBytes: config.ofmapSramKiB * 1024,
    bandwidthMode: config.bandwidthMode,
    dramBandwidthWordsPerCycle: userBandwidth !== undefined && user ? userBandwidth : CALC_READ_BANDWIDTH_WORDS,
    clockMHz: SCALESIM_DEFAULT_CLOCK_MHZ,
    elementBytes: 1,
    // Offsets >= 0 never put an element at SCALE-sim's "no element" address -1: they change nothing.
    ...(Math.min(config.ifmapOffset, config.filterOffset, config.ofmapOffset) < 0
      ? { addressOffsets: { ifmap: config.ifmapOffset, filter: config.filterOffset, ofmap: config.ofmapOffset } }
      : {}),
    vectorLanes: config.arrayWidth,
    vectorBytesPerCycle: DEFAULT_VECTOR_BYTES_PER_LANE * config.arrayWidth,
  };
}

export function loadScaleSimProfile(path: string): HardwareProfile {
  return scaleSimProfile(readScaleSimConfig(path), path);
}
