/**
 * SCALE-sim v2 topology CSVs, parsed with SCALE-sim's own rules (`topology_utils.py`,
 * docs/scalesim-model.md §2), so that a file means here exactly what it means to SCALE-sim:
 * - the first line is a header and is always skipped; blank lines are skipped;
 * - each row is split on ',' and the LAST FIELD IS DROPPED (rows must end with a comma);
 * - conv rows: name, H, W, R, S, C, N, stride[, strideW]; one stride is used for both;
 *   a name containing "DP" expands into C depthwise layers with C = 1 ("<name>Channel_<i>");
 * - `--gemm` rows: name, M, N, K -> the conv layer H=M, W=K, R=1, S=K, C=1, N, stride 1;
 * - the ofmap size is ceil((H - R + s) / s): no padding, but a ceiling.
 * Where SCALE-sim would crash (missing fields, non-integers) we throw an InputError instead.
 */
import { InputError, shown } from '../errors.js';
import { readRegularFile } from '../files.js';
import { type ConvShape, type LayerGeometry, convGeometry, gemmConvShape } from '../cost/access/layer.js';

export type TopologyFormat = 'conv' | 'gemm';

export interface TopologyLayer {
  name: string;
  conv: ConvShape;
  geometry: LayerGeometry;
}

/** Python's int() on a stripped field: optional sign, digits, single underscores between. */
function parseInt10(field: string, where: string, what: string): number {
  const text = field.trim();
  if (!/^[+-]?\d+(_\d+)*$/.test(text)) throw new InputError(`${where}: ${what} '${shown(text)}' is not an integer`);
  const value = Number(text.replace(/_/g, ''));
  if (!Number.isSafeInteger(value) || value <= 0) throw new InputError(`${where}: ${what} must be a positive integer, got '${shown(text)}'`);
  return value;
}

const MAX_IFMAP_WORDS = 2 ** 31 - 1;
/**
 * Largest GEMM M (ofmap pixels) and K (filter window) simulated: the memory walk keeps three
 * 4-byte arrays of each (cost/access/layer.ts), so a 40,000 x 40,000 conv (M = 1.6e9) needed 19 GB and
 * failed to allocate (exit 1). 2^26 rows is 768 MiB; the largest SCALE-sim topology (UNet, 4k
 * images) has M = 4,177,936.
 */
const MAX_GEMM_ROWS = 2 ** 26;
/** Largest topology: layers after "DP" expansion (writing the reports of 100,000 took 19 s), and bytes of the file. */
const MAX_TOPOLOGY_LAYERS = 20_000;
const MAX_TOPOLOGY_BYTES = 64 * 1024 * 1024;
/** A "DP" row becomes `channels` layers, each simulated and reported: a bound on that loop. */
const MAX_DEPTHWISE_CHANNELS = 1 << 16;

const CONV_FIELDS = ['IFMAP height', 'IFMAP width', 'filter height', 'filter width', 'channels', 'num filter', 'stride'];

function convRow(fields: string[], where: string): ConvShape {
  if (fields.length < 8) {
    throw new InputError(
      `${where}: expected name and 7 numbers, each followed by a comma (SCALE-sim drops the last field); got ${fields.length} field(s)`,
    );
  }
  const v = fields.slice(1).map((f, i) => parseInt10(f, where, CONV_FIELDS[i] ?? `field ${i + 2}`));
  const [ifmapHeight, ifmapWidth, filterHeight, filterWidth, channels, numFilters, strideHeight, strideWidth = strideHeight] = v;
  if (
    ifmapHeight === undefined || ifmapWidth === undefined || filterHeight === undefined || filterWidth === undefined ||
    channels === undefined || numFilters === undefined || strideHeight === undefined || strideWidth === undefined
  ) {
    throw new InputError(`${where}: expected name and 7 numbers; got ${fields.length} field(s)`);
  }
  return checkedConv({ ifmapHeight, ifmapWidth, filterHeight, filterWidth, channels, numFilters, strideHeight, strideWidth }, where);
}

