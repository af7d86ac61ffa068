'use strict';
// `node code-cache.cjs FILE [COMMAND]`: V8 bytecode of the bundle FILE after running
// representative commands once (functions V8 compiled lazily are in it too), compiled with the same
// wrapper as the launcher's, so V8 accepts the cache there. Without COMMAND: FILE.cache, from
// every command below (the launcher's fallback); with one: FILE.COMMAND.cache, from that
// command's runs alone. V8 reads a whole cache before the bundle starts, so a command's own cache
// (translate's is ~0.65 MB of the full ~1.1 MB) is ~20 ms less of every start of that command.
const { mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');
const { Script } = require('node:vm');

const file = process.argv[2];
const only = process.argv[3];
const script = new Script(Module.wrap(readFileSync(file, 'latin1')), { filename: file }); // as the launcher reads it
const bundle = new Module(file, module);
bundle.filename = file;
bundle.paths = Module._nodeModulePaths(dirname(file));
// process.argv[1] is this script, so the bundle does not run a command line of its own.
script.runInThisContext().call(bundle.exports, bundle.exports, (id) => bundle.require(id), bundle, file, dirname(file));

const tmp = mkdtempSync(join(tmpdir(), 'modtrans-cache-'));
const examples = join(dirname(file), '..', '..', 'examples');
const commands = [
  ['translate', 'resnet50', '-o', join(tmp, 'resnet50.txt')],
  ['translate', 'gpt2_small_like', '--tp', '2', '--dp', '2', '--format', 'chakra', '-o', join(tmp, 'gpt')],
  ['inspect', 'bert_base_like', '-o', join(tmp, 'inspect.txt')],
  ['shapes', 'resnet50', '-o', join(tmp, 'shapes.json')],
  // The SCALE-sim memory walks, CALC (os, ws) and USER (stalls).
  ['scalesim', '-t', join(examples, 'scalesim', 'topologies', 'alexnet.csv'), '-c', join(examples, 'scalesim', 'scale.cfg'), '-o', join(tmp, 'scalesim')],
  ['scalesim', '-t', join(examples, 'scalesim', 'topologies', 'test_mnk_input.csv'), '--gemm', '-c', join(examples, 'scalesim', 'eyeriss.cfg'), '-o', join(tmp, 'scalesim-ws')],
  ['inspect', 'alexnet', '--hardware', 'eyeriss', '--bandwidth-mode', 'user', '-o', join(tmp, 'user.txt')],
];
/**
 * A command's own cache holds what its commonest runs compile: translate's the text format (the
 * Chakra writer compiles on first use there, ~10 ms, against ~20 ms less to read on every other
 * run).
 */
const ownRuns = {
  translate: [['translate', 'resnet50', '-o', join(tmp, 'resnet50-own.txt')], ['translate', 'gpt2_small_like', '--tp', '2', '--dp', '2', '-o', join(tmp, 'gpt-own.txt')]],
};
const runs = only === undefined ? commands : (ownRuns[only] ?? commands.filter(([command]) => command === only));
if (runs.length === 0) throw new Error(`code-cache: no representative run of '${only}'`);
(async () => {
  const [err, out] = [process.stderr.write, process.stdout.write];
  process.stderr.write = () => true;
  process.stdout.write = () => true;
  try {
    for (const args of runs) {
      const code = await bundle.exports.runCli([process.execPath, file, ...args]);
      if (code !== 0) throw new Error(`modtrans ${args.join(' ')} exited with ${code}`);
    }
  } finally {
    [process.stderr.write, process.stdout.write] = [err, out];
    rmSync(tmp, { recursive: true, force: true });
  }
  writeFileSync(only === undefined ? `${file}.cache` : `${file}.${only}.cache`, script.createCachedData());
})().catch((e) => {
  process.stderr.write(`code-cache: ${e.message}\n`);
  process.exitCode = 1;
});
