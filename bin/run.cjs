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
 * The store's cache directory, where V8's compiled code of cudaenv is kept, or null. Code read back
 * runs as cudaenv, so only where nobody else can reach it (docs/security.md): the directory must
 * exist already (a start creates no store), and it and every directory above it must be no link, be
 * root's or this user's own, and be writable by nobody else (a directory above it may be a sticky
 * one such as /tmp). NODE_DISABLE_COMPILE_CACHE=1 keeps nothing.
 */
function trustedCacheDir() {
  const uid = process.getuid?.();
  if (uid === undefined || process.env.NODE_DISABLE_COMPILE_CACHE) return null;
  const store = process.env.CUDAENV_DIR ? resolve(process.env.CUDAENV_DIR) : join(process.env.HOME || require('node:os').homedir(), '.cudaenv');
  const cache = join(store, 'cache');
  const {lstatSync} = require('node:fs');
  for (let dir = cache, last = true; ; last = false) {
    let st;
    try {
      st = lstatSync(dir);
    } catch {
      return null;
    }
    if (!st.isDirectory() || (st.uid !== uid && st.uid !== 0)) return null;
    if ((st.mode & 0o022) !== 0 && (last || (st.mode & 0o1000) === 0 || st.uid !== 0)) return null;
    const up = join(dir, '..');
    if (up === dir) break;
    dir = up;
  }
  return cache;
}

/**
 * Node.js >= 22.1 keeps the compiled code of the modules it loads (oclif's, for the commands
 * outside the fast path) in cache/node itself (module.enableCompileCache): a sixth of a cached
 * `check` (issue 42, bench/RESULTS.md). NODE_COMPILE_CACHE, if set, is Node's own and wins.
 */
function keepCompiledCode(cache) {
  const {enableCompileCache} = require('node:module');
  if (cache !== null && typeof enableCompileCache === 'function' && !process.env.NODE_COMPILE_CACHE) enableCompileCache(join(cache, 'node'));
}

const BUNDLE = join(__dirname, '..', 'dist', 'fast-path.bundle.cjs');
/** The bundle's kept code: MAGIC, a 4-byte length, a JSON header, V8's data (src/core/self/kept-code.ts). */
const KEPT_NAME = 'fast-path.bundle.v8';
const MAGIC = Buffer.from('cudaenv-kept-code-1\n');
const KEPT_LIMIT = 64 * 1024 * 1024;

/**
 * The kept code of the bundle, if it was made from this very file by this Node.js: V8 checks its
 * own version and flags but of the source only its length, so the header names the bundle's
 * identity (device, inode, size, change time: any rewrite of the file changes it). Read with
 * O_NOFOLLOW from the trusted directory; anything amiss is no kept code.
 */
