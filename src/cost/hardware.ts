/**
 * Hardware profiles: one JSON file each in `hardware-profiles/`, validated on load.
 * Sizes, bandwidths and clocks are a number and a unit ("6 MiB", "900 GB/s", "940 MHz"; no
 * expressions), read by quantity.ts, checked for dimension and range; counts are integers, each
 * with a bound (so no derived value overflows to Infinity).
 * `--hardware` also takes a SCALE-sim `.cfg` file (scalesim-config.ts).
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { InputError, mapGet, shown } from '../errors.js';
import { readRegularFile, shippedDir, shippedNames } from '../files.js';
import { MAX_ARRAY_DIM, MIN_SRAM_WORDS } from './access/constants.js';
import { parseQuantity, type QuantityUnit } from './quantity.js';
import { loadScaleSimProfile } from './scalesim-config.js';
import type { BandwidthMode, Dataflow, HardwareProfile } from './types.js';
import { VECTOR_OP_CLASSES, type VectorOpClass } from '../ir/op-class.js';
import { VECTOR_OPS_PER_ELEMENT, type VectorOpsPerElement } from './vector.js';

export { DEFAULT_PROFILE_NAME } from './choices.js';

/** The shipped profiles folder, found relative to this module (works from src/ and dist/src/). */
export function profilesDir(): string {
  const dir = shippedDir('hardware-profiles');
  if (dir === undefined) throw new Error('hardware-profiles folder not found');
  return dir;
}

/** Names of the profiles in hardware-profiles/, sorted. */
export function shippedProfileNames(): string[] {
  return shippedNames(profilesDir(), '.json');
}

const KEYS = [
  'name', 'source', 'arrayRows', 'arrayCols', 'arrays', 'dataflow', 'ifmapSram', 'filterSram',
  'ofmapSram', 'bandwidthMode', 'dramBandwidth', 'clock', 'elementBytes', 'vectorLanes', 'vectorBytesPerCycle',
  'vectorOpsPerElement', 'cores', 'l2Sram', 'l2Bandwidth',
] as const;

/** Keys a profile may leave out: the vector unit's, defaulted in cost/vector.ts (README, "Hardware profiles"). */
const OPTIONAL_KEYS: ReadonlySet<string> = new Set(['name', 'vectorLanes', 'vectorBytesPerCycle', 'vectorOpsPerElement', 'cores', 'l2Sram', 'l2Bandwidth']);