/** The bounds of a layer, conv or `--gemm` row alike. */
function checkedConv(conv: ConvShape, where: string): ConvShape {
  if (conv.filterHeight > conv.ifmapHeight) throw new InputError(`${where}: filter height cannot be larger than IFMAP height`);
  if (conv.filterWidth > conv.ifmapWidth) throw new InputError(`${where}: filter width cannot be larger than IFMAP width`);
  // im2col addresses are kept in Int32Arrays (cost/access/layer.ts): the IFMAP must fit their range.
  const ifmapWords = conv.ifmapHeight * conv.ifmapWidth * conv.channels;
  if (ifmapWords > MAX_IFMAP_WORDS) {
    throw new InputError(`${where}: IFMAP of ${ifmapWords} words is beyond the ${MAX_IFMAP_WORDS}-word address range simulated`);
  }
  const { gemm } = convGeometry(conv);
  const sides: [string, number][] = [['M (ofmap pixels)', gemm.m], ['K (filter window)', gemm.k]];
  for (const [side, words] of sides) {
    if (words > MAX_GEMM_ROWS) {
      throw new InputError(`${where}: the layer's GEMM ${gemm.m}x${gemm.n}x${gemm.k} has ${side} ${words}, more than the ${MAX_GEMM_ROWS} the memory walk simulates`);
    }
  }
  return conv;
}

function gemmRow(fields: string[], where: string): ConvShape {
  if (fields.length < 4) {
    throw new InputError(`${where}: expected 'name, M, N, K,' (SCALE-sim drops the last field); got ${fields.length} field(s)`);
  }
  // The length check above makes every field present; a missing one would fail as '' (not an integer).
  const m = parseInt10(fields[1] ?? '', where, 'M');
  const n = parseInt10(fields[2] ?? '', where, 'N');
  const k = parseInt10(fields[3] ?? '', where, 'K');
  return checkedConv(gemmConvShape({ m, n, k }), where);
}

function layer(name: string, conv: ConvShape): TopologyLayer {
  return { name, conv, geometry: convGeometry(conv) };
}

export function parseTopology(text: string, file: string, format: TopologyFormat): TopologyLayer[] {
  const layers: TopologyLayer[] = [];
  const lines = text.split(/\r\n|\r|\n/);
  const tooMany = (): InputError => new InputError(`${file}: more than ${MAX_TOPOLOGY_LAYERS} layers (the limit of a topology)`);
  if (lines.length > MAX_TOPOLOGY_LAYERS + 2) throw tooMany();
  // A trailing newline does not start another line for Python's file iterator.
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((raw, index) => {
    const row = raw.trim();
    if (index === 0 || row === '') return;
    const where = `${file}:${index + 1}`;
    const fields = row.split(',').slice(0, -1);
    if (format === 'gemm') {
      layers.push(layer(fields[0]?.trim() ?? '', gemmRow(fields, where)));
      return;
    }
    const name = fields[0]?.trim();
    if (name === undefined) throw new InputError(`${where}: no comma-separated fields (is the file tab-separated?)`);
    if (name.includes('DP')) {
      const channels = parseInt10(fields[5] ?? '', where, 'channels');
      if (channels > MAX_DEPTHWISE_CHANNELS) {
        throw new InputError(`${where}: a "DP" layer expands into one layer per channel; ${channels} channels is more than ${MAX_DEPTHWISE_CHANNELS}`);
      }
      const perChannel = [...fields];
      perChannel[5] = '1';
      const conv = convRow(perChannel, where);
      if (layers.length + channels > MAX_TOPOLOGY_LAYERS) throw tooMany();
      for (let c = 0; c < channels; c++) layers.push(layer(`${name}Channel_${c}`, conv));
      return;
    }
    layers.push(layer(name, convRow(fields, where)));
  });
  if (layers.length === 0) throw new InputError(`${file}: topology has no layers`);
  return layers;
}

export function readTopology(path: string, format: TopologyFormat): TopologyLayer[] {
  return parseTopology(readRegularFile(path, path, 'topology', MAX_TOPOLOGY_BYTES), path, format);
}
