/** SCALE-sim topology CSVs, parsed with SCALE-sim's own rules (docs/scalesim-model.md §2-3). */
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { parseTopology, readTopology } from '../../src/scalesim/topology.js';
import { FIXTURES } from './reference.js';

const HEADER = 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n';

describe('SCALE-sim topology parsing', () => {
  it('skips the header, drops the last field of each row and skips blank lines', () => {
    const layers = parseTopology(`${HEADER}\nConv1, 224, 224, 11, 11, 3, 96, 4,\n\n  fc, 1, 1, 1, 1, 4096, 1000, 1, \n`, 't.csv', 'conv');
    expect(layers.map((l) => l.name)).toEqual(['Conv1', 'fc']);
    // alexnet Conv1: ceil((224 - 11 + 4) / 4) = 55, not floor(213/4) + 1 = 54.
    expect(layers[0]?.geometry).toMatchObject({ ofmapHeight: 55, ofmapWidth: 55, gemm: { m: 3025, n: 96, k: 363 } });
    expect(layers[1]?.geometry.gemm).toEqual({ m: 1, n: 1000, k: 4096 });
  });

  it('loses the last number of a row without a trailing comma, as SCALE-sim does', () => {
    expect(() => parseTopology(`${HEADER}Conv1, 224, 224, 11, 11, 3, 96, 4\n`, 't.csv', 'conv')).toThrow(InputError);
    expect(() => parseTopology(`${HEADER}Conv1, 224, 224, 11, 11, 3, 96, 4\n`, 't.csv', 'conv')).toThrow(/t\.csv:2: expected name and 7 numbers/);
  });

  it('uses an 8th number as the column stride and one stride for both otherwise', () => {
    const [a, b] = parseTopology(`${HEADER}a, 10, 10, 2, 2, 1, 1, 2, 4,\nb, 10, 10, 2, 2, 1, 1, 3,\n`, 't.csv', 'conv');
    expect(a?.conv).toMatchObject({ strideHeight: 2, strideWidth: 4 });
    expect(a?.geometry).toMatchObject({ ofmapHeight: 5, ofmapWidth: 3 });
    expect(b?.conv).toMatchObject({ strideHeight: 3, strideWidth: 3 });
  });

  it('expands a "DP" layer into one single-channel layer per channel', () => {
    const layers = parseTopology(`${HEADER}Conv_DP1, 8, 8, 3, 3, 4, 1, 1,\n`, 't.csv', 'conv');
    expect(layers.map((l) => l.name)).toEqual(['Conv_DP1Channel_0', 'Conv_DP1Channel_1', 'Conv_DP1Channel_2', 'Conv_DP1Channel_3']);
    expect(layers[0]?.conv.channels).toBe(1);
    expect(layers[0]?.geometry.gemm).toEqual({ m: 36, n: 1, k: 9 });
    expect(() => parseTopology(`${HEADER}Conv_DP1, 8, 8, 3, 3, 1000000000, 1, 1,\n`, 't.csv', 'conv')).toThrow(/t\.csv:2: .*1000000000 channels/);
  });

  it('maps --gemm rows name, M, N, K to the 1 x K convolution (H=M, W=K, S=K)', () => {
    const [l] = parseTopology('Layer Name, M, N, K,\nTest 1, 128, 64, 256,\n', 'g.csv', 'gemm');
    expect(l?.name).toBe('Test 1');
    expect(l?.conv).toEqual({ ifmapHeight: 128, ifmapWidth: 256, filterHeight: 1, filterWidth: 256, channels: 1, numFilters: 64, strideHeight: 1, strideWidth: 1 });
    expect(l?.geometry.gemm).toEqual({ m: 128, n: 64, k: 256 });
  });

  it('reads every shipped topology SCALE-sim reads, and rejects the ones it crashes on', () => {
    for (const ok of ['conv_nets/alexnet.csv', 'conv_nets/mobilenet.csv', 'conv_nets/yolo_tiny.csv', 'dlrm/dlrm_fwd.csv', 'resnet/resnet_fwd.csv']) {
      expect(readTopology(`${FIXTURES}topologies/${ok}`, 'conv').length).toBeGreaterThan(0);
    }
    expect(readTopology(`${FIXTURES}topologies/GEMM_mnk/gpt2.csv`, 'gemm').length).toBeGreaterThan(0);
    // RUNTIMES.csv status "error": missing trailing commas, empty extra columns, tab-separated.
    for (const bad of ['MobileNet_4k_non_dw.csv', 'mobilnet_4k.csv', 'mobilnet_reduce_run.csv', 'Resnet50.csv', 'UNet_maestro.csv']) {
      expect(() => readTopology(`${FIXTURES}topologies/conv_nets/${bad}`, 'conv'), bad).toThrow(InputError);
    }
  });

  it('rejects filters larger than the input, non-integers and missing files', () => {
    expect(() => parseTopology(`${HEADER}x, 3, 3, 5, 1, 1, 1, 1,\n`, 't.csv', 'conv')).toThrow(/filter height cannot be larger/);
    expect(() => parseTopology(`${HEADER}x, 3, 3.5, 1, 1, 1, 1, 1,\n`, 't.csv', 'conv')).toThrow(/'3\.5' is not an integer/);
    expect(() => parseTopology(`${HEADER}x, 3, 3, 1, 1, 1, 1, 0,\n`, 't.csv', 'conv')).toThrow(/must be a positive integer/);
    expect(() => parseTopology(HEADER, 't.csv', 'conv')).toThrow(/no layers/);
    // im2col addresses are 32-bit: a larger IFMAP is refused, not silently wrapped.
    expect(() => parseTopology(`${HEADER}x, 65536, 65536, 3, 3, 1, 1, 1,\n`, 't.csv', 'conv')).toThrow(/t\.csv:2: IFMAP of 4294967296 words/);
    expect(() => readTopology(`${FIXTURES}nope.csv`, 'conv')).toThrow(/cannot read topology \(no such file\)/);
  });
});
