/**
 * A cluster: the machines a plan's ranks run on, as ASTRA-sim 2.x's analytical network sees them.
 * Read from `clusters/NAME.json` or a user's file (cluster/parse.ts); turned into the network's
 * dimensions for one world by cluster/network.ts.
 */

/** ASTRA-sim's analytical building blocks (astra-network-analytical common/network-parser/NetworkParser.cpp:86-99). */
export type NetworkTopology = 'Ring' | 'Switch' | 'FullyConnected';

/** The fabric inside a node: a switch (NVSwitch), links between every pair, a ring, or a torus (TPU ICI: a ring per axis). */
export interface IntraNodeFabric {
  topology: NetworkTopology | 'Torus';
  /** Torus only: devices along each axis; their product is the devices per node. */
  shape?: number[];
  /** One device's bandwidth into the fabric per direction (per link for a ring or torus axis), bytes/s. */
  bandwidthBytesPerSec: number;
  latencyNs: number;
}

export interface ScaleOut {
  /** A fat tree of full bisection is one switch to the analytical model. */
  topology: NetworkTopology;
  latencyNs: number;
}

export interface Cluster {
  name: string;
  /** Where each figure comes from, by field. */
  source: Record<string, string>;
  devicesPerNode: number;
  intraNode: IntraNodeFabric;
  nicsPerNode: number;
  /** One NIC's bandwidth per direction, bytes/s. */
  nicBandwidthBytesPerSec: number;
  /** Absent: one node is the whole machine (a TPU pod's torus). */
  scaleOut?: ScaleOut;
  /** The most nodes the machine has (a larger world does not fit). */
  maxNodes: number;
}

/** One dimension of ASTRA-sim's multi-dimensional network (network.yml's lists, one entry each). */
export interface NetworkDimension {
  topology: NetworkTopology;
  npus: number;
  /** GB/s as ASTRA-sim reads it: 1 GB = 2^30 B (astra-network-analytical common/NetworkFunction.cpp:11-16). */
  bandwidthGBps: number;
  latencyNs: number;
  /** What the dimension is: 'intra-node', 'torus axis x', 'scale-out' (a comment in network.yml). */
  label: string;
  /**
   * The collective algorithm ASTRA-sim runs on it (system.json's *-implementation lists,
   * astra-sim system/astraccl/CollectiveImplLookup.cc:22-40): a ring on rings and switches (NCCL's
   * ring, as Megatron-LM runs), direct on fully connected links.
   */
  collective: 'ring' | 'direct';
}

export interface ClusterNetwork {
  cluster: string;
  dimensions: NetworkDimension[];
  /** Warnings for the plan on this network (a TP group straddling nodes). */
  warnings: string[];
}
