/**
 * Cluster files (`clusters/NAME.json` or `--cluster FILE.json`), read strictly: every key known,
 * every figure a number with its unit ("300 GB/s", "200 Gb/s", "700 ns"), every count a positive
 * integer. A bad file is one InputError naming the file and the field.
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { InputError, shown } from '../errors.js';
import { readRegularFile, shippedDir, shippedNames } from '../files.js';
import type { Cluster, IntraNodeFabric, NetworkTopology, ScaleOut } from './types.js';

const MAX_CLUSTER_BYTES = 64 << 10;
/** Counts are bounded so that no product (devices x nodes) leaves the safe integers. */
const MAX_COUNT = 1 << 20;
const TOPOLOGIES: readonly NetworkTopology[] = ['Ring', 'Switch', 'FullyConnected'];

/** The shipped clusters folder, found relative to this module (works from src/ and dist/src/). */
export function clustersDir(): string {
  const dir = shippedDir('clusters');
  if (dir === undefined) throw new Error('clusters folder not found');
  return dir;
}

export function shippedClusterNames(): string[] {
  return shippedNames(clustersDir(), '.json');
}

/** Resolve `--cluster NAME|FILE.json` and read it. */
export function loadCluster(nameOrPath: string): Cluster {
  const isPath = nameOrPath.includes('/') || nameOrPath.endsWith('.json');
  const path = isPath ? resolve(nameOrPath) : join(clustersDir(), `${nameOrPath}.json`);
  if (!existsSync(path)) {
    throw new InputError(isPath ? `--cluster ${shown(nameOrPath)}: no such file` : `--cluster ${shown(nameOrPath)}: no such cluster (shipped: ${shippedClusterNames().join(', ')}; or a cluster .json file)`);
  }
  const text = readRegularFile(path, path, 'cluster', MAX_CLUSTER_BYTES);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${path}: not valid JSON (${(e as Error).message})`);
  }
  return parseCluster(raw, path, basename(path, '.json'));
}

type Json = Record<string, unknown>;

function objectAt(value: unknown, where: string, field: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const [name, why] = field.split(' (');
    throw new InputError(`${where}: ${name} must be an object${why === undefined ? '' : ` (${why}`}`);
  }
  return value as Json;
}

function onlyKeys(obj: Json, keys: readonly string[], where: string, field: string): void {
  for (const key of Object.keys(obj)) {
    if (!keys.includes(key)) throw new InputError(`${where}: ${field === '' ? '' : `${field}.`}${key} is not a cluster field (fields: ${keys.join(', ')})`);
  }
}

function countAt(obj: Json, key: string, where: string, field: string): number {
  const value = obj[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_COUNT) {
    throw new InputError(`${where}: ${field} must be an integer from 1 to ${MAX_COUNT} (got ${JSON.stringify(value) ?? 'nothing'})`);
  }
  return value;
}

const BANDWIDTH = /^(\d+(?:\.\d+)?)\s*(G|T)(B|b)\/s$/;
const LATENCY = /^(\d+(?:\.\d+)?)\s*(ns|us|\u00b5s)$/;

/** "300 GB/s" or "200 Gb/s" -> bytes per second (decimal prefixes, as vendors quote links). */
function bandwidthAt(obj: Json, key: string, where: string, field: string): number {
  const value = obj[key];
  const m = typeof value === 'string' ? BANDWIDTH.exec(value.trim()) : null;
  if (m === null) throw new InputError(`${where}: ${field} must be a bandwidth such as "300 GB/s" or "200 Gb/s" (got ${JSON.stringify(value) ?? 'nothing'})`);
  const bytes = Number(m[1]) * (m[2] === 'T' ? 1e12 : 1e9) / (m[3] === 'b' ? 8 : 1);
  if (!(bytes > 0)) throw new InputError(`${where}: ${field} must be positive`);
  return bytes;
}

function latencyAt(obj: Json, key: string, where: string, field: string): number {
  const value = obj[key];
  const m = typeof value === 'string' ? LATENCY.exec(value.trim()) : null;
  if (m === null) throw new InputError(`${where}: ${field} must be a latency such as "700 ns" or "1.5 us" (got ${JSON.stringify(value) ?? 'nothing'})`);
  return Number(m[1]) * (m[2] === 'ns' ? 1 : 1000);
}

function topologyAt(obj: Json, key: string, where: string, field: string, torus: boolean): NetworkTopology | 'Torus' {
  const value = obj[key];
  const allowed: readonly string[] = torus ? [...TOPOLOGIES, 'Torus'] : TOPOLOGIES;
  if (typeof value !== 'string' || !allowed.includes(value)) throw new InputError(`${where}: ${field} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value) ?? 'nothing'})`);
  return value as NetworkTopology | 'Torus';
}

const TOP_KEYS = ['name', 'source', 'devicesPerNode', 'intraNode', 'nicsPerNode', 'nicBandwidth', 'scaleOut', 'maxNodes'] as const;
const INTRA_KEYS = ['topology', 'shape', 'bandwidth', 'latency'] as const;
const SCALE_OUT_KEYS = ['topology', 'latency'] as const;

export function parseCluster(raw: unknown, where: string, fallbackName: string): Cluster {
  const top = objectAt(raw, where, 'the file');
  onlyKeys(top, TOP_KEYS, where, '');
  const name = top.name === undefined ? fallbackName : top.name;
  if (typeof name !== 'string' || name === '') throw new InputError(`${where}: name must be a non-empty string`);
  const sourceRaw = objectAt(top.source, where, 'source (where each figure comes from, by field)');
  const source: Record<string, string> = {};
  for (const [key, text] of Object.entries(sourceRaw)) {
    if (typeof text !== 'string' || text === '') throw new InputError(`${where}: source.${key} must be a non-empty string`);
    source[key] = text;
  }
  const devicesPerNode = countAt(top, 'devicesPerNode', where, 'devicesPerNode');
  const intraRaw = objectAt(top.intraNode, where, 'intraNode');
  onlyKeys(intraRaw, INTRA_KEYS, where, 'intraNode');
  const topology = topologyAt(intraRaw, 'topology', where, 'intraNode.topology', true);
  const intraNode: IntraNodeFabric = {
    topology,
    bandwidthBytesPerSec: bandwidthAt(intraRaw, 'bandwidth', where, 'intraNode.bandwidth'),
    latencyNs: latencyAt(intraRaw, 'latency', where, 'intraNode.latency'),
  };
  if (topology === 'Torus') {
    const shape = intraRaw.shape;
    if (!Array.isArray(shape) || shape.length < 1 || shape.length > 3 || !shape.every((n) => Number.isInteger(n) && n >= 1 && n <= MAX_COUNT)) {
      throw new InputError(`${where}: intraNode.shape must be 1 to 3 positive integers (devices along each torus axis) for a Torus`);
    }
    const product = shape.reduce((a: number, n: number) => a * n, 1);
    if (product !== devicesPerNode) throw new InputError(`${where}: intraNode.shape ${JSON.stringify(shape)} holds ${product} devices, devicesPerNode is ${devicesPerNode}`);
    intraNode.shape = shape as number[];
  } else if (intraRaw.shape !== undefined) throw new InputError(`${where}: intraNode.shape applies to a Torus only`);
  const maxNodes = countAt(top, 'maxNodes', where, 'maxNodes');
  // One node (a TPU pod's torus) needs no NICs: both fields are then optional.
  const single = maxNodes === 1 && top.scaleOut === undefined;
  const nicsPerNode = single && top.nicsPerNode === undefined ? 0 : countAt(top, 'nicsPerNode', where, 'nicsPerNode');
  const nicBandwidthBytesPerSec = single && top.nicBandwidth === undefined ? 0 : bandwidthAt(top, 'nicBandwidth', where, 'nicBandwidth');
  let scaleOut: ScaleOut | undefined;
  if (top.scaleOut !== undefined) {
    const so = objectAt(top.scaleOut, where, 'scaleOut');
    onlyKeys(so, SCALE_OUT_KEYS, where, 'scaleOut');
    scaleOut = { topology: topologyAt(so, 'topology', where, 'scaleOut.topology', false) as NetworkTopology, latencyNs: latencyAt(so, 'latency', where, 'scaleOut.latency') };
  } else if (maxNodes > 1) throw new InputError(`${where}: scaleOut is missing (maxNodes is ${maxNodes}: nodes need a network between them)`);
  // Every figure is sourced: a field without its source is refused.
  for (const key of ['devicesPerNode', 'intraNode', 'maxNodes', ...(nicsPerNode === 0 ? [] : ['nicsPerNode', 'nicBandwidth']), ...(scaleOut === undefined ? [] : ['scaleOut'])]) {
    if (source[key] === undefined) throw new InputError(`${where}: source.${key} is missing (say where the figure comes from)`);
  }
  return { name, source, devicesPerNode, intraNode, nicsPerNode, nicBandwidthBytesPerSec, ...(scaleOut === undefined ? {} : { scaleOut }), maxNodes };
}
