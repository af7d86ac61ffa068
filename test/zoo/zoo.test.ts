/**
 * The model zoo against a local HTTP server (127.0.0.1 only): fetch, cache, hash check, resume
 * after a dropped connection, offline message, and `translate zoo:resnet50` through the pipeline.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { Command } from 'commander';
import { registerZooCommand } from '../../src/cli/zoo-command.js';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { InputError } from '../../src/errors.js';
import { analyseModel, createCostModel, workloadOf } from '../../src/pipeline.js';
import { defaultCacheDir, fetchZooModel } from '../../src/zoo/fetch.js';
import { REGISTRY_ENV, BASE_URL_ENV, loadRegistry } from '../../src/zoo/registry.js';
import { resolveModelInput } from '../../src/zoo/resolve.js';
import { extractTarGz } from '../../src/zoo/tar.js';
import { writeAstraText } from '../../src/writers/astra-text.js';
import { ROOT, modelPath } from '../helpers/models.js';
import { header, pad, tarGz } from './tar-builder.js';
import { gzipSync } from 'node:zlib';
import { present } from '../helpers/present.js';
import { expectSameBytes } from '../helpers/bytes.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-zoo-'));
const archive = tarGz([
  ['resnet50/', ''],
  ['resnet50/model.onnx', readFileSync(modelPath('resnet50'))],
  ['resnet50/test_data_set_0/input_0.pb', Buffer.alloc(64, 1)],
]);
const sha256 = createHash('sha256').update(archive).digest('hex');

/** What the server does with the next request for the archive. */
interface Behaviour {
  body: Buffer;
  /** Destroy the socket after this many body bytes (once). */
  dropAfterBytes?: number;
}
let behaviour: Behaviour = { body: archive };
const requests: { url: string; range: string | undefined }[] = [];