/** Resolve `--hardware NAME|FILE.json|FILE.cfg` and load it; `warnings` collects implausible values. */
export async function loadHardwareProfile(nameOrPath: string, warnings?: string[]): Promise<HardwareProfile> {
  const isCfg = nameOrPath.endsWith('.cfg');
  const path = nameOrPath.includes('/') || nameOrPath.endsWith('.json') || isCfg
    ? resolve(nameOrPath)
    : join(profilesDir(), `${nameOrPath}.json`);
  const isPath = path !== join(profilesDir(), `${nameOrPath}.json`);
  if (!existsSync(path) && isPath) throw new InputError(`${shown(nameOrPath)}: no such file (expected a hardware profile .json or a SCALE-sim .cfg)`);
  if (!existsSync(path)) {
    throw new InputError(
      `${shown(nameOrPath)}: no such hardware profile (shipped: ${shippedProfileNames().join(', ')}; or a .json profile or a SCALE-sim .cfg file)`,
    );
  }
  if (isCfg) return loadScaleSimProfile(path);
  const text = readRegularFile(path, path, 'hardware profile', MAX_PROFILE_BYTES);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${path}: not valid JSON (${(e as Error).message})`);
  }
  return parseHardwareProfile(raw, path, basename(path, '.json'), warnings);
}

/**
 * Keys that are physical quantities: each must be a string with a unit of the right dimension
 * (a bare number is an error: 1050 could be Hz or MHz). Values outside `plausible` (in `unit`)
 * are most likely a wrong prefix and give a warning.
 */
interface QuantitySpec {
  unit: QuantityUnit;
  dimension: string;
  example: string;
  plausible: [number, number];
  plausibleText: string;
  /** Values outside are refused: beyond them, derived cycle counts overflow or lose integers. */
  range: [number, number];
  rangeText: string;
}
const SRAM_SPEC: QuantitySpec = {
  unit: 'B', dimension: 'a size in bytes', example: '6 MiB', plausible: [1024, 2 ** 34], plausibleText: '1 KiB .. 16 GiB', range: [1, 2 ** 50], rangeText: '1 B .. 1 PiB',
};
const QUANTITY_KEYS: Record<string, QuantitySpec> = {
  ifmapSram: SRAM_SPEC,
  filterSram: SRAM_SPEC,
  ofmapSram: SRAM_SPEC,
  l2Sram: SRAM_SPEC,
  l2Bandwidth: {
    unit: 'B/s', dimension: 'a bandwidth in bytes per second', example: '5 TB/s', plausible: [1e6, 1e15], plausibleText: '1 MB/s .. 1 PB/s', range: [1, 1e18], rangeText: '1 B/s .. 1 EB/s',
  },
  dramBandwidth: {
    unit: 'B/s', dimension: 'a bandwidth in bytes per second', example: '900 GB/s', plausible: [1e6, 1e14], plausibleText: '1 MB/s .. 100 TB/s', range: [1, 1e18], rangeText: '1 B/s .. 1 EB/s',
  },
  clock: { unit: 'Hz', dimension: 'a frequency', example: '940 MHz', plausible: [1e6, 1e10], plausibleText: '1 MHz .. 10 GHz', range: [1, 1e15], rangeText: '1 Hz .. 1 PHz' },
};

/** Largest profile file. */
const MAX_PROFILE_BYTES = 1024 * 1024;
/** Longest profile name (it is printed in summaries and reports). */
const MAX_NAME_CHARS = 100;
/** Bytes per element: up to a complex128 and then some. */
const MAX_ELEMENT_BYTES = 64;
/** DRAM words per cycle (bandwidth / clock / element bytes): outside, cycle counts overflow. */
const DRAM_WORDS_PER_CYCLE_RANGE: [number, number] = [1e-6, 1e12];
/** Vector unit bytes per cycle. */
const VECTOR_BYTES_PER_CYCLE_RANGE: [number, number] = [1e-3, 2 ** 40];
/** Most cores on one chip (an MI300X has 304 compute units; a wafer-scale part ~10^6). */
const MAX_CORES = 2 ** 20;
/** Vector ops per element of a class: a GELU is ~10; beyond this no op class is meant. */
const MAX_VECTOR_OPS_PER_ELEMENT = 1e6;

async function readQuantity(value: unknown, key: string, spec: QuantitySpec, file: string): Promise<number> {
  const example = `e.g. "${key}": "${spec.example}"`;
  if (typeof value === 'number' || (typeof value === 'string' && value.length <= 64 && /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i.test(value))) {
    throw new InputError(`${file}: key '${key}' is a bare number (${shown(String(value))}); write it with its unit, ${example}`);
  }
  if (typeof value !== 'string') throw new InputError(`${file}: key '${key}' must be ${spec.dimension} with its unit, ${example}`);
  let n: number;
  try {
    n = await parseQuantity(value, spec.unit);
  } catch {
    throw new InputError(`${file}: key '${key}': '${shown(value)}' is not ${spec.dimension}: a number and a unit (${example})`);
  }
  if (!(n > 0)) throw new InputError(`${file}: key '${key}' must be positive, got ${shown(value)}`);
  if (!(n >= spec.range[0] && n <= spec.range[1])) {
    throw new InputError(`${file}: key '${key}' is ${shown(value)}, outside ${spec.rangeText}`);
  }
  return n;
}

/** `warnings` collects non-fatal findings (implausible values) for the caller to show. */
export async function parseHardwareProfile(raw: unknown, file: string, fallbackName: string, warnings?: string[]): Promise<HardwareProfile> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InputError(`${file}: a hardware profile must be a JSON object`);
  }
  const obj = raw as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!(KEYS as readonly string[]).includes(key)) throw new InputError(`${file}: unknown key '${shown(key)}'`);
  }
  // Quantities are parsed up front (parseQuantity may need to load mathjs, which is async).
  const quantities = new Map<string, number>();
  for (const [key, spec] of Object.entries(QUANTITY_KEYS)) {
    if (!(key in obj)) continue;
    const value = await readQuantity(obj[key], key, spec, file);
    quantities.set(key, value);
    if (value > 0 && (value < spec.plausible[0] || value > spec.plausible[1])) {
      warnings?.push(`${file}: key '${key}' is ${String(obj[key])}, outside the plausible ${spec.plausibleText}; check its unit`);
    }
  }

  const required = (key: (typeof KEYS)[number]): unknown => {
    if (!(key in obj) && !OPTIONAL_KEYS.has(key)) throw new InputError(`${file}: missing key '${key}'`);
    return obj[key];
  };
  /** A positive number (or quantity in `unitName`); integers must be exact doubles up to `max`. */
  const positive = (key: (typeof KEYS)[number], unitName: string | undefined, integer: boolean, max = Number.MAX_SAFE_INTEGER): number => {
    const value = required(key);
    let n: number;
    if (unitName !== undefined) n = mapGet(quantities, key, 'profile quantities'); // read (and checked) above
    else if (typeof value === 'number') n = value;
    else throw new InputError(`${file}: key '${key}' must be a plain integer, e.g. "${key}": 128`);
    if (!Number.isFinite(n) || n <= 0) throw new InputError(`${file}: key '${key}' must be positive, got ${shown(String(value))}`);
    if (integer && !Number.isInteger(n)) throw new InputError(`${file}: key '${key}' must be an integer, got ${shown(String(value))}`);
    if (n > max) throw new InputError(`${file}: key '${key}' must be at most ${max}, got ${shown(String(value))}`);
    return n;
  };
  /** SRAM bytes; every array's share must hold MIN_SRAM_WORDS words, or the buffers never progress. */
  const sram = (key: 'ifmapSram' | 'filterSram' | 'ofmapSram'): number => {
    const bytes = positive(key, 'B', true);
    const minBytes = MIN_SRAM_WORDS * elementBytes * arrays;
    if (bytes < minBytes) {
      throw new InputError(
        `${file}: key '${key}' is ${bytes} bytes; it must hold at least ${MIN_SRAM_WORDS} words of ${elementBytes} byte(s) per array (${minBytes} bytes)`,
      );
    }
    return bytes;
  };
  const dataflow = required('dataflow');
  if (dataflow !== 'os' && dataflow !== 'ws' && dataflow !== 'is') {
    throw new InputError(`${file}: key 'dataflow' must be "os", "ws" or "is"`);
  }
  const bandwidthMode = required('bandwidthMode');
  if (bandwidthMode !== 'calc' && bandwidthMode !== 'user') {
    throw new InputError(`${file}: key 'bandwidthMode' must be "calc" or "user"`);
  }
  const name = obj['name'] ?? fallbackName;
  if (typeof name !== 'string' || name === '') throw new InputError(`${file}: key 'name' must be a non-empty string`);
  // The name is printed in summaries and reports: no control characters, no screenful.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  if (name.length > MAX_NAME_CHARS || /[\u0000-\u001f\u007f-\u009f]/.test(name)) {
    throw new InputError(`${file}: key 'name' must be at most ${MAX_NAME_CHARS} printable characters, got '${shown(name)}'`);
  }
  const source = required('source');
  if (typeof source !== 'string') throw new InputError(`${file}: key 'source' must be a string`);

  const clockHz = positive('clock', 'Hz', false);
  const elementBytes = positive('elementBytes', undefined, true, MAX_ELEMENT_BYTES);
  const dramBytesPerSecond = positive('dramBandwidth', 'B/s', false);
  const arrays = positive('arrays', undefined, true, MAX_ARRAY_DIM);
  const cores = 'cores' in obj ? positive('cores', undefined, true, MAX_CORES) : undefined;
  for (const key of ['l2Sram', 'l2Bandwidth'] as const) {
    if (key in obj && cores === undefined) throw new InputError(`${file}: key '${key}' describes a chip's shared L2 and needs key 'cores' (e.g. "cores": 108)`);
  }
  if (('l2Sram' in obj) !== ('l2Bandwidth' in obj)) {
    throw new InputError(`${file}: key '${'l2Sram' in obj ? 'l2Bandwidth' : 'l2Sram'}' is missing; an L2 needs both 'l2Sram' and 'l2Bandwidth'`);
  }
  const wordsPerCycle = dramBytesPerSecond / clockHz / elementBytes;
  if (!(wordsPerCycle >= DRAM_WORDS_PER_CYCLE_RANGE[0] && wordsPerCycle <= DRAM_WORDS_PER_CYCLE_RANGE[1])) {
    throw new InputError(
      `${file}: keys 'dramBandwidth' / 'clock' / 'elementBytes' give ${wordsPerCycle.toPrecision(3)} DRAM words per cycle, ` +
        `outside ${DRAM_WORDS_PER_CYCLE_RANGE[0]} .. ${DRAM_WORDS_PER_CYCLE_RANGE[1]}`,
    );
  }
  const dramBandwidthWordsPerCycle = snapToInteger(wordsPerCycle);
  const allArrays = arrays * (cores ?? 1);
  if (bandwidthMode === 'user' && dramBandwidthWordsPerCycle / allArrays < 1) {
    throw new InputError(
      `${file}: key 'dramBandwidth' gives ${dramBandwidthWordsPerCycle.toPrecision(3)} words/cycle for ${allArrays} array(s); ` +
        `bandwidthMode "user" needs at least 1 word/cycle per array`,
    );
  }
  const l2Bytes = 'l2Sram' in obj ? positive('l2Sram', 'B', true) : undefined;
  const l2BytesPerCycle = 'l2Bandwidth' in obj ? mapGet(quantities, 'l2Bandwidth', 'profile quantities') / clockHz : undefined;
  const vectorLanes = 'vectorLanes' in obj ? positive('vectorLanes', undefined, true, MAX_ARRAY_DIM * MAX_ARRAY_DIM) : undefined;
  const vectorBytesPerCycle = 'vectorBytesPerCycle' in obj ? positive('vectorBytesPerCycle', undefined, false, VECTOR_BYTES_PER_CYCLE_RANGE[1]) : undefined;
  if (vectorBytesPerCycle !== undefined && vectorBytesPerCycle < VECTOR_BYTES_PER_CYCLE_RANGE[0]) {
    throw new InputError(`${file}: key 'vectorBytesPerCycle' must be at least ${VECTOR_BYTES_PER_CYCLE_RANGE[0]}, got ${vectorBytesPerCycle}`);
  }
  const vectorOpsPerElement = 'vectorOpsPerElement' in obj ? opsTable(obj['vectorOpsPerElement'], file) : undefined;
  return {
    name,
    source,
    arrayRows: positive('arrayRows', undefined, true, MAX_ARRAY_DIM),
    arrayCols: positive('arrayCols', undefined, true, MAX_ARRAY_DIM),
    arrays,
    dataflow: dataflow as Dataflow,
    ifmapSramBytes: sram('ifmapSram'),
    filterSramBytes: sram('filterSram'),
    ofmapSramBytes: sram('ofmapSram'),
    bandwidthMode: bandwidthMode as BandwidthMode,
    dramBandwidthWordsPerCycle,
    clockMHz: clockHz / 1e6,
    elementBytes,
    ...(vectorLanes !== undefined ? { vectorLanes } : {}),
    ...(vectorBytesPerCycle !== undefined ? { vectorBytesPerCycle } : {}),
    ...(vectorOpsPerElement !== undefined ? { vectorOpsPerElement } : {}),
    ...(cores !== undefined ? { cores } : {}),
    ...(l2Bytes !== undefined ? { l2Bytes } : {}),
    ...(l2BytesPerCycle !== undefined ? { l2BytesPerCycle } : {}),
  };
}

