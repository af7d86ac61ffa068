#!/usr/bin/env node
'use strict';
// modtrans's bin: runs the bundle next to this file with its V8 code cache (scripts/bundle.mjs).
const { readFileSync } = require('node:fs');
const Module = require('node:module');
const { dirname, join } = require('node:path');
const { Script } = require('node:vm');

const file = join(__dirname, 'modtrans.cjs');
let cachedData;
try {
  cachedData = readFileSync(`${file}.cache`);
} catch {
  // No cache (e.g. a build that could not make one): V8 compiles as usual.
}
const script = new Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file, cachedData });
const bundle = new Module(file, module);
bundle.filename = file;
bundle.paths = Module._nodeModulePaths(dirname(file));
// The bundle runs its command line when process.argv[1] names it (as when run directly).
process.argv[1] = file;
script.runInThisContext().call(bundle.exports, bundle.exports, (id) => bundle.require(id), bundle, file, dirname(file));
