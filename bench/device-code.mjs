#!/usr/bin/env node
// Issue 33, item 5: reading the GPU code of large CUDA libraries, beside `cuobjdump --list-elf` on
// the same files. Debian's libcusparse, libcublas, libnccl (bash test/fixtures/fetch-cuda-libs.sh)
// and, with CUDAENV_FETCH_LARGE=1, libcublasLt (440 MB) and PyTorch 2.6's libtorch_cuda (1.2 GB).
// - the reader alone, in this process: each file's device code read afresh (its entry headers);
// - `cudaenv check FILES --gpu 8.6`: --no-cache (loader model and device code read afresh) and
//   cached (the verdicts and the device code from the store), beside the same cached check
//   without --gpu and `node -e 0`, interleaved;
// - peak RSS (GNU time) of the uncached check, and of cuobjdump --list-elf (CUDA 13.1, and
//   Debian's 12.4) on the largest file; cuobjdump's wall time once per file.
// Usage: npm run build && node bench/device-code.mjs [RUNS]
import {spawnSync} from 'node:child_process';
import {existsSync, mkdtempSync, rmSync, statSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'bin', 'cudaenv');
const dl = join(root, 'test', 'fixtures', 'downloaded');
const lib = (suite, name) => join(dl, suite, 'usr', 'lib', 'x86_64-linux-gnu', name);
const files = [
  lib('trixie-gpu-code-large', 'libtorch_cuda.so.2.6'),
  lib('trixie-gpu-code-large', 'libcublasLt.so.12'),
  lib('trixie-gpu-code', 'libcublas.so.12'),
  lib('trixie', 'libcusparse.so.12'),
  lib('trixie-gpu-code', 'libnccl.so.2'),
].filter((f) => existsSync(f));
const cuobjdump = [
  ['cuobjdump 13.1', join(dl, 'cuobjdump-13.1', 'usr', 'local', 'cuda-13.1', 'bin', 'cuobjdump')],
  ['cuobjdump 12.4 (Debian)', join(dl, 'trixie-toolkit', 'usr', 'bin', 'cuobjdump')],
].filter(([, p]) => existsSync(p));
if (files.length < 3 || cuobjdump.length === 0) {
  console.error('bench/device-code.mjs: the real CUDA libraries or cuobjdump are missing: bash test/fixtures/fetch-cuda-libs.sh (CUDAENV_FETCH_LARGE=1 for the large ones)');
  process.exit(2);
}
const runs = Number(process.argv[2] ?? 5);
const store = mkdtempSync(join(tmpdir(), 'cudaenv-bench-device-code-'));
const env = {...process.env, CUDAENV_DIR: store};
// Node 20 parses NODE_EXTRA_CA_CERTS before any code runs: the anchor must not pay it where the launcher defers it.
delete env.NODE_EXTRA_CA_CERTS;
delete env.LD_LIBRARY_PATH;
delete env.NODE_OPTIONS;

function peak(cmd, args) {
  const start = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '@@%M', cmd, ...args], {env, encoding: 'utf8', maxBuffer: 256 << 20});
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const m = /@@(\d+)\s*$/.exec(r.stderr);
  return {mb: m ? Number(m[1]) / 1024 : Number.NaN, ms, lines: r.stdout.split('\n').filter((l) => /^(ELF|PTX) file/.test(l)).length};
}

try {
  const mb = (f) => (statSync(f).size / 2 ** 20).toFixed(0);
  // The reader alone: a fresh process per file, the time of readDeviceCode itself.
  const reader = join(root, 'dist', 'core', 'elf', 'read', 'device-code', 'index.js');
  console.log('| file | MB | kernel images | fat binaries | reader ms | cuobjdump --list-elf s (images) |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const f of files) {
    const script = `import(${JSON.stringify(reader)}).then(({readDeviceCode}) => { const t = process.hrtime.bigint(); const c = readDeviceCode(${JSON.stringify(f)}); const ms = Number(process.hrtime.bigint() - t) / 1e6; console.log(JSON.stringify({n: c.images.length, fatbins: c.fatbins, ms})); })`;
    const r = JSON.parse(spawnSync(process.execPath, ['-e', script], {env, encoding: 'utf8'}).stdout);
    const c = peak(cuobjdump[0][1], ['--list-elf', f]);
    console.log(`| ${f.replace(/^.*\//, '')} | ${mb(f)} | ${r.n} | ${r.fatbins} | ${r.ms.toFixed(1)} | ${(c.ms / 1000).toFixed(1)} (${c.lines}) |`);
  }
  spawnSync(cli, ['check', ...files, '--gpu', '8.6'], {env});
  spawnSync(cli, ['check', ...files], {env});
  const rows = compare([
    {name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options: {env}},
    {name: 'check FILES --gpu 8.6 --no-cache', cmd: cli, args: ['check', ...files, '--gpu', '8.6', '--no-cache'], options: {env, allowFailure: true}},
    {name: 'check FILES --gpu 8.6, cached', cmd: cli, args: ['check', ...files, '--gpu', '8.6'], options: {env, allowFailure: true}},
    {name: 'check FILES, cached (no --gpu)', cmd: cli, args: ['check', ...files], options: {env, allowFailure: true}},
  ], {runs, warmup: 1});
  console.log('\n| command | median ms | min ms | max ms |');
  console.log('| --- | --- | --- | --- |');
  for (const r of rows) console.log(`| ${r.name} | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} |`);
  console.log(`\n${runs} interleaved runs; the device code costs ${(rows[2].median - rows[3].median).toFixed(0)} ms in a cached check`);
  const biggest = files[0];
  console.log('\n| peak RSS, ' + biggest.replace(/^.*\//, '') + ` (${mb(biggest)} MB) | MB | s |`);
  console.log('| --- | --- | --- |');
  const c = peak(cli, ['check', biggest, '--gpu', '8.6', '--no-cache']);
  console.log(`| cudaenv check FILE --gpu 8.6 --no-cache | ${c.mb.toFixed(1)} | ${(c.ms / 1000).toFixed(2)} |`);
  for (const [name, tool] of cuobjdump) {
    const p = peak(tool, ['--list-elf', biggest]);
    console.log(`| ${name} --list-elf FILE | ${p.mb.toFixed(1)} | ${(p.ms / 1000).toFixed(2)} |`);
  }
} finally {
  rmSync(store, {recursive: true, force: true});
}