/** `{ "gelu": { "fwd": 8, "bwd": 12 }, ... }`: per op class, any of fwd / bwd / wg (ops per element, >= 0); the rest keep their default. */
function opsTable(raw: unknown, file: string): Partial<Record<VectorOpClass, VectorOpsPerElement>> {
  const where = `${file}: key 'vectorOpsPerElement'`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InputError(`${where} must be an object of op classes (${VECTOR_OP_CLASSES.join(', ')})`);
  const table: Partial<Record<VectorOpClass, VectorOpsPerElement>> = {};
  for (const [cls, entry] of Object.entries(raw)) {
    if (!(VECTOR_OP_CLASSES as readonly string[]).includes(cls)) throw new InputError(`${where}: unknown op class '${shown(cls)}' (known: ${VECTOR_OP_CLASSES.join(', ')})`);
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new InputError(`${where}: '${shown(cls)}' must be an object with fwd, bwd and/or wg`);
    const ops = { ...VECTOR_OPS_PER_ELEMENT[cls as VectorOpClass] };
    for (const [pass, value] of Object.entries(entry)) {
      if (pass !== 'fwd' && pass !== 'bwd' && pass !== 'wg') throw new InputError(`${where}: '${cls}': unknown pass '${shown(pass)}' (fwd, bwd, wg)`);
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_VECTOR_OPS_PER_ELEMENT) {
        throw new InputError(`${where}: '${cls}.${pass}' must be a number from 0 to ${MAX_VECTOR_OPS_PER_ELEMENT}`);
      }
      ops[pass] = value;
    }
    table[cls as VectorOpClass] = ops;
  }
  return table;
}

/** Unit conversions leave 15.999999999999998 where 16 was meant; SCALE-sim's bandwidth is an integer. */
function snapToInteger(x: number): number {
  const nearest = Math.round(x);
  return Math.abs(x - nearest) <= 1e-9 * Math.max(1, Math.abs(x)) ? nearest : x;
}
