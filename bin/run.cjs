#!/usr/bin/env node
// The CLI's entry (what bin/cudaenv starts). CommonJS on purpose: `cudaenv use` and `current` run
// from a shell function at every switch, and a CommonJS main starts without Node's ES module
// loader (7 ms of a 41 ms `use`; issue 13 asks at most 2x `node -e 0`). oclif, for every other
// command, is still loaded as the ES module it is.
'use strict';

// Started by bin/cudaenv with the loader's variables cleared: put the user's back before any
// command reads them or hands them to a child (exec, nvcc, python).
const saved = process.env.CUDAENV_USER_VARS;
const DEFERRED = ['LD_LIBRARY_PATH', 'LD_PRELOAD', 'LD_AUDIT', 'NODE_EXTRA_CA_CERTS'];
if (saved !== undefined) {
  for (const name of saved.split(' ')) {
    if (!DEFERRED.includes(name)) continue;
    process.env[name] = process.env[`CUDAENV_USER_${name}`] ?? '';
    // Node started without it: cudaenv's own TLS connections apply it (src/core/remote/extra-ca.ts).
    if (name === 'NODE_EXTRA_CA_CERTS') process[Symbol.for('cudaenv.deferredExtraCaCerts')] = process.env[name];
  }
  for (const name of ['VARS', ...DEFERRED]) delete process.env[`CUDAENV_USER_${name}`];
}

const {join} = require('node:path');
const {pathToFileURL} = require('node:url');

/** The bundle (scripts/bundle-fast-path.mjs), or the modules it is made of when it was not built. */
async function start() {
  try {
    return require('../dist/fast-path.bundle.cjs');
  } catch (error) {
    if (error?.code !== 'MODULE_NOT_FOUND' || !String(error.message).includes('fast-path.bundle.cjs')) throw error;
    return import(pathToFileURL(join(__dirname, '..', 'dist', 'start.js')).href);
  }
}

async function main() {
  const {installLastResort, fastPath} = await start();
  installLastResort(); // an exception nothing caught: one line, exit 1, locks and staging cleaned up
  // The hot commands (`--version`, `current`, `use`, and `check PATH...` without flags) skip oclif:
  // loading it costs more than the whole command, and the shell hook and users call them often.
  let argv = process.argv.slice(2);
  if (await fastPath(argv)) return;
  const dist = (file) => pathToFileURL(join(__dirname, '..', 'dist', file)).href;
  if (argv[0] === 'exec') argv = (await import(dist('cli/exec-argv.js'))).execArgv(argv);
  const {execute} = await import('@oclif/core');
  // cudaenv has no plugins: skip oclif's user-plugin lookup, which reads (and on an
  // unwritable HOME warns about) ~/.local/share/cudaenv/package.json at every start.
  await execute({args: argv, dir: pathToFileURL(__filename).href, loadOptions: {root: join(__dirname, '..'), userPlugins: false}});
}

// A rejection is the last resort's once it is installed (unhandledRejection), Node's before.
void main();
