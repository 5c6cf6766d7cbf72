// Issue 37: the check of a real CUDA build of PyTorch, cold and cached, beside the `ldd -r` loop.
// The tree is Debian trixie's python3-torch-cuda 2.6.0 (libtorch-cuda-2.6) with NVIDIA's CUDA
// 12.4.1 libraries as Debian packages them and the driver's libcuda1, as a system image that
// bench/fetch-torch.sh unpacks (run it first, as root; 6.8 GB). The check runs on the host with
// CUDAENV_SYSROOT set to the image, on 28 files (3 GB: torch/lib, torch's _C extension module,
// libtorch_cuda and the CUDA libraries torch loads); the `ldd -r` loop runs the image's own ldd in a chroot over the
// same files. The goal: the cached check of the unchanged tree costs at most 2x `node -e 0` (a
// check after every switch costs what the switch costs).
// Besides the times: the cached report must be the uncached one byte for byte, also from another
// working directory; and under strace, the cached check must start no process and open none of
// the checked libraries (no symbol table read), which is what issue 37 asked for.
// Usage: npm run build && sudo bash bench/fetch-torch.sh && node bench/check-torch.mjs [runs] [IMAGE]
// (CUDAENV_BENCH_BEFORE=DIR: a built clone of an earlier commit, its cached check timed beside)
import {spawnSync} from 'node:child_process';
import {existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// CUDAENV_BENCH_BEFORE=CLONE also times the cached check of another build (a worktree of an earlier commit).
const cli = join(root, 'bin', 'cudaenv');
const before = process.env.CUDAENV_BENCH_BEFORE ? join(process.env.CUDAENV_BENCH_BEFORE, 'bin', 'cudaenv') : null;
const runs = Number(process.argv[2] ?? 10);
const image = process.argv[3] ?? join(root, 'bench', 'out', 'torch-trixie');
const torch = '/usr/lib/python3/dist-packages/torch';
const lib = '/usr/lib/x86_64-linux-gnu';
if (!existsSync(join(image, torch, 'lib', 'libtorch.so'))) {
  console.error(`no PyTorch image at ${image}: run \`sudo bash bench/fetch-torch.sh\` first`);
  process.exit(2);
}
// torch/lib holds links to libtorch.so and the rest; libtorch_cuda (1.2 GB) only its dependents name.
const cuda = ['libtorch_cuda.so.2.6', 'libcudart.so.12', 'libcublas.so.12', 'libcublasLt.so.12', 'libcufft.so.11', 'libcurand.so.10',
  'libcusolver.so.11', 'libcusolverMg.so.11', 'libcusparse.so.12', 'libnvJitLink.so.12', 'libnvrtc.so.12', 'libnvrtc-builtins.so.12.4',
  'libcupti.so.12', 'libnccl.so.2', 'libnvToolsExt.so.1', 'libcudnn.so.9', 'libcuda.so.1', 'libnvidia-ptxjitcompiler.so.1'];
const inImage = [`${torch}/lib`, `${torch}/_C.cpython-313-x86_64-linux-gnu.so`, ...cuda.map((n) => `${lib}/${n}`)];
const targets = inImage.map((p) => image + p);

const store = mkdtempSync(join(tmpdir(), 'cudaenv-bench-torch-'));
const elsewhere = mkdtempSync(join(tmpdir(), 'cudaenv-bench-cwd-'));
process.on('exit', () => {
  rmSync(store, {recursive: true, force: true});
  rmSync(elsewhere, {recursive: true, force: true});
  rmSync(`${store}-before`, {recursive: true, force: true});
});
const env = {...process.env, CUDAENV_DIR: store, CUDAENV_SYSROOT: image, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`};
// NODE_EXTRA_CA_CERTS too: Node 20 parses that file before any code runs (50-85 ms), so with it set the
// anchor `node -e 0` paid it while the launcher defers it (bin/cudaenv): a ratio against an anchor 3x
// its own cost (this machine sets it; 1.05x measured so against 3.03x without it, 2026-12-06).
for (const v of ['NODE_OPTIONS', 'LD_LIBRARY_PATH', 'LD_PRELOAD', 'GLIBC_TUNABLES', 'NODE_EXTRA_CA_CERTS']) delete env[v];

const noArgEnv = {...env, PYTHONPATH: `${image}/usr/lib/python3/dist-packages`, PATH: `/usr/bin:/bin:${dirname(process.execPath)}`};
delete noArgEnv.CUDAENV_SYSROOT;
const first = spawnSync(cli, ['check', '--json', '--no-cache', ...targets], {env, encoding: 'utf8', maxBuffer: 256 << 20});
const report = JSON.parse(first.stdout);
const files = report.checked;
// A path of the image with its links followed inside the image (libcuda.so.1 -> /etc/alternatives/...).
const hostPath = (path) => {
  let p = path;
  for (let i = 0; i < 40 && lstatSync(p, {throwIfNoEntry: false})?.isSymbolicLink(); i++) {
    const to = readlinkSync(p);
    p = to.startsWith('/') ? image + to : resolve(dirname(p), to);
  }
  return p;
};
const bytes = files.reduce((sum, f) => sum + statSync(hostPath(f)).size, 0);
// The files as the image names them, for its ldd.
const imageFiles = files.map((f) => (f.startsWith(`${image}/`) ? f.slice(image.length) : f));
const loop = 'for f in "$@"; do ldd -r "$f"; done >/dev/null 2>&1';

// The first check and the `ldd -r` loop, each reading the 3.3 GB, are timed beside each other; the
// cached forms beside `node -e 0`, apart from them (in the same run): in one round-robin with the
// heavy pair every light command ran 15-20% slower, the anchor less (57 vs 47 ms for the cached check,
// 29 vs 27 for `node -e 0`, 2026-12-06), which measured the heavy neighbours rather than the check.
const heavy = compare([
  {name: `cudaenv check --no-cache (${files.length} files, first check)`, cmd: cli, args: ['check', '--no-cache', ...targets], options: {env, allowFailure: true}},
  {name: `chroot IMAGE bash -c 'for f; do ldd -r "$f"; done' (${files.length} files)`, cmd: 'chroot', args: [image, '/usr/bin/bash', '-c', loop, 'bash', ...imageFiles], options: {env, allowFailure: true}},
  // It fails on this host (below), so it is checked again each time: a heavy one too.
  {name: 'cudaenv check (no PATH: active toolkit and Python environment)', cmd: cli, args: ['check'], options: {env: noArgEnv, allowFailure: true}},
], {runs, warmup: 1});
// The cache is filled by compare()'s warm-up rounds; files younger than 2 s are never cached.
const light = compare([
  {name: 'cudaenv check (unchanged tree, cached)', cmd: cli, args: ['check', ...targets], options: {env, allowFailure: true}},
  {name: 'cudaenv check (the same, from another directory)', cmd: cli, args: ['check', ...targets], options: {env, cwd: elsewhere, allowFailure: true}},
  // Issue 42: every form of a cached check, not only explicit paths. The import model names the
  // image's interpreter (--exe is an image path under CUDAENV_SYSROOT); `check` without PATH (timed
  // with the heavy ones) finds torch through the Python environment (the host's python3 with the
  // image's dist-packages on PYTHONPATH: the host's loader, the form a user of a system torch runs)
  // and checks the system toolkit.
  {name: 'cudaenv check torch/_C.so torch/lib --exe python3 (import model, cached)', cmd: cli, args: ['check', '--exe', '/usr/bin/python3.13', targets[1], targets[0]], options: {env, allowFailure: true}},
  {name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options: {env}},
  ...(before ? [{name: `the same cached check by ${process.env.CUDAENV_BENCH_BEFORE} (before)`, cmd: before, args: ['check', ...targets],
    options: {env: {...env, CUDAENV_DIR: `${store}-before`}, allowFailure: true}}] : []),
], {runs: 2 * runs, warmup: 2});
const results = [heavy[0], light[0], light[1], heavy[1], light[2], heavy[2], ...light.slice(3)];

const cached = spawnSync(cli, ['check', '--json', ...targets], {env, encoding: 'utf8', maxBuffer: 256 << 20}).stdout;
// The text of the plain check, kept whole (src/core/elf/cache/report-memo.ts), against a check without any cache.
const text = (args) => spawnSync(cli, ['check', ...args, ...targets], {env, encoding: 'utf8', maxBuffer: 256 << 20}).stdout;
const keptText = text([]) === text(['--no-cache']);
// `check` without PATH fails on this host (the host's loader finds none of the image's libraries):
// a failing report is never kept, so that row is a check made again each time, not a cached one.
const noArgStatus = spawnSync(cli, ['check'], {env: noArgEnv, stdio: 'ignore'}).status;
const cachedElsewhere = spawnSync(cli, ['check', '--json', ...targets], {env, cwd: elsewhere, encoding: 'utf8', maxBuffer: 256 << 20}).stdout;

// What the cached check does, from strace: processes started after Node (the launcher's own
// readlink and exec come before), and files opened among those checked.
let traced = null;
if (spawnSync('strace', ['-V']).status === 0) {
  const log = join(store, 'strace.log');
  spawnSync('strace', ['-f', '-qq', '-e', 'trace=execve,open,openat', '-o', log, cli, 'check', ...targets], {env, stdio: 'ignore'});
  const lines = readFileSync(log, 'utf8').split('\n');
  const nodeAt = lines.findIndex((l) => /execve\("[^"]*\/node", .* = 0$/.test(l));
  const after = lines.slice(nodeAt + 1);
  // By inode: the check opens a file by whichever path its search gave.
  const inode = (p) => {
    try {
      const st = statSync(p);
      return `${st.dev}:${st.ino}`;
    } catch {
      return null;
    }
  };
  const checkedInodes = new Set(files.map((f) => inode(hostPath(f))));
  traced = {
    started: after.filter((l) => /execve\(/.test(l)).length,
    opened: after.filter((l) => {
      const m = /open(?:at)?\((?:AT_FDCWD, )?"([^"]+)"/.exec(l);
      return m && !/= -1 /.test(l) && checkedInodes.has(inode(m[1]));
    }).length,
  };
}

const [cold, warm, warmElsewhere, ldd, importModel, noArg, node, beforeWarm] = results;
console.log('| command | median ms | min ms | max ms |');
console.log('| --- | --- | --- | --- |');
for (const r of results) console.log(`| \`${r.name}\` | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} |`);
console.log(`\n${files.length} files checked, ${(bytes / 1e9).toFixed(2)} GB; ${report.problems.filter((p) => p.kind !== 'unversioned-undefined-symbol').length} problems besides unversioned symbols; ${runs} interleaved runs.`);
console.log(`cached: ${(warm.median / node.median).toFixed(2)}x node -e 0 (goal <= 2x): ${warm.median <= 2 * node.median ? 'MET' : 'NOT MET'}; from another directory ${(warmElsewhere.median / node.median).toFixed(2)}x`);
if (beforeWarm) console.log(`before: the cached check took ${(beforeWarm.median / node.median).toFixed(2)}x node -e 0 (${(beforeWarm.median / warm.median).toFixed(2)}x now)`);
console.log(`import model (--exe): ${(importModel.median / node.median).toFixed(2)}x node -e 0 (goal <= 2x): ${importModel.median <= 2 * node.median ? 'MET' : 'NOT MET'}`);
console.log(noArgStatus === 0 ? `no PATH: ${(noArg.median / node.median).toFixed(2)}x node -e 0 (goal <= 2x): ${noArg.median <= 2 * node.median ? 'MET' : 'NOT MET'}`
  : `no PATH: fails here (exit ${noArgStatus}), so it is checked again each time (${(noArg.median / node.median).toFixed(2)}x node -e 0); bench/check-torch-noarg.sh times the passing form inside the image`);
console.log(`ldd -r loop / check: first check ${(ldd.median / cold.median).toFixed(1)}x, cached ${(ldd.median / warm.median).toFixed(1)}x`);
console.log(`cached report identical to the uncached one: ${cached === first.stdout ? 'yes' : 'NO'}; from another directory: ${cachedElsewhere === first.stdout ? 'yes' : 'NO'}; the kept text: ${keptText ? 'yes' : 'NO'}`);
if (traced) console.log(`cached check under strace: ${traced.started} processes started after Node, ${traced.opened} of the checked files opened`);
else console.log('strace not installed: processes and opened files not counted');
console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
process.exitCode = cached === first.stdout && cachedElsewhere === first.stdout && keptText && (!traced || (traced.started === 0 && traced.opened === 0)) ? 0 : 1;
