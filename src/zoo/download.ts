/**
 * Resumable HTTP(S) download into `<target>.part`: an existing .part is continued with a Range
 * request (a server answering 200 instead of 206 restarts it), and the file is renamed to `target`
 * only once complete. A .part the server's answer does not line up with (416 with another size, a
 * 206 starting elsewhere, more bytes than the file has) is discarded and the download restarted.
 * Failures are one-line InputErrors: offline, HTTP errors, interrupted bodies (the .part is kept,
 * so running the command again resumes). Callers serialise downloads of one target (fetch.ts lock).
 */
import { closeSync, createReadStream, existsSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { InputError } from '../errors.js';

export type Progress = (doneBytes: number, totalBytes: number | undefined) => void;

export interface DownloadOptions {
  /** Who is downloading, for messages ("zoo:resnet50"). */
  label: string;
  progress?: Progress;
  /** Gives up when no byte arrives for this long. */
  idleTimeoutMs?: number;
}

const NETWORK_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'ENETUNREACH', 'EHOSTUNREACH', 'ETIMEDOUT', 'ECONNRESET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET']);

/** A socket error may sit in `cause`; dig out its code. */
function errorCode(e: unknown): string | undefined {
  let current = e as { code?: string; cause?: unknown } | undefined;
  for (let i = 0; i < 4 && current !== undefined; i++) {
    if (typeof current.code === 'string') return current.code;
    current = current.cause as typeof current;
  }
  return undefined;
}

function offlineError(label: string, url: string, e: unknown): InputError {
  const code = errorCode(e) ?? (e as Error).message;
  const host = new URL(url).host;
  const hint = code !== undefined && NETWORK_CODES.has(code) ? 'offline or unreachable?' : 'network error';
  return new InputError(`${label}: cannot download ${url} (${code}; ${hint} ${host} must be reachable once, after which the cache is used)`);
}

/** Redirects followed, as fetch() does. */
const MAX_REDIRECTS = 5;

interface HttpResponse {
  status: number;
  statusText: string;
  header(name: string): string | null;
  body: IncomingMessage;
}

/**
 * A GET with node:http(s), following redirects. Not fetch(): undici instantiates its WASM HTTP
 * parser lazily, and where virtual memory is limited (`ulimit -v 4G`) that fails with a
 * RangeError after the command's own error was printed (an unhandled rejection, exit 1).
 */
async function httpGet(url: string, headers: Record<string, string>, signal: AbortSignal, redirects = 0): Promise<HttpResponse> {
  const target = new URL(url);
  const { request } = target.protocol === 'http:' ? await import('node:http') : await import('node:https');
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(target, { headers, signal }, resolve);
    req.on('error', reject);
    req.end();
  });
  const status = response.statusCode ?? 0;
  const location = response.headers.location;
  if (status >= 300 && status < 400 && location !== undefined) {
    response.resume();
    if (redirects >= MAX_REDIRECTS) throw Object.assign(new Error(`more than ${MAX_REDIRECTS} redirects`), { code: 'TOO_MANY_REDIRECTS' });
    return httpGet(new URL(location, target).href, headers, signal, redirects + 1);
  }
  return {
    status,
    statusText: response.statusMessage ?? '',
    header: (name) => {
      const value = response.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
    },
    body: response,
  };
}

/** `Content-Range: bytes a-b/total` (206) or `bytes *\/total` (416); unknown parts undefined. */
function parseContentRange(header: string | null): { startByte: number | undefined; totalBytes: number | undefined } {
  const m = header === null ? null : /^\s*bytes\s+(?:(\d+)-\d+|\*)\/(\d+|\*)\s*$/i.exec(header);
  const number = (text: string | undefined): number | undefined => (text === undefined || text === '*' ? undefined : Number(text));
  return { startByte: number(m?.[1]), totalBytes: number(m?.[2]) };
}

/** Counts bytes through the stream for the progress callback. */
function counter(startBytes: number, total: number | undefined, progress: Progress | undefined): Transform {
  let done = startBytes;
  return new Transform({
    transform(chunk: Buffer, _enc, next) {
      done += chunk.length;
      progress?.(done, total);
      next(null, chunk);
    },
  });
}

/**
 * Appends each chunk to the .part synchronously: whatever arrived before a dropped connection is on
 * disk (an async write stream may drop its buffered chunks when the pipeline is torn down).
 */
