// A stand-in for a CUDA toolkit plus a pip Python environment with torch and the nvidia
// wheels, built from real ELF libraries: NVIDIA's own where the project has them
// (test/fixtures/downloaded/trixie: libcudart, libnvJitLink, libcusparse, libcupti, ...,
// from Debian's CUDA 12.4 packages), the rest compiled with cc, each with its soname, its
// DT_NEEDED list and (torch, as pip's wheels do) a RUNPATH into ../../nvidia/*/lib. Every
// library calls a function of each library it needs, so the check binds real symbols.
import {execFileSync} from 'node:child_process';
import {existsSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const REAL = join(REPO, 'test', 'fixtures', 'downloaded', 'trixie', 'usr', 'lib', 'x86_64-linux-gnu');

function fn(soname) {
  return `f_${soname.replace(/[^A-Za-z0-9]/g, '_')}`;
}

/** Compiles DIR/SONAME needing NEEDED (sonames found in dirs given by -L), with RUNPATH. */
function build(dir, soname, needed = [], {libDirs = [], runpath} = {}) {
  mkdirSync(dir, {recursive: true});
  const src = join(dir, `.${soname}.c`);
  const calls = needed.map((n) => `extern int ${fn(n)}(void);`).join('\n');
  const body = needed.map((n) => `${fn(n)}()`).join(' + ') || '0';
  writeFileSync(src, `${calls}\nint ${fn(soname)}(void) { return ${body}; }\n`);
  const args = ['-shared', '-fPIC', '-o', join(dir, soname), src, `-Wl,-soname,${soname}`, '-Wl,--no-as-needed'];
  for (const d of libDirs) args.push(`-L${d}`);
  for (const n of needed) args.push(`-l:${n}`);
  if (runpath) args.push(`-Wl,-rpath,${runpath}`, '-Wl,--enable-new-dtags');
  execFileSync('cc', args);
}

/** A real NVIDIA library, linked (not copied: some are hundreds of MB) under its soname. */
function real(dir, soname) {
  mkdirSync(dir, {recursive: true});
  const file = join(REAL, soname);
  if (!existsSync(file)) throw new Error(`missing ${file}: the project's downloaded fixtures`);
  symlinkSync(file, join(dir, soname));
}

/** Returns {toolkit, venv, count}: toolkit has bin/ and lib64/, venv is a VIRTUAL_ENV. */
export function buildTorchTree(root) {
  const toolkit = join(root, 'toolkit-12.4.1');
  const lib64 = join(toolkit, 'lib64');
  mkdirSync(join(toolkit, 'bin'), {recursive: true});
  writeFileSync(join(toolkit, 'version.json'), '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}\n');
  writeFileSync(join(toolkit, 'bin', 'nvcc'), '#!/bin/sh\necho "Cuda compilation tools, release 12.4, V12.4.131"\n', {mode: 0o755});
  let count = 0;
  for (const so of ['libcudart.so.12', 'libnvJitLink.so.12', 'libcusparse.so.12', 'libcupti.so.12', 'libnvperf_host.so', 'libnvperf_target.so', 'libpcsamplingutil.so', 'libcheckpoint.so']) {
    real(lib64, so);
    count++;
  }
  const tk = [['libcublasLt.so.12', []], ['libcublas.so.12', ['libcublasLt.so.12']], ['libcufft.so.11', []], ['libcurand.so.10', []],
    ['libcusolver.so.11', ['libcublas.so.12', 'libcublasLt.so.12', 'libcusparse.so.12']], ['libnvrtc.so.12', []], ['libnppc.so.12', []]];
  for (const [so, needed] of tk) {
    build(lib64, so, needed, {libDirs: [lib64], runpath: '$ORIGIN'});
    count++;
  }

  const sp = join(root, 'venv', 'lib', 'python3.11', 'site-packages');
  const nv = (w) => join(sp, 'nvidia', w, 'lib');
  for (const [w, so] of [['cuda_runtime', 'libcudart.so.12'], ['nvjitlink', 'libnvJitLink.so.12'], ['cusparse', 'libcusparse.so.12'], ['cuda_cupti', 'libcupti.so.12']]) {
    real(nv(w), so);
    count++;
  }
  const wheels = [
    ['cublas', 'libcublasLt.so.12', []], ['cublas', 'libcublas.so.12', ['libcublasLt.so.12']],
    ['cuda_nvrtc', 'libnvrtc.so.12', []], ['cufft', 'libcufft.so.11', []], ['cufft', 'libcufftw.so.11', ['libcufft.so.11']],
    ['curand', 'libcurand.so.10', []], ['cusolver', 'libcusolver.so.11', ['libcublas.so.12', 'libcublasLt.so.12', 'libcusparse.so.12', 'libnvJitLink.so.12']],
    ['cusolver', 'libcusolverMg.so.11', ['libcublas.so.12', 'libcublasLt.so.12']], ['nccl', 'libnccl.so.2', []], ['nvtx', 'libnvToolsExt.so.1', []],
    ['cusparselt', 'libcusparseLt.so.0', []],
    ['cudnn', 'libcudnn_graph.so.9', []], ['cudnn', 'libcudnn_engines_precompiled.so.9', ['libcudnn_graph.so.9']],
    ['cudnn', 'libcudnn_engines_runtime_compiled.so.9', ['libcudnn_graph.so.9', 'libnvrtc.so.12']], ['cudnn', 'libcudnn_heuristic.so.9', ['libcudnn_graph.so.9']],
    ['cudnn', 'libcudnn_ops.so.9', ['libcudnn_graph.so.9']], ['cudnn', 'libcudnn_cnn.so.9', ['libcudnn_ops.so.9', 'libcudnn_graph.so.9']],
    ['cudnn', 'libcudnn_adv.so.9', ['libcudnn_ops.so.9', 'libcudnn_graph.so.9']], ['cudnn', 'libcudnn.so.9', []],
  ];
  // Where each soname lives among the wheels: what a RUNPATH of ../../nvidia/*/lib finds.
  const home = new Map([['libcudart.so.12', 'cuda_runtime'], ['libnvJitLink.so.12', 'nvjitlink'], ['libcusparse.so.12', 'cusparse'], ['libcupti.so.12', 'cuda_cupti']]);
  for (const [w, so] of wheels) home.set(so, w);
  const wheelDirs = [...new Set(home.values())].map(nv);
  for (const [w, so, needed] of wheels) {
    const rp = ['$ORIGIN', ...[...new Set(needed.map((n) => home.get(n)))].map((x) => `$ORIGIN/../../${x}/lib`)].join(':');
    build(nv(w), so, needed, {libDirs: wheelDirs, runpath: rp});
    count++;
  }
  const torchLib = join(sp, 'torch', 'lib');
  const torchRunpath = ['$ORIGIN', ...[...new Set(home.values())].map((w) => `$ORIGIN/../../nvidia/${w}/lib`)].join(':');
  const torch = [
    ['libgomp-a34b3233.so.1', []], ['libc10.so', []], ['libtorch_global_deps.so', ['libcudart.so.12', 'libcublas.so.12', 'libnvToolsExt.so.1']],
    ['libc10_cuda.so', ['libc10.so', 'libcudart.so.12']], ['libshm.so', ['libc10.so']],
    ['libtorch_cpu.so', ['libc10.so', 'libgomp-a34b3233.so.1']], ['libcaffe2_nvrtc.so', ['libnvrtc.so.12']],
    ['libtorch_cuda.so', ['libc10.so', 'libc10_cuda.so', 'libtorch_cpu.so', 'libcudart.so.12', 'libcublas.so.12', 'libcublasLt.so.12', 'libcudnn.so.9', 'libcufft.so.11', 'libcurand.so.10', 'libcusparse.so.12', 'libcusolver.so.11', 'libnccl.so.2', 'libnvToolsExt.so.1', 'libcupti.so.12', 'libnvJitLink.so.12', 'libcusparseLt.so.0']],
    ['libtorch.so', ['libtorch_cpu.so', 'libtorch_cuda.so']], ['libtorch_python.so', ['libtorch.so', 'libc10.so', 'libshm.so']],
  ];
  for (const [so, needed] of torch) {
    build(torchLib, so, needed, {libDirs: [torchLib, ...wheelDirs], runpath: torchRunpath});
    count++;
  }
  // As `python3 -m venv` makes it: bin/python3, a link to the interpreter the wheels are loaded by
  // (the check after a switch models them as its dlopen).
  const python = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p));
  if (python) {
    mkdirSync(join(root, 'venv', 'bin'), {recursive: true});
    symlinkSync(python, join(root, 'venv', 'bin', 'python3'));
  }
  return {toolkit, venv: join(root, 'venv'), count};
}

