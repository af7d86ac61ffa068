/**
 * Clusters: the shipped files parse (every figure sourced), a bad file is one line naming the file
 * and the field, and a cluster over a plan's world gives ASTRA-sim dimensions whose sizes multiply
 * to the world size in the plan's rank order (rank = t + T x (d + D x p), TP fastest).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterNetwork } from '../../src/cluster/network.js';
import { loadCluster, parseCluster, shippedClusterNames } from '../../src/cluster/parse.js';
import { InputError } from '../../src/errors.js';
import { networkYaml, systemJson } from '../../src/writers/astra-network.js';

const GB = 2 ** 30; // ASTRA-sim's GB (astra-network-analytical common/NetworkFunction.cpp:14)

describe('shipped clusters', () => {
  it('are the three the issue names, each with a source per figure', () => {
    expect(shippedClusterNames()).toEqual(['dgx-a100-superpod', 'dgx-h100', 'tpu-v4-pod']);
    for (const name of shippedClusterNames()) expect(Object.keys(loadCluster(name).source).length).toBeGreaterThanOrEqual(3);
  });

  it('dgx-a100-superpod is Selene as SC21 describes it: 8 A100 on NVSwitch (300 GB/s each way), 8 x 200 Gb/s HDR per node', () => {
    const c = loadCluster('dgx-a100-superpod');
    expect(c.devicesPerNode).toBe(8);
    expect(c.intraNode).toMatchObject({ topology: 'Switch', bandwidthBytesPerSec: 300e9 });
    expect(c.nicsPerNode).toBe(8);
    expect(c.nicBandwidthBytesPerSec).toBe(200e9 / 8);
    expect(c.scaleOut?.topology).toBe('Switch');
  });
});

describe('cluster files are read strictly', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modtrans-cluster-'));
  const good = { name: 'x', devicesPerNode: 8, intraNode: { topology: 'Switch', bandwidth: '300 GB/s', latency: '700 ns' }, nicsPerNode: 8, nicBandwidth: '200 Gb/s', scaleOut: { topology: 'Switch', latency: '2 us' }, maxNodes: 4, source: { devicesPerNode: 'a', intraNode: 'b', nicsPerNode: 'c', nicBandwidth: 'd', scaleOut: 'e', maxNodes: 'f' } };
  const cases: [string, unknown, RegExp][] = [
    ['an unknown key', { ...good, gpus: 8 }, /bad\.json: gpus is not a cluster field/],
    ['a bandwidth without unit', { ...good, nicBandwidth: 200 }, /bad\.json: nicBandwidth must be a bandwidth such as "300 GB\/s"/],
    ['a bad topology', { ...good, intraNode: { ...good.intraNode, topology: 'Mesh' } }, /bad\.json: intraNode\.topology must be one of Ring, Switch, FullyConnected, Torus/],
    ['a non-integer count', { ...good, devicesPerNode: 2.5 }, /bad\.json: devicesPerNode must be an integer/],
    ['a figure without source', { ...good, source: { ...good.source, nicBandwidth: undefined } }, /bad\.json: source\.nicBandwidth is missing/],
    ['a torus whose shape is not the node', { ...good, intraNode: { topology: 'Torus', shape: [2, 2], bandwidth: '50 GB/s', latency: '1 us' } }, /bad\.json: intraNode\.shape \[2,2\] holds 4 devices, devicesPerNode is 8/],
  ];
  for (const [what, raw, message] of cases) {
    it(`${what}: one InputError naming the file and field`, () => {
      const path = join(dir, 'bad.json');
      writeFileSync(path, JSON.stringify(raw));
      expect(() => loadCluster(path)).toThrow(InputError);
      expect(() => loadCluster(path)).toThrow(message);
    });
  }
  it('an unknown name lists the shipped ones', () => {
    expect(() => loadCluster('selene')).toThrow(/--cluster selene: no such cluster \(shipped: dgx-a100-superpod, dgx-h100, tpu-v4-pod/);
  });
  it('a good file parses (bandwidths in bytes/s, latencies in ns)', () => {
    const c = parseCluster(good, 'good.json', 'good');
    expect(c.scaleOut).toEqual({ topology: 'Switch', latencyNs: 2000 });
  });
  it('a latency in µs (the micro sign, U+00B5) is microseconds, as "us" is', () => {
    const c = parseCluster({ ...good, scaleOut: { topology: 'Switch', latency: '2.5 \u00b5s' } }, 'good.json', 'good');
    expect(c.scaleOut).toEqual({ topology: 'Switch', latencyNs: 2500 });
  });
});

describe('a cluster over a world', () => {
  const a100 = loadCluster('dgx-a100-superpod');
  const product = (dims: { npus: number }[]): number => dims.reduce((a, d) => a * d.npus, 1);

  it('8 ranks: one NVSwitch dimension of 8 at 300 GB/s (in 2^30-byte GB)', () => {
    const n = clusterNetwork(a100, { tp: 4, dp: 2, pp: 1 });
    expect(n.dimensions.map((d) => [d.topology, d.npus])).toEqual([['Switch', 8]]);
    expect(n.dimensions[0]?.bandwidthGBps).toBeCloseTo(300e9 / GB, 5);
    expect(n.warnings).toEqual([]);
  });

  it('64 and 1,024 ranks: [Switch 8, Switch N/8], the scale-out share one HDR NIC per GPU (25 GB/s)', () => {
    for (const world of [{ tp: 8, dp: 4, pp: 2 }, { tp: 8, dp: 8, pp: 16 }]) {
      const n = clusterNetwork(a100, world);
      const ranks = world.tp * world.dp * world.pp;
      expect(n.dimensions.map((d) => d.npus)).toEqual([8, ranks / 8]);
      expect(product(n.dimensions)).toBe(ranks);
      expect(n.dimensions[1]?.bandwidthGBps).toBeCloseTo((8 * 25e9) / 8 / GB, 5);
      expect(n.warnings).toEqual([]);
    }
  });

  it('rank order: a TP group (consecutive ranks) shares a node exactly when T divides 8', () => {
    // ASTRA-sim's NPU id i0 + 8 x i1 (MultiDimTopology.cpp:61-66): ranks r and r' share a node iff floor(r / 8) agree.
    for (const tp of [1, 2, 4, 8, 16, 3, 6]) {
      const world = { tp, dp: 48 / tp, pp: 1 }; // every T listed divides 48 (6 nodes)
      const straddles = Array.from({ length: 48 / tp }, (_, g) => g * tp).some((first) => Math.floor(first / 8) !== Math.floor((first + tp - 1) / 8));
      const n = clusterNetwork(a100, world);
      expect(n.warnings.some((w) => w.includes('tp-straddles-nodes')), `tp ${tp}`).toBe(straddles || tp > 8);
    }
  });

  it('a world that does not fill whole nodes, or needs more nodes than the cluster has, is an input error', () => {
    expect(() => clusterNetwork(a100, { tp: 4, dp: 3, pp: 1 })).toThrow(/a world of 12 ranks does not fill whole nodes of 8 devices/);
    expect(() => clusterNetwork(a100, { tp: 8, dp: 561, pp: 1 })).toThrow(/needs 561 nodes; the cluster has 560/);
  });

  it('tpu-v4-pod: a slice fills the torus axes x, y, z in turn, a ring per axis', () => {
    const pod = loadCluster('tpu-v4-pod');
    expect(clusterNetwork(pod, { tp: 4, dp: 2, pp: 1 }).dimensions.map((d) => [d.topology, d.npus])).toEqual([['Ring', 8]]);
    expect(clusterNetwork(pod, { tp: 16, dp: 4, pp: 16 }).dimensions.map((d) => [d.topology, d.npus])).toEqual([['Ring', 16], ['Ring', 16], ['Ring', 4]]);
    expect(() => clusterNetwork(pod, { tp: 1, dp: 3 * 4096, pp: 1 })).toThrow(/needs 3 nodes; the cluster has 1/);
  });

  it('network.yml has the four lists NetworkParser.cpp reads, one entry per dimension; system.json an algorithm per dimension', () => {
    const n = clusterNetwork(a100, { tp: 8, dp: 8, pp: 1 });
    const yaml = networkYaml(n);
    expect(yaml).toMatch(/^topology: \[ Switch, Switch \]$/m);
    expect(yaml).toMatch(/^npus_count: \[ 8, 8 \]$/m);
    expect(yaml).toMatch(/^latency: \[ 700, 2000 \] {2}# ns$/m);
    const system = JSON.parse(systemJson(n));
    for (const key of ['all-reduce-implementation', 'all-gather-implementation', 'reduce-scatter-implementation', 'all-to-all-implementation']) expect(system[key]).toEqual(['ring', 'ring']);
  });
});
