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

const {join, resolve} = require('node:path');
const {pathToFileURL} = require('node:url');

/**
 * Node.js >= 22.1 keeps V8's compiled code of the bundle (and of oclif, for the other commands) in
 * the store's cache/node, so that a start does not compile 450 KB of JavaScript again: a sixth of a
 * cached `check` (issue 42, bench/RESULTS.md). Node writes those files itself, not through
 * src/core/safe-fs, so only where nobody else can reach them (docs/security.md): the store's cache
 * directory must exist already (a start creates no store), and it and every directory above it must
 * be no link, be root's or this user's own, and be writable by nobody else (a directory above it may
 * be a sticky one such as /tmp). NODE_COMPILE_CACHE, if set, is Node's own and wins;
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off (docs/configuration.md).
 */
function keepCompiledCode() {
  const {enableCompileCache} = require('node:module');
  const uid = process.getuid?.();
  if (typeof enableCompileCache !== 'function' || uid === undefined || process.env.NODE_COMPILE_CACHE || process.env.NODE_DISABLE_COMPILE_CACHE) return;
  const store = process.env.CUDAENV_DIR ? resolve(process.env.CUDAENV_DIR) : join(process.env.HOME || require('node:os').homedir(), '.cudaenv');
  const cache = join(store, 'cache');
  const {lstatSync} = require('node:fs');
  for (let dir = cache, last = true; ; last = false) {
    let st;
    try {
      st = lstatSync(dir);
    } catch {
      return;
    }
    if (!st.isDirectory() || (st.uid !== uid && st.uid !== 0)) return;
    if ((st.mode & 0o022) !== 0 && (last || (st.mode & 0o1000) === 0 || st.uid !== 0)) return;
    const up = join(dir, '..');
    if (up === dir) break;
    dir = up;
  }
  enableCompileCache(join(cache, 'node'));
}

async function start() {
  keepCompiledCode();
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