function serve(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void {
  requests.push({ url: req.url ?? '', range: req.headers.range });
  if (req.url !== '/resnet50.tar.gz') {
    res.writeHead(404).end();
    return;
  }
  const body = behaviour.body;
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const start = range ? Number(range[1]) : 0;
  if (start >= body.length && range) {
    res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
    return;
  }
  const headers = range
    ? { 'content-length': String(body.length - start), 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` }
    : { 'content-length': String(body.length) };
  res.writeHead(range ? 206 : 200, headers);
  const drop = behaviour.dropAfterBytes;
  if (drop !== undefined) {
    behaviour = { body };
    // A FIN mid-body (not a reset, which may discard bytes already sent): the client sees a short body.
    res.write(body.subarray(start, start + drop), () => res.socket?.end());
  } else res.end(body.subarray(start));
}

let server: Server;
let baseUrl = '';
const envBefore = { ...process.env };

function useRegistry(hash: string | null): void {
  const file = join(dir, `registry-${hash ?? 'none'}.json`);
  const entry = { name: 'resnet50', aliases: [], description: 'test', baseUrl, file: 'resnet50.tar.gz', archive: 'tar.gz', modelPath: 'resnet50/model.onnx', sha256: hash, source: 'test' };
  writeFileSync(file, JSON.stringify({ models: [entry] }));
  process.env[REGISTRY_ENV] = file;
}

let cacheDir = '';
let cacheCount = 0;
beforeEach(() => {
  cacheDir = join(dir, `cache-${++cacheCount}`);
  behaviour = { body: archive };
  requests.length = 0;
  useRegistry(sha256);
});

beforeAll(async () => {
  server = createServer(serve);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  process.env = envBefore;
  server.closeAllConnections();
  await new Promise((ok) => server.close(ok));
  rmSync(dir, { recursive: true, force: true });
});

const fetchResnet = () => resolveModelInput('zoo:resnet50', { cacheDir, quiet: true });
const cacheFiles = (): string[] => (existsSync(cacheDir) ? readdirSync(cacheDir, { recursive: true }).map(String) : []);

describe('zoo fetch', () => {
  it('downloads, checks, unpacks once, and the model translates (translate zoo:resnet50)', async () => {
    const path = await fetchResnet();
    expect(path).toBe(join(cacheDir, 'zoo', 'resnet50', 'resnet50', 'model.onnx'));
    expect(existsSync(join(cacheDir, 'zoo', 'resnet50', 'resnet50', 'test_data_set_0', 'input_0.pb'))).toBe(true);
    expect(await fetchResnet()).toBe(path);
    expect(requests).toHaveLength(1); // the second call is served by the cache
    expect(cacheFiles().some((f) => f.includes('downloads') && f.endsWith('.gz'))).toBe(false);

    const analysed = analyseModel(path);
    const cost = await createCostModel(await loadHardwareProfile('tpu-256'), 'ideal');
    const text = writeAstraText(workloadOf(analysed, cost, { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' }));
    expect(text.split('\n').slice(0, 2)).toEqual(['DATA', '54']);
  });

  it('a corrupted download (hash mismatch) is a clear error and leaves nothing in the cache', async () => {
    const corrupted = Buffer.from(archive);
    corrupted[corrupted.length >> 1] = present(corrupted[corrupted.length >> 1], 'middle byte') ^ 0xff;
    behaviour = { body: corrupted };
    await expect(fetchResnet()).rejects.toThrow(InputError);
    await expect(fetchResnet()).rejects.toThrow(/zoo:resnet50: the downloaded archive's SHA-256 is [0-9a-f]{64}, the registry records .*deleted/);
    expect(cacheFiles().filter((f) => !['downloads', 'zoo'].includes(f))).toEqual([]);
  });

  it('a dropped connection is resumed with a Range request by the next fetch', async () => {
    behaviour = { body: archive, dropAfterBytes: Math.floor(archive.length / 3) };
    await expect(fetchResnet()).rejects.toThrow(/zoo:resnet50: download interrupted after \d+ of \d+ bytes.*run the command again to resume/);
    const part = join(cacheDir, 'downloads', 'resnet50.tar.gz.part');
    const kept = statSync(part).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(archive.length);
    const path = await fetchResnet();
    expect(requests.at(-1)?.range).toBe(`bytes=${kept}-`);
    expectSameBytes(readFileSync(path), readFileSync(modelPath('resnet50')), path);
  });

  it('a stale .part larger than the file (416) is discarded and the download restarted', async () => {
    mkdirSync(join(cacheDir, 'downloads'), { recursive: true });
    writeFileSync(join(cacheDir, 'downloads', 'resnet50.tar.gz.part'), Buffer.alloc(archive.length + 10, 7));
    const path = await fetchResnet();
    expect(requests.map((r) => r.range)).toEqual([`bytes=${archive.length + 10}-`, undefined]);
    expectSameBytes(readFileSync(path), readFileSync(modelPath('resnet50')), path);
    expect(cacheFiles().filter((f) => f.startsWith('downloads') && f !== 'downloads')).toEqual([]);
  });

  it('concurrent fetches of one model download it once and agree on the path', async () => {
    const [a, b] = await Promise.all([fetchResnet(), fetchResnet()]);
    expect(a).toBe(b);
    expect(requests).toHaveLength(1);
    expectSameBytes(readFileSync(a), readFileSync(modelPath('resnet50')), a);
  });

  it('a lock and an unpacking folder left by a killed process are taken over and cleaned', async () => {
    const lock = join(cacheDir, 'downloads', 'resnet50.tar.gz.lock');
    mkdirSync(lock, { recursive: true });
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, minuteAgo, minuteAgo); // its owner stopped refreshing it a minute ago
    mkdirSync(join(cacheDir, 'zoo', 'resnet50.unpacking-2147483646'), { recursive: true });
    expect(existsSync(await fetchResnet())).toBe(true);
    expect(existsSync(lock)).toBe(false);
    expect(readdirSync(join(cacheDir, 'zoo'))).toEqual(['resnet50']);
  });

  it("an older modtrans's pid lock file, left by a crash, is taken over too", async () => {
    const lock = join(cacheDir, 'downloads', 'resnet50.tar.gz.lock');
    mkdirSync(dirname(lock), { recursive: true });
    writeFileSync(lock, '2147483646');
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, minuteAgo, minuteAgo);
    expect(existsSync(await fetchResnet())).toBe(true);
    expect(existsSync(lock)).toBe(false);
  });

  it('says so when it waits on a lock held by a live process, then proceeds once it is released', async () => {
    mkdirSync(join(cacheDir, 'downloads'), { recursive: true });
    const lock = join(cacheDir, 'downloads', 'resnet50.tar.gz.lock');
    mkdirSync(lock); // fresh: its owner is alive, so it is waited on, not taken over
    const notices: string[] = [];
    const release = setTimeout(() => rmSync(lock, { recursive: true, force: true }), 600);
    const path = await fetchZooModel('resnet50', { cacheDir, notice: (l) => notices.push(l), lockNoticeAfterMs: 100 });
    clearTimeout(release);
    expect(existsSync(path)).toBe(true);
    expect(notices.filter((l) => l.startsWith('waiting for another modtrans'))).toEqual([
      `waiting for another modtrans fetching the same archive (lock ${lock}); delete that folder if no such download is running`,
    ]);
  });

  it('a cache folder that cannot be created is a one-line InputError', async () => {
    const file = join(dir, `not-a-folder-${cacheCount}`);
    writeFileSync(file, 'x');
    const error = await resolveModelInput('zoo:resnet50', { cacheDir: join(file, 'cache'), quiet: true }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(/cannot write to the model cache \(a part of the path is not a folder\)/);
    expect((error as Error).message).not.toMatch(/\n/);
  });

  it('without a recorded hash the download is accepted, and its hash reported for recording', async () => {
    useRegistry(null);
    const notices: string[] = [];
    const path = await fetchZooModel('resnet50', { cacheDir, notice: (line) => notices.push(line) });
    expect(existsSync(path)).toBe(true);
    expect(notices).toEqual([`zoo:resnet50: the registry records no SHA-256 for resnet50.tar.gz; this download's is ${sha256} (record it to have later downloads checked)`]);
  });

  it('offline: one clear line naming the URL, nothing cached', async () => {
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((ok) => closed.close(ok));
    const error = await resolveModelInput('zoo:resnet50', { cacheDir, quiet: true, baseUrl: `http://127.0.0.1:${port}/` }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(new RegExp(`^zoo:resnet50: cannot download http://127.0.0.1:${port}/resnet50.tar.gz \\(ECONNREFUSED; offline or unreachable\\?`));
    expect((error as Error).message).not.toMatch(/\n/);
    expect(cacheFiles().filter((f) => f.startsWith('zoo') || f.includes('.gz'))).toEqual([]);
  });

  it('under a virtual-memory limit (ulimit -v 4G) the bin prints only its clean error, exit 2 (issue 22 row 14)', async () => {
    // fetch() instantiated undici's WASM parser, which failed there with a RangeError stack trace after the error (exit 1).
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((ok) => closed.close(ok));
    const bin = join(ROOT, 'dist', 'cli', 'main.cjs');
    const r = spawnSync('sh', ['-c', `ulimit -v 4194304 && exec "${process.execPath}" "${bin}" zoo fetch resnet50 --cache-dir "${cacheDir}"`], {
      encoding: 'utf8',
      env: { ...process.env, [BASE_URL_ENV]: `http://127.0.0.1:${port}/` },
    });
    expect(r.stderr).toMatch(new RegExp(`^modtrans: zoo:resnet50: cannot download http://127.0.0.1:${port}/resnet50.tar.gz \\(ECONNREFUSED; offline or unreachable\\?[^\\n]*\\n$`));
    expect(r.status).toBe(2);
  });

  it('HTTP errors and unknown names are one-line errors', async () => {
    await expect(resolveModelInput('zoo:resnet50', { cacheDir, quiet: true, baseUrl: `${baseUrl}missing/` })).rejects.toThrow(/HTTP 404/);
    await expect(resolveModelInput('zoo:no_such_model', { cacheDir, quiet: true })).rejects.toThrow(/zoo:no_such_model: no such zoo model \(known: resnet50\)/);
  });

  it('the base URL can come from MODTRANS_ZOO_BASE_URL; other arguments stay paths or example names', async () => {
    process.env[BASE_URL_ENV] = baseUrl;
    try {
      expect(await fetchResnet()).toMatch(/model\.onnx$/);
    } finally {
      delete process.env[BASE_URL_ENV];
    }
    expect(await resolveModelInput('alexnet')).toMatch(/examples\/alexnet\.onnx$/);
  });
});

