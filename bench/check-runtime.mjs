#!/usr/bin/env node
// Issue 32: the cost of following what CUDA libraries dlopen at run time, on real CUDA library
// directories (Debian's CUDA 12.4 and 11.8 libraries, libnvrtc with its builtins, fetched by
// test/fixtures/fetch-cuda-libs.sh, and this machine's /usr/local/cuda-13.0/lib), cold
// (--no-cache: every file read and modelled) and cached (unchanged tree), each with and without
// the run-time loads (--no-runtime-loads), interleaved, beside `node -e 0` and an `ldd -r` loop.
// Usage: npm run build && node bench/check-runtime.mjs [RUNS]
import {existsSync, mkdtempSync, readdirSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {spawnSync} from 'node:child_process';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'bin', 'cudaenv');
const dl = join(root, 'test', 'fixtures', 'downloaded');
const dirs = [
  join(dl, 'trixie', 'usr', 'lib', 'x86_64-linux-gnu'),
  join(dl, 'trixie-runtime', 'usr', 'lib', 'x86_64-linux-gnu'),
  join(dl, 'bookworm', 'usr', 'lib', 'x86_64-linux-gnu'),
  '/usr/local/cuda-13.0/lib',
].filter((d) => existsSync(d));
if (dirs.length < 2) {
  console.error('bench/check-runtime.mjs: the real CUDA libraries are missing: bash test/fixtures/fetch-cuda-libs.sh');
  process.exit(2);
}
const runs = Number(process.argv[2] ?? 10);
const store = mkdtempSync(join(tmpdir(), 'cudaenv-bench-runtime-'));
const env = {...process.env, CUDAENV_DIR: store};
// Node 20 parses NODE_EXTRA_CA_CERTS before any code runs: the anchor must not pay it where the launcher defers it.
delete env.NODE_EXTRA_CA_CERTS;
delete env.LD_LIBRARY_PATH;
const files = dirs.flatMap((d) => readdirSync(d).filter((n) => /\.so(\.\d+)*$/.test(n)).map((n) => join(d, n)));
const loop = 'for f in "$@"; do ldd -r "$f" >/dev/null 2>&1; done';
try {
  // Warm both caches (the verdict cache keys on --runtime-loads).
  for (const extra of [[], ['--no-runtime-loads']]) spawnSync(cli, ['check', ...extra, ...dirs], {env});
  const rows = compare([
    {name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options: {env}},
    {name: `ldd -r loop (${files.length} files)`, cmd: 'bash', args: ['-c', loop, 'bash', ...files]},
    {name: 'check --no-cache (run-time loads)', cmd: cli, args: ['check', '--no-cache', ...dirs], options: {env, allowFailure: true}},
    {name: 'check --no-cache --no-runtime-loads', cmd: cli, args: ['check', '--no-cache', '--no-runtime-loads', ...dirs], options: {env, allowFailure: true}},
    {name: 'check, cached (run-time loads)', cmd: cli, args: ['check', ...dirs], options: {env, allowFailure: true}},
    {name: 'check, cached, --no-runtime-loads', cmd: cli, args: ['check', '--no-runtime-loads', ...dirs], options: {env, allowFailure: true}},
  ], {runs, warmup: 1});
  const node = rows[0].median;
  console.log(`dirs: ${dirs.join(' ')}`);
  console.log('| command | median ms | min ms | max ms | ratio to node -e 0 |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const r of rows) console.log(`| ${r.name} | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} | ${(r.median / node).toFixed(2)}x |`);
  console.log(`${runs} interleaved runs; run-time loads cost ${(rows[2].median - rows[3].median).toFixed(0)} ms cold, ${(rows[4].median - rows[5].median).toFixed(0)} ms cached`);
} finally {
  rmSync(store, {recursive: true, force: true});
}