function partWriter(path: string, append: boolean): Writable {
  const fd = openSync(path, append ? 'a' : 'w');
  return new Writable({
    write(chunk: Buffer, _enc, next) {
      try {
        writeSync(fd, chunk);
        next();
      } catch (e) {
        next(e as Error);
      }
    },
    destroy(error, done) {
      closeSync(fd);
      done(error);
    },
  });
}

export async function downloadResumable(url: string, target: string, options: DownloadOptions): Promise<void> {
  const part = `${target}.part`;
  const outcome = await downloadOnce(url, target, part, options);
  // A .part that does not line up with the server's file (larger, or the server resumed elsewhere)
  // is garbage: drop it and fetch from byte 0, once.
  if (outcome === 'restart') {
    rmSync(part, { force: true });
    if ((await downloadOnce(url, target, part, options)) === 'restart') {
      rmSync(part, { force: true });
      throw new InputError(`${options.label}: ${url} sent other bytes than asked for (range or size not as announced); nothing was kept`);
    }
  }
}

async function downloadOnce(url: string, target: string, part: string, options: DownloadOptions): Promise<'done' | 'restart'> {
  const haveBytes = existsSync(part) ? statSync(part).size : 0;
  const controller = new AbortController();
  const idleMs = options.idleTimeoutMs ?? 60_000;
  let idle = setTimeout(() => controller.abort(), idleMs);
  const touch = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => controller.abort(), idleMs);
  };
  let response: HttpResponse;
  try {
    // identity: byte offsets (Range, Content-Length) must count the archive's own bytes.
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    if (haveBytes > 0) headers['range'] = `bytes=${haveBytes}-`;
    response = await httpGet(url, headers, controller.signal);
  } catch (e) {
    clearTimeout(idle);
    throw offlineError(options.label, url, e);
  }
  try {
    if (response.status === 416 && haveBytes > 0) {
      // Nothing left to fetch only if the .part is exactly the server's size; else it is not this file.
      response.body.resume();
      const { totalBytes } = parseContentRange(response.header('content-range'));
      if (totalBytes !== haveBytes) return 'restart';
      renameSync(part, target);
      return 'done';
    }
    if (response.status !== 200 && response.status !== 206) {
      response.body.destroy();
      throw new InputError(`${options.label}: ${url} answered HTTP ${response.status} ${response.statusText}`);
    }
    const resumed = response.status === 206;
    const range = parseContentRange(response.header('content-range'));
    if (resumed && range.startByte !== haveBytes) {
      response.body.destroy();
      return 'restart';
    }
    const length = Number(response.header('content-length') ?? NaN);
    const total = resumed ? range.totalBytes : Number.isFinite(length) ? length : undefined;
    const start = resumed ? haveBytes : 0;
    const { body } = response;
    const progress: Progress = (done, all) => {
      touch();
      options.progress?.(done, all);
    };
    try {
      await pipeline(body, counter(start, total, progress), partWriter(part, resumed));
    } catch (e) {
      const got = existsSync(part) ? statSync(part).size : 0;
      throw new InputError(`${options.label}: download interrupted after ${got}${total ? ` of ${total}` : ''} bytes (${errorCode(e) ?? (e as Error).message}); run the command again to resume`);
    }
    const size = statSync(part).size;
    if (total !== undefined && size !== total) {
      if (size > total) return 'restart';
      throw new InputError(`${options.label}: download interrupted after ${size} of ${total} bytes; run the command again to resume`);
    }
    renameSync(part, target);
    return 'done';
  } finally {
    clearTimeout(idle);
  }
}

/** Hex SHA-256 of a file, streamed. */
async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/**
 * Checks a downloaded file against the recorded hash; on mismatch it is deleted (never left in the
 * cache). Returns the file's hash, so an unrecorded one can be reported.
 */
export async function verifySha256(path: string, expected: string | null, label: string): Promise<string> {
  const actual = await sha256File(path);
  if (expected !== null && actual !== expected) {
    rmSync(path, { force: true });
    throw new InputError(`${label}: the downloaded archive's SHA-256 is ${actual}, the registry records ${expected}; the download was deleted (a corrupted or changed file), run the command again`);
  }
  return actual;
}
