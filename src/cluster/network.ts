/**
 * A cluster and a plan's world -> ASTRA-sim 2.x's network dimensions. ASTRA-sim numbers NPUs with
 * the first dimension fastest (NPU id = i0 + n0 x (i1 + n1 x ...): astra-network-analytical
 * congestion_unaware/multi-dim-topology/MultiDimTopology.cpp:61-66, translate_address), and the plan numbers ranks
 * with the tensor rank fastest (rank = t + T x (d + D x p), plan/world.ts), so rank r is NPU r:
 * the first dimensions are a node's devices and a TP group of T ranks stays inside a node when T
 * divides the devices per node.
 */
import { InputError } from '../errors.js';
import type { WorldShape } from '../plan/types.js';
import { enumerateGroups, worldSize } from '../plan/world.js';
import { axesOf } from '../plan/axes.js';
import type { Cluster, ClusterNetwork, NetworkDimension, NetworkTopology } from './types.js';

/** ASTRA-sim reads GB/s with 1 GB = 2^30 B (astra-network-analytical common/NetworkFunction.cpp:11-16). */
const BYTES_PER_ASTRA_GB = 2 ** 30;

const collectiveOf = (topology: NetworkTopology): 'ring' | 'direct' => (topology === 'FullyConnected' ? 'direct' : 'ring');

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** Rounded to 1e-6 GB/s so the YAML holds a short exact decimal. */
const toAstraGBps = (bytesPerSec: number): number => Math.round((bytesPerSec / BYTES_PER_ASTRA_GB) * 1e6) / 1e6;

/** The devices of one node that a world of `ranks` uses, as dimensions (a torus: a ring per axis it spans). */
function nodeDimensions(cluster: Cluster, ranks: number): NetworkDimension[] {
  const { intraNode } = cluster;
  const bandwidthGBps = toAstraGBps(intraNode.bandwidthBytesPerSec);
  if (intraNode.topology !== 'Torus') return [{ topology: intraNode.topology, npus: ranks, bandwidthGBps, latencyNs: intraNode.latencyNs, label: 'intra-node', collective: collectiveOf(intraNode.topology) }];
  // A torus slice: the ranks fill the x axis first (the TP group), then y, then z; each axis a
  // ring (the ICI wrap-around links). An axis the slice does not span is left out.
  const dims: NetworkDimension[] = [];
  let rest = ranks;
  (intraNode.shape ?? []).forEach((length, axis) => {
    const used = gcd(rest, length);
    rest /= used;
    if (used > 1) dims.push({ topology: 'Ring', npus: used, bandwidthGBps, latencyNs: intraNode.latencyNs, label: `torus axis ${'xyz'[axis]}`, collective: 'ring' });
  });
  if (rest !== 1) throw new InputError(`--cluster ${cluster.name}: a world of ${ranks} ranks is no slice of the ${(intraNode.shape ?? []).join(' x ')} torus (each axis' share must divide its length)`);
  return dims.length > 0 ? dims : [{ topology: 'Ring', npus: 1, bandwidthGBps, latencyNs: intraNode.latencyNs, label: 'torus axis x', collective: 'ring' }];
}

export function clusterNetwork(cluster: Cluster, world: WorldShape): ClusterNetwork {
  const ranks = worldSize(world);
  const perNode = cluster.devicesPerNode;
  const warnings: string[] = [];
  let dimensions: NetworkDimension[];
  if (ranks <= perNode) dimensions = nodeDimensions(cluster, ranks);
  else {
    if (ranks % perNode !== 0) throw new InputError(`--cluster ${cluster.name}: a world of ${ranks} ranks does not fill whole nodes of ${perNode} devices (give a multiple of ${perNode})`);
    const nodes = ranks / perNode;
    if (nodes > cluster.maxNodes) throw new InputError(`--cluster ${cluster.name}: a world of ${ranks} ranks needs ${nodes} nodes; the cluster has ${cluster.maxNodes}`);
    const scaleOut = cluster.scaleOut;
    if (scaleOut === undefined) throw new InputError(`--cluster ${cluster.name}: a world of ${ranks} ranks needs more than one node and the cluster has no scale-out network`);
    // Rail-optimised: each device has its share of the node's NICs (one NIC per GPU on a DGX).
    const perDevice = (cluster.nicsPerNode * cluster.nicBandwidthBytesPerSec) / perNode;
    dimensions = [...nodeDimensions(cluster, perNode), { topology: scaleOut.topology, npus: nodes, bandwidthGBps: toAstraGBps(perDevice), latencyNs: scaleOut.latencyNs, label: 'scale-out', collective: collectiveOf(scaleOut.topology) }];
  }
  const product = dimensions.reduce((a, d) => a * d.npus, 1);
  if (product !== ranks) throw new Error(`internal error: network dimensions ${dimensions.map((d) => d.npus).join(' x ')} = ${product} for ${ranks} ranks`);
  // A TP group is inside one node when all its members are (--order may space them out).
  const nodeRanks = Math.min(ranks, perNode);
  const spanned = Math.max(1, ...enumerateGroups(world, ['tp']).map((g) => new Set(g.ranks.map((r) => Math.floor(r / nodeRanks))).size));
  if (spanned > 1) {
    warnings.push(`warning: tp-straddles-nodes: a TP group of ${world.tp} ranks spans ${spanned} nodes of ${perNode} devices on ${cluster.name}; its collectives cross the scale-out network (make --tp divide ${perNode}${axesOf(world).order[0] === 'tp' ? '' : ', with tp first in --order'})`);
  }
  return { cluster: cluster.name, dimensions, warnings };
}
