#!/usr/bin/env node
'use strict';
// modtrans's bin: runs the bundle next to this file with its V8 code cache (scripts/bundle.mjs).
const { readFileSync } = require('node:fs');
const Module = require('node:module');
const { dirname, join } = require('node:path');
const { Script } = require('node:vm');

const file = join(__dirname, 'modtrans.cjs');
// The command's own code cache when the build made one (smaller: less to read before the bundle
// starts), else the one of every command (scripts/bundle.mjs).
const command = process.argv.slice(2).find((a) => !a.startsWith('-'));
const caches = command !== undefined && /^[a-z][a-z-]*$/.test(command) ? [`${file}.${command}.cache`, `${file}.cache`] : [`${file}.cache`];
let cachedData;
for (const cache of caches) {
  try {
    cachedData = readFileSync(cache);
    break;
  } catch {
    // No such cache (not a command with its own, or a build that could not make one): the next,
    // and without any V8 compiles as usual.
  }
}
// latin1: the build makes the bundle pure ASCII (scripts/bundle.mjs checks), so each byte is its
// character and the string is made without UTF-8 decoding.
const script = new Script(Module.wrap(readFileSync(file, 'latin1')), { filename: file, cachedData });
const bundle = new Module(file, module);
bundle.filename = file;
bundle.paths = Module._nodeModulePaths(dirname(file));
// The bundle runs its command line when process.argv[1] names it (as when run directly).
process.argv[1] = file;
script.runInThisContext().call(bundle.exports, bundle.exports, (id) => bundle.require(id), bundle, file, dirname(file));
