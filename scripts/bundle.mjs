/**
 * `npm run bundle`: the CLI as one CommonJS file plus a V8 code cache, so a command starts near
 * node's own start.
 *
 * - dist/cli/modtrans.cjs: esbuild's bundle of src/cli/main.ts, minified (its source map beside it). mathjs and csv-stringify stay
 *   outside (loaded only when used); their `import()` becomes `require` (dynamic-import=false), so
 *   the bundle runs as a plain script with no module loader.
 * - dist/cli/modtrans.cjs.cache: V8 bytecode for the functions a few representative commands run,
 *   made here by running them once. Loading it spares V8 parsing and compiling ~0.8 MB of code on
 *   every start (measured: 0.24 s -> 0.17 s CPU for `translate resnet50`). V8 checks it against
 *   the source and its own version and flags; a rejected cache only costs the normal compile.
 * - dist/cli/modtrans.cjs.COMMAND.cache (translate, inspect, shapes, scalesim): the same from that
 *   command's runs alone, which the launcher prefers for that command: V8 deserializes a whole
 *   cache before anything runs, and translate's own is ~60% of the fallback's size (measured:
 *   `translate resnet50` 0.26 -> 0.24 s CPU, alternated, 6 runs each).
 *   (node 22's module.enableCompileCache() is not in node 20.20: the caches are made here, at
 *   build, and only read at run time, so an unwritable install folder costs nothing.)
 * - dist/cli/main.cjs: the bin, scripts/launcher.cjs copied.
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Commands with a code cache of their own (scripts/code-cache.cjs has their representative runs). */
const COMMAND_CACHES = ['translate', 'inspect', 'shapes', 'scalesim'];
const out = join(root, 'dist', 'cli');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

/**
 * commander requires node:child_process at load time, for executable sub-commands modtrans never
 * uses; loading it pulls in net, dgram and streams (~15 ms of every start). Its import resolves to
 * a stand-in that loads the real module on first use.
 */
const lazyChildProcessForCommander = {
  name: 'lazy-child-process-for-commander',
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      /[\\/]commander[\\/]/.test(args.importer) ? { path: 'lazy-child-process', namespace: 'modtrans-lazy' } : undefined);
    b.onLoad({ filter: /.*/, namespace: 'modtrans-lazy' }, () => ({
      contents: "module.exports = new Proxy({}, { get: (_, key) => require('node:child_process')[key] });",
      loader: 'js',
    }));
  },
};

await build({
  entryPoints: [join(root, 'src', 'cli', 'main.ts')],
  outfile: join(out, 'modtrans.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  // Short identifiers: 0.99 -> 0.73 MB of source to read and hold, ~10 ms of CPU per start
  // (translate resnet50 and --help, measured side by side). Stack traces (MODTRANS_DEBUG=1) map
  // back to the sources with node --enable-source-maps and the map written beside the bundle.
  minifyIdentifiers: true,
  sourcemap: 'linked',
  external: ['mathjs', 'csv-stringify'],
  supported: { 'dynamic-import': false },
  define: { 'import.meta.url': '__import_meta_url' },
  banner: { js: "'use strict';const __import_meta_url=require('url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
  plugins: [lazyChildProcessForCommander],
});
// The bundle is a script run by the launcher, not a program: src/cli/main.ts's #! line goes.
const bundled = join(out, 'modtrans.cjs');
const source = readFileSync(bundled, 'utf8').replace(/^#!.*\n/, '');
// The launcher reads the bundle as latin1 (no UTF-8 decoding at each start): esbuild escapes
// non-ASCII in strings and drops comments, but a regular expression keeps its characters as written.
const nonAscii = /[^\x00-\x7f]/.exec(source);
if (nonAscii !== null) {
  const line = source.slice(0, nonAscii.index).split('\n').length;
  throw new Error(`bundle: dist/cli/modtrans.cjs line ${line} has the non-ASCII character '${nonAscii[0]}' (write it as \\u${nonAscii[0].charCodeAt(0).toString(16).padStart(4, '0')} in the source)`);
}
writeFileSync(bundled, source);
copyFileSync(join(root, 'scripts', 'launcher.cjs'), join(out, 'main.cjs'));
chmodSync(join(out, 'main.cjs'), 0o755);

// The fallback cache (every representative command), then one per command the launcher picks by
// name (each made in a process of its own: a cache holds what its isolate compiled).
for (const command of [undefined, ...COMMAND_CACHES]) {
  const made = spawnSync(process.execPath, [join(root, 'scripts', 'code-cache.cjs'), join(out, 'modtrans.cjs'), ...(command === undefined ? [] : [command])], { stdio: 'inherit' });
  if (made.status !== 0) {
    // The CLI works without a cache, only starts slower: say so, do not fail the build.
    process.stderr.write(`bundle: no ${command ?? 'fallback'} code cache was made (the CLI starts without it)\n`);
  }
}
