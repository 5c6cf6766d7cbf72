#!/usr/bin/env node
// The Node.js releases this repository uses besides the one running it, each pinned by version
// and by the SHA-512 the npm registry publishes for its node-linux-* package:
//   - the Node.js inside the single executables (scripts/build-exe.mjs, NODE_EXE);
//   - the lines the npm package is tested on in CI besides the machine's (.ci/run, scripts/test-node-lines.sh).
// A package is fetched with `npm pack` (npm's own cache makes a second fetch local), checked
// against its pin before anything of it runs, and unpacked into a cache directory; an unpacked
// copy that was checked is used again as it is.
//
// Usage: node scripts/pinned-node.mjs VERSION [x64|arm64] [--cache DIR]
//   prints the path of that Node.js's `node` (fetching it into DIR, default .cache/node, first).
import {execFileSync, spawnSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import {existsSync, mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** version -> arch -> the registry's integrity of node-linux-ARCH@version. */
export const PINNED = {
  '26.12.1': {
    x64: 'sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==',
    arm64: 'sha512-8Oxs6Y7rDcKufVIM/zYRSwytj46WOrZk7yFCLTKDcs17bBjAeD9HMAqo97hMfMyxozIud0S4vZCs5WB/3iavNQ==',
  },
  '24.22.3': {x64: 'sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=='},
  '22.23.5': {x64: 'sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw=='},
};
/** The Node.js inside the single executables. */
export const NODE_EXE = '26.12.1';
/** The lines CI runs the CLI, shell and install tests on besides the machine's Node.js (README: supported lines). */
export const TESTED_LINES = ['22.23.5', '24.22.3', '26.12.1'];

export class PinnedNodeError extends Error {
  constructor(message, hint) {
    super(message);
    this.hint = hint;
  }
}

/** The `node` of VERSION for ARCH under CACHE: fetched from the npm registry, checked against its pin, unpacked. */
export function pinnedNode(version, arch, cache = join(root, '.cache', 'node'), log = () => {}) {
  const integrity = PINNED[version]?.[arch];
  if (!integrity) throw new PinnedNodeError(`no pinned Node.js ${version} for ${arch}`, `Pinned: ${Object.entries(PINNED).map(([v, a]) => `${v} (${Object.keys(a).join(', ')})`).join('; ')} (scripts/pinned-node.mjs).`);
  const name = `node-linux-${arch}`;
  const dir = join(cache, `${name}-${version}`);
  const binary = join(dir, 'package', 'bin', 'node');
  if (existsSync(binary) && existsSync(join(dir, '.verified')) && readFileSync(join(dir, '.verified'), 'utf8').trim() === integrity) return binary;
  const tgz = join(cache, `${name}-${version}.tgz`);
  mkdirSync(cache, {recursive: true});
  if (!existsSync(tgz)) {
    log(`fetching ${name}@${version} from the npm registry`);
    // --loglevel=error, not --silent: npm's own reason (ENOSPC, ETIMEDOUT...) is then printed, where
    // its exit status alone is an errno folded into a byte (228: no space left on device).
    const r = spawnSync('npm', ['pack', `${name}@${version}`, '--pack-destination', cache, '--loglevel=error'], {stdio: ['ignore', 'ignore', 'inherit']});
    if (r.status !== 0) throw new PinnedNodeError(`npm pack ${name}@${version} failed (exit ${r.status}; npm's reason is above)`, `Check that the npm registry is reachable (npm config get registry) and that ${cache} and npm's cache (npm config get cache) have room, or put the package file at ${tgz}`);
  }
  const [algorithm, expected] = integrity.split(/-(.*)/s);
  const actual = createHash(algorithm).update(readFileSync(tgz)).digest('base64');
  if (actual !== expected) {
    rmSync(tgz, {force: true});
    throw new PinnedNodeError(`${tgz} has ${algorithm} ${actual}, not the pinned ${expected}: removed it`, 'Run again to fetch it anew; if it differs again, the registry serves another file than the one pinned in scripts/pinned-node.mjs.');
  }
  rmSync(dir, {recursive: true, force: true});
  mkdirSync(dir, {recursive: true});
  execFileSync('tar', ['-xzf', tgz, '-C', dir, 'package/bin/node', 'package/LICENSE']);
  // The unpacked copy is what is used from now on: the package file is not needed again.
  rmSync(tgz, {force: true});
  writeFileSync(join(dir, '.verified'), `${integrity}\n`);
  return binary;
}

function main(argv) {
  const args = [...argv];
  let cache;
  const at = args.indexOf('--cache');
  if (at >= 0) [, cache] = args.splice(at, 2);
  const [version, arch = 'x64', ...rest] = args;
  if (!version || rest.length > 0 || (at >= 0 && !cache)) {
    process.stderr.write('usage: node scripts/pinned-node.mjs VERSION [x64|arm64] [--cache DIR]\n');
    process.exit(2);
  }
  try {
    process.stdout.write(`${pinnedNode(version, arch, cache, (m) => process.stderr.write(`pinned-node: ${m}\n`))}\n`);
  } catch (error) {
    if (!(error instanceof PinnedNodeError)) throw error;
    process.stderr.write(`pinned-node: ${error.message}\n${error.hint}\n`);
    process.exit(1);
  }
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) main(process.argv.slice(2));
