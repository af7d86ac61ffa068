/**
 * A cluster's network for one world (cluster/network.ts) -> ASTRA-sim 2.x's three configuration
 * files beside the traces: PREFIX.network.yml, PREFIX.system.json, PREFIX.remote_memory.json.
 */
import type { ClusterNetwork } from '../cluster/types.js';
import type { OutputFile } from './output.js';

/** The YAML lists astra-network-analytical reads: common/network-parser/NetworkParser.cpp:66-80 (topology, npus_count, bandwidth GB/s, latency ns). */
export function networkYaml(network: ClusterNetwork): string {
  const dims = network.dimensions;
  const list = (values: (string | number)[]): string => `[ ${values.join(', ')} ]`;
  return [
    `# modtrans: cluster ${network.cluster}, ${dims.reduce((a, d) => a * d.npus, 1)} NPUs; dimensions: ${dims.map((d) => d.label).join(', ')}`,
    `topology: ${list(dims.map((d) => d.topology))}`,
    `npus_count: ${list(dims.map((d) => d.npus))}`,
    `bandwidth: ${list(dims.map((d) => d.bandwidthGBps))}  # GB/s (1 GB = 2^30 B)`,
    `latency: ${list(dims.map((d) => d.latencyNs))}  # ns`,
    '',
  ].join('\n');
}

/**
 * system.json (astra-sim system/Sys.cc:325-390 reads the keys; the *-implementation lists, one
 * entry per network dimension, system/astraccl/CollectiveImplLookup.cc:97-160). The scalar keys
 * are examples/astra-sim/system.json's (ASTRA-sim's own examples): LIFO scheduling, one active
 * chunk per dimension, 4 dataset splits, local-bandwidth-aware collectives.
 */
export function systemJson(network: ClusterNetwork): string {
  const algorithms = network.dimensions.map((d) => d.collective);
  const system = {
    'scheduling-policy': 'LIFO',
    'endpoint-delay': 10,
    'active-chunks-per-dimension': 1,
    'preferred-dataset-splits': 4,
    'all-reduce-implementation': algorithms,
    'all-gather-implementation': algorithms,
    'reduce-scatter-implementation': algorithms,
    'all-to-all-implementation': algorithms,
    'collective-optimization': 'localBWAware',
    'local-mem-bw': 1600,
    'boost-mode': 0,
  };
  return `${JSON.stringify(system, null, 2)}\n`;
}

/** No memory expansion (astra-sim examples/remote_memory/analytical/no_memory_expansion.json). */
export function remoteMemoryJson(): string {
  return `${JSON.stringify({ 'memory-type': 'NO_MEMORY_EXPANSION' }, null, 2)}\n`;
}

/** The file names beside a trace prefix. */
export const NETWORK_CONFIG_SUFFIXES = ['network.yml', 'system.json', 'remote_memory.json'] as const;

export function networkConfigFiles(network: ClusterNetwork, prefix: string): OutputFile[] {
  return [
    { path: `${prefix}.network.yml`, bytes: networkYaml(network) },
    { path: `${prefix}.system.json`, bytes: systemJson(network) },
    { path: `${prefix}.remote_memory.json`, bytes: remoteMemoryJson() },
  ];
}