function readKept(path, identity) {
  const fs = require('node:fs');
  let fd;
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > KEPT_LIMIT || st.size < MAGIC.length + 4) return null;
    const buf = Buffer.allocUnsafe(st.size);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) got = fs.readSync(fd, buf, n, buf.length - n, null);
    if (n !== buf.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return null;
    const headerLength = buf.readUInt32LE(MAGIC.length);
    const dataAt = MAGIC.length + 4 + headerLength;
    if (dataAt > buf.length) return null;
    const header = JSON.parse(buf.toString('utf8', MAGIC.length + 4, dataAt));
    if (header?.identity !== identity || !Array.isArray(header.covers)) return null;
    return {covers: header.covers.filter((c) => typeof c === 'string'), data: buf.subarray(dataAt)};
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The bundle compiled with the code kept for it (a first check of 473 libraries spends a tenth of
 * its time compiling the functions it calls; issue 43), and a `keep` to call at exit that makes
 * that code again when this command ran what the kept code does not cover (the header lists what
 * it covers: the command, and whether it ran the loader model). Without a trusted cache directory,
 * or with NODE_COMPILE_CACHE set (Node's own cache then serves the bundle), a plain require.
 */
function loadBundle(cache) {
  // Only where V8 verifies the kept code's checksum (the launcher's flag): handed damaged code
  // without it, V8 crashes. The flag is part of what V8 checks the code against, so kept code is
  // made under it too (a start without it neither uses nor makes any).
  if (cache === null || process.env.NODE_COMPILE_CACHE || !process.execArgv.includes('--verify-snapshot-checksum')) return {bundle: require(BUNDLE), keep: () => {}};
  const fs = require('node:fs');
  const vm = require('node:vm');
  const Module = require('node:module');
  const source = fs.readFileSync(BUNDLE, 'utf8');
  const st = fs.statSync(BUNDLE, {bigint: true});
  const identity = `${st.dev}:${st.ino}:${st.size}:${st.ctimeNs}:${process.version}:${process.arch}`;
  const path = join(cache, 'node', KEPT_NAME);
  const kept = readKept(path, identity);
  const script = new vm.Script(Module.wrap(source), {filename: BUNDLE, ...(kept ? {cachedData: kept.data} : {})});
  const covers = kept && !script.cachedDataRejected ? kept.covers : [];
  // The module the bundle fills (module.exports), and a require that resolves from its place.
  const m = {id: BUNDLE, filename: BUNDLE, exports: {}, loaded: false};
  // The bundle's one import() (src/core/import-package.ts): a compiled script has none of its own.
  globalThis[Symbol.for('cudaenv.importPackage')] = (name) => import(name);
  script.runInThisContext().call(m.exports, m.exports, Module.createRequire(BUNDLE), m, BUNDLE, join(__dirname, '..', 'dist'));
  m.loaded = true;
  const bundle = m.exports;
  const keep = (command) => {
    const what = [command, ...bundle.phasesRun()].join('+');
    if (covers.includes(what)) return;
    try {
      bundle.restoreHeapFlags();
      const header = Buffer.from(JSON.stringify({identity, covers: [...covers, what]}));
      const length = Buffer.alloc(4);
      length.writeUInt32LE(header.length);
      bundle.keepCompiledBundle(path, Buffer.concat([MAGIC, length, header, script.createCachedData()]));
    } catch {
      // A cache: the next start compiles again.
    }
  };
  return {bundle, keep};
}

async function start(cache) {
  try {
    return loadBundle(cache);
  } catch (error) {
    // No bundle (a build whose bundling step failed): require() says MODULE_NOT_FOUND, the read ENOENT.
    if ((error?.code !== 'MODULE_NOT_FOUND' && error?.code !== 'ENOENT') || !String(error.message).includes('fast-path.bundle.cjs')) throw error;
    return {bundle: await import(pathToFileURL(join(__dirname, '..', 'dist', 'start.js')).href), keep: () => {}};
  }
}

async function main() {
  const cache = trustedCacheDir();
  keepCompiledCode(cache);
  const {bundle, keep} = await start(cache);
  const {installLastResort, fastPath} = bundle;
  installLastResort(); // an exception nothing caught: one line, exit 1, locks and staging cleaned up
  // The hot commands (`--version`, `current`, `use`, and `check PATH...` without flags) skip oclif:
  // loading it costs more than the whole command, and the shell hook and users call them often.
  let argv = process.argv.slice(2);
  if (await fastPath(argv)) {
    // Made at exit, when the command's functions are compiled (an exit status set by then stays).
    process.once('exit', () => keep(argv[0] ?? ''));
    return;
  }
  const dist = (file) => pathToFileURL(join(__dirname, '..', 'dist', file)).href;
  if (argv[0] === 'exec') argv = (await import(dist('cli/exec-argv.js'))).execArgv(argv);
  const {execute} = await import('@oclif/core');
  // cudaenv has no plugins: skip oclif's user-plugin lookup, which reads (and on an
  // unwritable HOME warns about) ~/.local/share/cudaenv/package.json at every start.
  await execute({args: argv, dir: pathToFileURL(__filename).href, loadOptions: {root: join(__dirname, '..'), userPlugins: false}});
}

// A rejection is the last resort's once it is installed (unhandledRejection), Node's before.
void main();