describe('zoo registry and commands', () => {
  it('the built-in registry has the nine backend-test models and VGG16 at their published URLs', () => {
    const registry = loadRegistry({});
    const names = registry.models.map((m) => m.name);
    for (const name of ['bvlc_alexnet', 'densenet121', 'inception_v1', 'inception_v2', 'resnet50', 'shufflenet', 'squeezenet', 'vgg19', 'zfnet512', 'vgg16']) expect(names).toContain(name);
    expect(registry.models.find((m) => m.name === 'resnet50')).toMatchObject({ baseUrl: 'https://s3.amazonaws.com/download.onnx/models/opset_10/', file: 'resnet50.tar.gz', modelPath: 'resnet50/model.onnx' });
  });

  it('refuses registries whose names would leave the cache, malformed files and non-http base URLs', async () => {
    const registryFile = (content: string): NodeJS.ProcessEnv => {
      const file = join(dir, `registry-bad-${cacheCount}-${content.length}.json`);
      writeFileSync(file, content);
      return { [REGISTRY_ENV]: file };
    };
    const entry = { name: 'x', baseUrl, file: 'x.tar.gz', archive: 'tar.gz', modelPath: 'x/model.onnx', sha256: null };
    expect(() => loadRegistry(registryFile(JSON.stringify({ models: [{ ...entry, name: '../../etc' }] })))).toThrow(/name '..\/..\/etc' must be a plain file name/);
    expect(() => loadRegistry(registryFile(JSON.stringify({ models: [{ ...entry, file: '..' }] })))).toThrow(/file '..' must be a plain file name/);
    expect(() => loadRegistry(registryFile('null'))).toThrow(InputError);
    expect(() => loadRegistry(registryFile('{"models": [null]}'))).toThrow(InputError);
    const error = await resolveModelInput('zoo:resnet50', { cacheDir, quiet: true, baseUrl: 'ftp://example.org/' }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toBe("zoo:resnet50: 'ftp://example.org/' is not an http(s) base URL");
  });

  it('the cache defaults to $XDG_CACHE_HOME/modtrans, else ~/.cache/modtrans', () => {
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/modtrans');
    expect(defaultCacheDir({})).toMatch(/\.cache\/modtrans$/);
  });

  it('`zoo list` says which hashes are not recorded; `zoo fetch` prints the model path', async () => {
    const out: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
      out.push(String(s));
      return true;
    });
    try {
      const program = new Command().exitOverride();
      registerZooCommand(program);
      useRegistry(null);
      await program.parseAsync(['node', 'modtrans', 'zoo', 'list', '--cache-dir', cacheDir]);
      await program.parseAsync(['node', 'modtrans', 'zoo', 'fetch', 'resnet50', '--cache-dir', cacheDir]);
    } finally {
      spy.mockRestore();
    }
    expect(out[0]).toMatch(/resnet50\s+-\s+not recorded\s+http:\/\/127\.0\.0\.1:\d+\/resnet50\.tar\.gz/);
    expect(out[0]).toMatch(/1 of 1 archives have no recorded SHA-256/);
    expect(out[1]).toBe(`${join(cacheDir, 'zoo', 'resnet50', 'resnet50', 'model.onnx')}\n`);
  });
});

