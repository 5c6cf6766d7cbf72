'use strict';
// In the single executable (scripts/build-exe.mjs) this file replaces @oclif/core's
// lib/module-loader.js: oclif loads commands and hooks by file path, and the executable has no
// such files. The modules are in the bundle, by their path relative to the package root
// (src/exe/main.ts registers them); oclif asks for PACKAGE_ROOT/dist/commands/use.js or, from a
// hook's target, PACKAGE_ROOT/dist/hooks/command-not-found (no extension).
const {isAbsolute, relative, sep} = require('node:path');
const {ModuleLoadError} = require('./errors/errors/module-load');

function find(modulePath) {
  const state = globalThis[Symbol.for('cudaenv.exe')];
  const rel = relative(state.root, String(modulePath)).split(sep).join('/');
  for (const candidate of [rel, `${rel}.js`, `${rel}/index.js`]) {
    if (!candidate.startsWith('..') && !isAbsolute(candidate) && Object.hasOwn(state.modules, candidate)) {
      return {filePath: `${state.root}/${candidate}`, load: state.modules[candidate]};
    }
  }
  throw new ModuleLoadError(`the executable holds no module ${rel} (it holds ${Object.keys(state.modules).join(', ')}); this is a bug in cudaenv's build (scripts/build-exe.mjs), please report it`);
}

async function load(_config, modulePath) {
  return find(modulePath).load();
}

async function loadWithData(_config, modulePath) {
  const {filePath, load: loader} = find(modulePath);
  return {filePath, isESM: true, module: await loader()};
}

async function loadWithDataFromManifest(cached, root) {
  if (!cached.relativePath) throw new ModuleLoadError(`Cached command ${cached.id} does not have a relative path`);
  return loadWithData(undefined, `${root}/${cached.relativePath.join('/')}`);
}

function isPathModule(filePath) {
  return filePath.startsWith('.') || isAbsolute(filePath);
}

module.exports = {load, loadWithData, loadWithDataFromManifest, isPathModule};
