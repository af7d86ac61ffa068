/**
 * The model zoo registry: each classic ONNX Model Zoo model by name, with its published archive URL,
 * the model's path inside the archive and, when known, the archive's SHA-256. `MODTRANS_ZOO_REGISTRY`
 * names another registry file (same schema), `MODTRANS_ZOO_BASE_URL` a mirror holding the same
 * archive file names (tests point both at a local server).
 */
import { readFileSync } from 'node:fs';
import { InputError, fsErrorWords } from '../errors.js';
import builtIn from './registry.json' with { type: 'json' };

export interface ZooEntry {
  name: string;
  aliases: string[];
  description: string;
  /** Folder URL the archive is published under (ends with '/'). */
  baseUrl: string;
  /** Archive file name under `baseUrl`. */
  file: string;
  archive: 'tar.gz';
  /** The model inside the unpacked archive, e.g. 'resnet50/model.onnx'. */
  modelPath: string;
  /** Hex SHA-256 of the archive; null when not recorded (nothing to check against). */
  sha256: string | null;
  source: string;
}

export interface ZooRegistry {
  models: ZooEntry[];
}

export const REGISTRY_ENV = 'MODTRANS_ZOO_REGISTRY';
export const BASE_URL_ENV = 'MODTRANS_ZOO_BASE_URL';

/** Names that become one path component of the cache: no separators, no '..'. */
const CACHE_NAME = /^(?!\.\.?$)[A-Za-z0-9._-]+$/;

function checkEntry(e: unknown, file: string): ZooEntry {
  if (typeof e !== 'object' || e === null) throw new InputError(`${file}: a zoo entry is not an object`);
  const entry = e as Partial<ZooEntry>;
  const text = (key: 'name' | 'baseUrl' | 'file' | 'modelPath'): string => {
    const value = entry[key];
    if (typeof value !== 'string' || value === '') throw new InputError(`${file}: a zoo entry lacks '${key}'`);
    return value;
  };
  const name = text('name');
  const baseUrl = text('baseUrl');
  const archiveFile = text('file');
  const modelPath = text('modelPath');
  // name and file are joined into cache paths that get deleted and replaced: they must not climb out.
  for (const [key, value] of [['name', name], ['file', archiveFile]] as const) {
    if (!CACHE_NAME.test(value)) throw new InputError(`${file}: zoo entry '${name}': ${key} '${value}' must be a plain file name (letters, digits, . _ -)`);
  }
  if (entry.archive !== 'tar.gz') throw new InputError(`${file}: zoo entry '${name}': archive must be 'tar.gz'`);
  if (entry.sha256 !== null && entry.sha256 !== undefined && !/^[0-9a-f]{64}$/i.test(entry.sha256)) {
    throw new InputError(`${file}: zoo entry '${name}': sha256 must be 64 hex digits or null`);
  }
  return {
    name,
    aliases: entry.aliases ?? [],
    description: entry.description ?? '',
    baseUrl,
    file: archiveFile,
    archive: 'tar.gz',
    modelPath,
    sha256: entry.sha256?.toLowerCase() ?? null,
    source: entry.source ?? '',
  };
}

/** The built-in registry, or the file `MODTRANS_ZOO_REGISTRY` names. */
export function loadRegistry(env: NodeJS.ProcessEnv = process.env): ZooRegistry {
  const file = env[REGISTRY_ENV];
  if (file === undefined || file === '') return { models: builtIn.models.map((m) => checkEntry(m, 'built-in zoo registry')) };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`${file}: cannot read the zoo registry (${fsErrorWords(e)})`);
  }
  const models = typeof raw === 'object' && raw !== null ? (raw as { models?: unknown }).models : undefined;
  if (!Array.isArray(models)) throw new InputError(`${file}: a zoo registry needs a 'models' list`);
  return { models: models.map((m) => checkEntry(m, file)) };
}

export function findEntry(registry: ZooRegistry, name: string): ZooEntry {
  const entry = registry.models.find((m) => m.name === name || m.aliases.includes(name));
  if (entry === undefined) {
    throw new InputError(`zoo:${name}: no such zoo model (known: ${registry.models.map((m) => m.name).join(', ')})`);
  }
  return entry;
}

/** The mirror to download from: an explicit --base-url, else MODTRANS_ZOO_BASE_URL, else none. */
export function mirrorBaseUrl(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return explicit ?? (env[BASE_URL_ENV] || undefined);
}

/** The archive's URL: under the entry's own folder, or under a mirror's base URL (http or https). */
export function archiveUrl(entry: ZooEntry, baseUrl?: string): string {
  const base = baseUrl ?? entry.baseUrl;
  const url = `${base.endsWith('/') ? base : `${base}/`}${entry.file}`;
  // fetch() would reject anything else with a TypeError, which is no one-line input error.
  if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) {
    throw new InputError(`zoo:${entry.name}: '${base}' is not an http(s) base URL`);
  }
  return url;
}