describe('tar reader', () => {
  it('unpacks long names and refuses entries escaping the folder', async () => {
    const long = `a/${'b'.repeat(120)}/model.onnx`;
    writeFileSync(join(dir, 'long.tar.gz'), tarGz([[long, 'x'], ['short.txt', 'y']]));
    const files = await extractTarGz(join(dir, 'long.tar.gz'), join(dir, 'long'));
    expect(files.map((f) => f.slice(join(dir, 'long').length + 1))).toEqual([long, 'short.txt']);
    expect(readFileSync(join(dir, 'long', long), 'utf8')).toBe('x');
    writeFileSync(join(dir, 'evil.tar.gz'), tarGz([['../evil.txt', 'x']]));
    mkdirSync(join(dir, 'evil'), { recursive: true });
    await expect(extractTarGz(join(dir, 'evil.tar.gz'), join(dir, 'evil'))).rejects.toThrow(/outside the archive folder/);
    expect(existsSync(join(dir, 'evil.txt'))).toBe(false);
    writeFileSync(join(dir, 'notgz.tar.gz'), 'plain text');
    await expect(extractTarGz(join(dir, 'notgz.tar.gz'), join(dir, 'notgz'))).rejects.toThrow(/not a gzip file/);
  });

  it('refuses absolute paths, and writes no link (so none can point out of the folder)', async () => {
    writeFileSync(join(dir, 'absolute.tar.gz'), tarGz([[join(dir, 'absolute-evil.txt'), 'x']]));
    await expect(extractTarGz(join(dir, 'absolute.tar.gz'), join(dir, 'absolute'))).rejects.toThrow(/outside the archive folder/);
    expect(existsSync(join(dir, 'absolute-evil.txt'))).toBe(false);
    const symlink = header('link', 0, '2', '../../outside');
    const hardlink = header('hard', 0, '1', '/etc/passwd');
    writeFileSync(join(dir, 'links.tar.gz'), gzipSync(Buffer.concat([symlink, hardlink, header('link/x.txt', 1, '0'), pad(Buffer.from('x')), Buffer.alloc(1024)])));
    const files = await extractTarGz(join(dir, 'links.tar.gz'), join(dir, 'links'));
    expect(files).toEqual([join(dir, 'links', 'link', 'x.txt')]);
    expect(lstatSync(join(dir, 'links', 'link')).isDirectory()).toBe(true); // a real folder, not the link
    expect(existsSync(join(dir, 'links', 'hard'))).toBe(false);
  });

  it('bounds what a hostile header can cost: no buffering of huge metadata, no waiting on bytes that never come', async () => {
    // A pax size that is not a byte count leaves the header's size in force.
    const paxRecord = Buffer.from('16 size=banana\n');
    const badSize = [header('PaxHeaders/m', paxRecord.length, 'x'), pad(paxRecord), header('m.onnx', 1, '0'), pad(Buffer.from('x')), Buffer.alloc(1024)];
    writeFileSync(join(dir, 'pax.tar.gz'), gzipSync(Buffer.concat(badSize)));
    await extractTarGz(join(dir, 'pax.tar.gz'), join(dir, 'pax'));
    expect(readFileSync(join(dir, 'pax', 'm.onnx'), 'utf8')).toBe('x');
    // A 2 GiB long name with nothing behind it: refused as truncated, not allocated.
    writeFileSync(join(dir, 'huge-name.tar.gz'), gzipSync(header('././@LongLink', 2 ** 31, 'L')));
    await expect(extractTarGz(join(dir, 'huge-name.tar.gz'), join(dir, 'huge-name'))).rejects.toThrow(/Truncated input/);
    // A 2 MiB long name (over the 1 MiB metadata cap) is skipped: the entry keeps its header name.
    const longName = Buffer.alloc(2 << 20, 0x61);
    writeFileSync(join(dir, 'long-meta.tar.gz'), gzipSync(Buffer.concat([header('././@LongLink', longName.length, 'L'), pad(longName), header('m.onnx', 1, '0'), pad(Buffer.from('x')), Buffer.alloc(1024)])));
    expect(await extractTarGz(join(dir, 'long-meta.tar.gz'), join(dir, 'long-meta'))).toEqual([join(dir, 'long-meta', 'm.onnx')]);
    // A damaged header is an error, not a skipped entry.
    const damaged = header('m.onnx', 1, '0');
    damaged[0] = present(damaged[0], 'first header byte') ^ 1;
    writeFileSync(join(dir, 'damaged.tar.gz'), gzipSync(Buffer.concat([damaged, pad(Buffer.from('x')), Buffer.alloc(1024)])));
    await expect(extractTarGz(join(dir, 'damaged.tar.gz'), join(dir, 'damaged'))).rejects.toThrow(/checksum/);
  });
});
