import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readdirSync, realpathSync, symlinkSync} from 'node:fs';
import {basename, join} from 'node:path';
import {checkLibraries, type CheckReport} from '../../../../src/core/elf/index.js';
import {readElfSync} from '../../../../src/core/elf/read/elf/index.js';
import {callerLoads, pluginCallers} from '../../../../src/core/elf/runtime/callers.js';
import {makeTempDir, type TempDir} from '../../../helpers/tmp.js';
import {REPO_ROOT} from '../../../helpers/cli.js';
import {describeIf, testIf} from '../../../helpers/skip.js';
import {NEEDS} from '../../../helpers/capabilities.js';
import {buildLib, HAVE_GCC} from '../fixtures.js';
import {buildRunin, makeImage} from '../fuzz/images.js';
import {buildDlopenSpy, readSpyLog} from './dlopen-spy.js';

/**
 * Issue 43: programs that load every plugin of a directory, and NCCL's network plugin named by
 * NCCL_NET_PLUGIN. The oracles are real runs of the real files in a Debian trixie image (glibc
 * 2.41: trixie's CUDA 12.4 libraries and hwloc need 2.38) under the LD_PRELOAD dlopen spy
 * (./dlopen-spy.ts): the plugins each caller dlopens are the edges check lists, and a plugin the
 * real run cannot load is the one check warns about, with what the program loses.
 * - llama.cpp's ggml as node-llama-cpp 3.22.1 ships it (test/fixtures/fetch-llama-cpp.sh): its
 *   registry libggml.cuda.v0.5.0.so, 14 CPU backends and libggml-cuda.so, the CUDA 13 build
 *   (@node-llama-cpp/linux-x64-cuda) and the CUDA 12 build (-cuda-ext's fallback/). A program
 *   beside them calls ggml_backend_load_all(), as llama.cpp's own tools do.
 * - hwloc 2.12 (libhwloc15) with its contrib CUDA and NVML plugins (fetch-cuda-libs.sh).
 * No GPU here: ggml's CUDA backend, once loaded, finds no device and hwloc's plugins find none;
 * the loads up to there are the oracle.
 */
const DL = join(REPO_ROOT, 'test', 'fixtures', 'downloaded');
const LLAMA = join(DL, 'node-llama-cpp');
const BINS13 = join(LLAMA, 'node-llama-cpp-linux-x64-cuda-3.22.1', 'package', 'bins', 'linux-x64-cuda');
const CUDA12_PLUGIN = join(LLAMA, 'node-llama-cpp-linux-x64-cuda-ext-3.22.1', 'package', 'bins', 'linux-x64-cuda', 'fallback', 'libggml-cuda.so');
const PLUGINS = join(DL, 'trixie-plugins');
const RUNTIME = join(DL, 'trixie-runtime', 'usr', 'lib', 'x86_64-linux-gnu');
const GPU_CODE = join(DL, 'trixie-gpu-code', 'usr', 'lib', 'x86_64-linux-gnu');
const GLIBC_TRIXIE = join(DL, 'glibc-trixie');
const CUDA13 = '/usr/local/cuda-13.0/lib64';
/** Debian trixie's CUDA 12.4 runtime, cuBLAS, cuBLASLt and the driver's libcuda 550, as test/fixtures/fetch-corpus.sh unpacks them. */
const CORPUS_LIB = join(DL, 'corpus-trixie', 'usr', 'lib', 'x86_64-linux-gnu');
const HAVE_CORPUS = existsSync(join(CORPUS_LIB, 'libcublasLt.so.12')) && existsSync(join(CORPUS_LIB, 'nvidia', 'current', 'libcuda.so.1'));
const NOT_CORPUS = 'needs the corpus: bash test/fixtures/fetch-corpus.sh';
const REGISTRY = 'libggml.cuda.v0.5.0.so';

const HAVE_LLAMA = existsSync(join(LLAMA, 'node-llama-cpp-linux-x64-cuda-3.22.1', '.unpacked')) && existsSync(join(LLAMA, 'node-llama-cpp-linux-x64-cuda-ext-3.22.1', '.unpacked'));
const HAVE_DEBIAN = existsSync(join(PLUGINS, '.unpacked-libhwloc-contrib-plugins')) && existsSync(join(GLIBC_TRIXIE, '.unpacked-libc-bin'))
  && existsSync(join(RUNTIME, 'libcudart.so.12')) && existsSync(join(GPU_CODE, 'libcublas.so.12'));
const IS_ROOT = process.getuid?.() === 0;
const STATIC_LIBC = existsSync('/usr/lib/x86_64-linux-gnu/libc.a');
const CAN_RUN = process.arch === 'x64' && HAVE_GCC && IS_ROOT && STATIC_LIBC;
const WHY_NOT_RUN = process.arch !== 'x64' ? 'needs x86-64 (the dlopen spy is x86-64 assembly)' : !HAVE_GCC ? NEEDS.tool('gcc')
  : !IS_ROOT ? `${NEEDS.root} (the real runs are in a trixie image, with chroot)` : 'needs a static libc (libc6-dev) for the chroot helper';
const NOT_LLAMA = 'needs llama.cpp\'s CUDA builds for Node.js: bash test/fixtures/fetch-llama-cpp.sh';
const NOT_DEBIAN = 'needs hwloc, its plugins and the trixie image: bash test/fixtures/fetch-cuda-libs.sh';

function dlopenEdges(report: CheckReport, caller: string) {
  return report.objects.find((o) => basename(o.path) === caller)?.needed.filter((e) => e.dlopen) ?? [];
}

describe('callers of plugin directories, read from the real files', () => {
  testIf(HAVE_LLAMA, NOT_LLAMA)('ggml\'s registry: it imports dlopen and std::filesystem\'s directory_iterator, and "libggml-" lies in its code (no string holds it); libggml-cuda.so itself lists no directory', () => {
    const registry = join(BINS13, REGISTRY);
    const found = pluginCallers(readElfSync(registry, {symbols: 'undefined'}), registry, `test:${registry}`);
    expect(found.map((f) => f.fact.prefix)).toEqual(['libggml-']);
    // The backend names it tries are its strings.
    expect(found[0]!.strings).toEqual(expect.arrayContaining(['cuda', 'cpu', 'vulkan']));
    const cuda = join(BINS13, 'libggml-cuda.so');
    expect(pluginCallers(readElfSync(cuda, {symbols: 'undefined'}), cuda, `test:${cuda}`)).toEqual([]);
  });

  testIf(HAVE_DEBIAN, NOT_DEBIAN)('libhwloc.so.15: opendir, readdir, "hwloc_", "%s.so" and its plugin directory among its strings', () => {
    const lib = join(PLUGINS, 'usr', 'lib', 'x86_64-linux-gnu', 'libhwloc.so.15');
    const [found] = pluginCallers(readElfSync(lib, {symbols: 'undefined'}), lib, `test:${lib}`);
    expect(found?.fact.prefix).toBe('hwloc_');
    expect(found?.strings).toContain('/usr/lib/x86_64-linux-gnu/hwloc');
  });

  testIf(existsSync(join(GPU_CODE, 'libnccl.so.2')), NEEDS.realCudaLibs)('libnccl.so.2 (2.22.3): its template "libnccl-net-%s.so" completed with NCCL_NET_PLUGIN; without it, libnccl-net.so (optional)', () => {
    const nccl = join(GPU_CODE, 'libnccl.so.2');
    const info = readElfSync(nccl, {symbols: 'undefined'});
    const net = (env: Record<string, string>) => callerLoads(info, nccl, `test:${nccl}`, 'libnccl.so.2', '12', env).find((l) => l.names.some((n) => n.includes('nccl-net')));
    expect(net({})).toMatchObject({names: ['libnccl-net.so'], priority: 'suggested', role: {impact: 'optional'}});
    expect(net({NCCL_NET_PLUGIN: 'aws-ofi'})).toMatchObject({names: ['aws-ofi', 'libnccl-net-aws-ofi.so'], priority: 'recommended', role: {impact: 'feature'}});
    expect(net({NCCL_NET_PLUGIN: ''})?.names).toEqual(['libnccl-net.so']);
  });

  testIf(existsSync(join(GPU_CODE, 'libnccl.so.2')), NEEDS.realCudaLibs)('check of libnccl.so.2 with NCCL_NET_PLUGIN naming a plugin nowhere: a warning that names the plugin asked for; without the variable, nothing', async () => {
    const nccl = join(GPU_CODE, 'libnccl.so.2');
    const asked = await checkLibraries({targets: [nccl], runtimeEnv: {NCCL_NET_PLUGIN: 'aws-ofi'}});
    const plugin = asked.problems.filter((p) => p.edge === 'dlopen' && /aws-ofi/.test(p.library ?? ''));
    expect(plugin.map((p) => [p.kind, p.impact])).toEqual([['not-found', 'feature']]);
    expect(plugin[0]!.feature).toContain('NCCL_NET_PLUGIN=aws-ofi');
    const plain = await checkLibraries({targets: [nccl], runtimeEnv: {}});
    expect(plain.problems.filter((p) => p.edge === 'dlopen' && /nccl-net/.test(p.library ?? ''))).toEqual([]);
  });
});

describeIf(CAN_RUN && HAVE_DEBIAN, CAN_RUN ? NOT_DEBIAN : WHY_NOT_RUN)('real runs in a trixie image under the dlopen spy', () => {
  let tmp: TempDir;
  let root: string;
  let runin: string;
  let spy: string;
  let logs = 0;
  const LIB = () => join(root, 'usr', 'lib', 'x86_64-linux-gnu');

  beforeAll(() => {
    tmp = makeTempDir('cudaenv-plugin-dirs-');
    const base = realpathSync(tmp.dir);
    runin = buildRunin(join(base, 'runin'));
    root = join(base, 'trixie');
    makeImage(GLIBC_TRIXIE, root, runin);
    // hwloc and its plugins, libstdc++ for ggml: into the image's own directories, as the packages install them.
    const cp = spawnSync('cp', ['-a', join(PLUGINS, 'usr'), root], {encoding: 'utf8'});
    if (cp.status !== 0) throw new Error(`copying ${PLUGINS} into the image failed: ${cp.stderr}`);
    const ldconfig = spawnSync(runin, [root, '/', '--', '/sbin/ldconfig'], {encoding: 'utf8'});
    if (ldconfig.status !== 0) throw new Error(`ldconfig in the image failed: ${ldconfig.stderr}`);
    spy = buildDlopenSpy(join(root, 'opt', 'spy'));
    mkdirSync(join(root, 'proc'), {recursive: true});
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  /** A path the process in the image named, as the host (and check) names the same file. */
  const onHost = (p: string) => (p.startsWith(`${root}/`) ? p : `${root}${p}`);

  /** Files into a directory of the image: hard links where the file system allows, else copies. */
  function place(dir: string, files: string[]): string {
    mkdirSync(dir, {recursive: true});
    for (const f of files) {
      const r = spawnSync('cp', ['-l', f, dir]);
      if (r.status !== 0) spawnSync('cp', [f, dir]);
    }
    return dir;
  }

  /** Runs `program` in the image under the spy, with only `env` (and the spy's variables). */
  function spied(program: string, env: Record<string, string> = {}) {
    const log = join(root, 'opt', `spy-${++logs}.log`);
    const vars = Object.entries({PATH: '/usr/bin:/bin', ...env, LD_PRELOAD: spy, DLOPEN_SPY_LOG: log}).map(([k, v]) => `${k}=${v}`);
    // A private mount namespace with /proc in the image: ld.so's $ORIGIN of the program and ggml's
    // directory of the program both come from /proc/self/exe.
    const r = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t proc proc "$1/proc" && shift && exec "$@"', 'sh', root, runin, root, '/', ...vars, '--', program], {encoding: 'utf8', timeout: 120_000});
    return {stdout: r.stdout.trim(), stderr: r.stderr, status: r.status, loads: readSpyLog(log)};
  }

  describe('hwloc 2.12 and its plugin directory', () => {
    let program: string;
    beforeAll(() => {
      // hwloc_topology_init loads the plugins; the program reaches libhwloc by dlopen, so it is built with the host's libc alone.
      program = buildLib({out: join(root, 'opt', 'hwloc', 'topo'), executable: true, source: `
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
  void *h = dlopen("libhwloc.so.15", RTLD_NOW | RTLD_GLOBAL);
  if (!h) { printf("no libhwloc: %s\\n", dlerror()); return 2; }
  int (*init)(void **) = (int (*)(void **))dlsym(h, "hwloc_topology_init");
  int (*load)(void *) = (int (*)(void *))dlsym(h, "hwloc_topology_load");
  void *t; int e = init(&t); if (e == 0) e = load(t);
  printf("%d\\n", e);
  return 0;
}
`});
    });
    const hwloc = () => join(LIB(), 'libhwloc.so.15');
    const pluginNames = ['hwloc_cuda.so', 'hwloc_nvml.so'];

    test('CUDA 12 and the driver absent: the real run opens both plugins, neither loads, and the topology loads without them; check warns about each, naming what is lost, and passes', async () => {
      const real = spied(program, {HWLOC_PLUGINS_VERBOSE: '1'});
      expect(real.stdout).toBe('0');
      const fromHwloc = real.loads.filter((l) => basename(l.caller) === 'libhwloc.so.15' && l.name.includes('/hwloc/'));
      expect(fromHwloc.map((l) => basename(l.name)).sort()).toEqual(pluginNames);
      expect(real.stderr).toMatch(/libcudart\.so\.12: cannot open shared object file/);
      expect(real.stderr).toMatch(/libnvidia-ml\.so\.1: cannot open shared object file/);
      const report = await checkLibraries({targets: [hwloc()], exe: program, sysroot: root, runtimeEnv: {}});
      expect(report.ok).toBe(true);
      expect(dlopenEdges(report, 'libhwloc.so.15').map((e) => e.path).sort()).toEqual(fromHwloc.map((l) => onHost(l.name)).sort());
      const lost = report.problems.filter((p) => p.edge === 'dlopen').map((p) => [p.kind, p.library, p.impact, p.feature]);
      expect(lost).toEqual(expect.arrayContaining([
        ['not-found', 'libcudart.so.12', 'feature', 'CUDA devices in hwloc\'s topology (its hwloc_cuda.so plugin)'],
        ['not-found', 'libnvidia-ml.so.1', 'feature', 'NVML devices in hwloc\'s topology (its hwloc_nvml.so plugin)'],
      ]));
      const cudart = report.problems.find((p) => p.library === 'libcudart.so.12')!;
      expect(cudart.fix).toContain('12');
    });

    test('HWLOC_PLUGINS_PATH naming another directory: the real run lists that one, and so does check', async () => {
      const other = place(join(root, 'opt', 'hwloc-plugins'), [join(LIB(), 'hwloc', 'hwloc_cuda.so')]);
      const real = spied(program, {HWLOC_PLUGINS_PATH: other});
      expect(real.loads.filter((l) => basename(l.caller) === 'libhwloc.so.15' && l.name.endsWith('.so') && l.name.includes('hwloc_')).map((l) => l.name)).toEqual([join(other, 'hwloc_cuda.so')]);
      const report = await checkLibraries({targets: [hwloc()], exe: program, sysroot: root, runtimeEnv: {HWLOC_PLUGINS_PATH: other}});
      expect(dlopenEdges(report, 'libhwloc.so.15').map((e) => e.path)).toEqual([join(other, 'hwloc_cuda.so')]);
    });

    test('CUDA 12.4 and the driver\'s NVML on LD_LIBRARY_PATH: both plugins load in the real run, and check has nothing to say about them', async () => {
      const cuda = place(join(root, 'opt', 'cuda-12.4', 'lib'), readdirSync(RUNTIME).filter((f) => f.startsWith('libcudart.so')).map((f) => join(RUNTIME, f)));
      const nvml = join(LIB(), 'nvidia', 'current');
      const ldLibraryPath = `${cuda}:${nvml}`;
      const real = spied(program, {HWLOC_PLUGINS_VERBOSE: '1', LD_LIBRARY_PATH: ldLibraryPath});
      expect(real.stdout).toBe('0');
      expect(real.stderr).not.toMatch(/cannot open shared object file/);
      expect(real.loads.filter((l) => basename(l.caller) === 'libhwloc.so.15' && l.name.includes('/hwloc/')).map((l) => basename(l.name)).sort()).toEqual(pluginNames);
      const report = await checkLibraries({targets: [hwloc()], exe: program, sysroot: root, ldLibraryPath, runtimeEnv: {}});
      const plugins = report.problems.filter((p) => p.edge === 'dlopen' && /hwloc_/.test(p.summary));
      expect(plugins).toEqual([]);
      expect(report.ok).toBe(true);
    });
  });

  describeIf(HAVE_LLAMA, NOT_LLAMA)('llama.cpp\'s ggml (node-llama-cpp 3.22.1): ggml_backend_load_all beside the program', () => {
    const source = `
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen("${REGISTRY}", RTLD_NOW | RTLD_GLOBAL);
  if (!h) { printf("no registry: %s\\n", dlerror()); return 2; }
  void (*load_all)(void) = (void (*)(void))dlsym(h, "ggml_backend_load_all");
  unsigned long (*count)(void) = (unsigned long (*)(void))dlsym(h, "ggml_backend_reg_count");
  void *(*get)(unsigned long) = (void *(*)(unsigned long))dlsym(h, "ggml_backend_reg_get");
  const char *(*name)(void *) = (const char *(*)(void *))dlsym(h, "ggml_backend_reg_name");
  load_all();
  for (unsigned long i = 0; i < count(); i++) printf("%s\\n", name(get(i)));
  return 0;
}
`;
    /** The registry, its base and CPU backends and `cuda` (a libggml-cuda.so build), with a program beside them. */
    function assemble(dir: string, cuda: string): string {
      const keep = readdirSync(BINS13).filter((f) => f.endsWith('.so') && f !== 'libggml-cuda.so').map((f) => join(BINS13, f));
      place(dir, [...keep, cuda]);
      return buildLib({out: join(dir, 'load-all'), executable: true, runpath: '$ORIGIN', source});
    }

    test('the CUDA 13 build without CUDA 13: the real run opens every backend, libggml-cuda.so fails (libcudart.so.13) and ggml runs on the CPU; check names the CUDA plugin, what is lost and why', async () => {
      const dir = join(root, 'opt', 'llama13');
      const program = assemble(dir, join(BINS13, 'libggml-cuda.so'));
      const real = spied(program);
      expect(real.status).toBe(0);
      // Only the CPU backend registered: no CUDA.
      expect(real.stdout.split('\n')).toEqual(['CPU']);
      // ggml names them from /proc/self/exe, the program's path in the image.
      const opened = real.loads.filter((l) => basename(l.caller) === REGISTRY).map((l) => onHost(l.name));
      expect(opened).toContain(join(dir, 'libggml-cuda.so'));
      expect(opened.every((n) => /\/libggml-(?:cpu-\w+|cuda)\.so$/.test(n))).toBe(true);
      const report = await checkLibraries({targets: [join(dir, REGISTRY)], exe: program, sysroot: root, runtimeEnv: {}});
      expect(report.ok).toBe(true);
      // The same backends as the real run, no more (libggml-base.so, already loaded, is not a backend).
      expect(dlopenEdges(report, REGISTRY).map((e) => e.path).sort()).toEqual([...new Set(opened)].sort());
      const entry = report.objects.find((o) => basename(o.path) === REGISTRY)?.runtimeLoads ?? [];
      expect(entry.filter((l) => l.plugin?.cuda).map((l) => l.soname)).toEqual([[join(dir, 'libggml-cuda.so')]]);
      const cuda = report.problems.filter((p) => p.edge === 'dlopen' && p.object === join(dir, 'libggml-cuda.so'));
      expect(cuda.map((p) => p.library)).toEqual(expect.arrayContaining(['libcudart.so.13', 'libcublas.so.13']));
      expect(cuda.every((p) => p.impact === 'feature' && p.feature === 'the CUDA backend: without it llama.cpp runs on the CPU')).toBe(true);
      expect(cuda.find((p) => p.library === 'libcudart.so.13')!.fix).toMatch(/13/);
    });

    testIf(existsSync(join(CUDA13, 'libcudart.so.13')), `optional: no real CUDA toolkit at ${CUDA13}`)(
      'the CUDA 13 build with /usr/local/cuda-13.0 (which lacks cuBLAS): the real run still cannot load it, for libcublas.so.13, as check says', async () => {
        const dir = join(root, 'opt', 'llama13');
        const program = existsSync(join(dir, 'load-all')) ? join(dir, 'load-all') : assemble(dir, join(BINS13, 'libggml-cuda.so'));
        const cuda = place(join(root, 'opt', 'cuda-13.0', 'lib64'), readdirSync(CUDA13).filter((f) => f.startsWith('libcudart.so')).map((f) => join(CUDA13, f)));
        const real = spied(program, {LD_LIBRARY_PATH: cuda});
        expect(real.stdout.split('\n')).toEqual(['CPU']);
        const report = await checkLibraries({targets: [join(dir, REGISTRY)], exe: program, sysroot: root, ldLibraryPath: cuda, runtimeEnv: {}});
        const missing = report.problems.filter((p) => p.edge === 'dlopen' && p.object === join(dir, 'libggml-cuda.so') && p.kind === 'not-found').map((p) => p.library);
        expect(missing).toContain('libcublas.so.13');
        expect(missing).not.toContain('libcudart.so.13');
      });

    /**
     * The CUDA 12 build beside its program, with everything it links from CUDA 12.4 (Debian's runtime,
     * cuBLAS and cuBLASLt) in one directory, and the toolkit's stub libcuda.so.1 in another: a
     * stand-in of its documented shape (SONAME libcuda.so.1, nothing needed, every function of the
     * driver's real libcuda returning CUDA_ERROR_STUB_LIBRARY), as the corpus test builds it.
     */
    function cuda12(): {dir: string; program: string; lib: string; stubs: string} {
      const dir = join(root, 'opt', 'llama12');
      const program = existsSync(join(dir, 'load-all')) ? join(dir, 'load-all') : assemble(dir, CUDA12_PLUGIN);
      const lib = place(join(root, 'opt', 'cuda-12.4-full', 'lib64'), readdirSync(CORPUS_LIB).filter((f) => /^lib(?:cudart|cublas|cublasLt)\.so/.test(f)).map((f) => join(CORPUS_LIB, f)));
      const stubs = join(root, 'opt', 'cuda-12.4-stubs');
      if (!existsSync(join(stubs, 'libcuda.so.1'))) {
        const driver = join(CORPUS_LIB, 'nvidia', 'current', 'libcuda.so.1');
        const entries = spawnSync('nm', ['-D', '--defined-only', driver], {encoding: 'utf8'}).stdout.split('\n').flatMap((l) => (/ T (\w+)$/.exec(l)?.slice(1) ?? []));
        if (entries.length < 100) throw new Error(`nm -D ${driver} lists ${entries.length} functions: binutils is needed`);
        mkdirSync(stubs, {recursive: true});
        buildLib({out: join(stubs, 'libcuda.so'), soname: 'libcuda.so.1', extra: ['-nostdlib'], source: entries.map((e) => `int ${e}(void) { return 34; }\n`).join('')});
        symlinkSync('libcuda.so', join(stubs, 'libcuda.so.1'));
      }
      return {dir, program, lib, stubs};
    }

    const CPU_ONLY = 'the CUDA backend: without it llama.cpp runs on the CPU';

    testIf(HAVE_CORPUS, NOT_CORPUS)('the CUDA 12 build with all of CUDA 12.4 but no driver (no libcuda.so.1, which it links): the real run cannot load it and runs on the CPU; check warns, naming libcuda.so.1 and what is lost', async () => {
      const {dir, program, lib} = cuda12();
      const real = spied(program, {LD_LIBRARY_PATH: lib});
      expect(real.status).toBe(0);
      expect(real.stdout.split('\n')).toEqual(['CPU']);
      expect(real.loads.filter((l) => basename(l.caller) === REGISTRY).map((l) => onHost(l.name))).toContain(join(dir, 'libggml-cuda.so'));
      const report = await checkLibraries({targets: [join(dir, REGISTRY)], exe: program, sysroot: root, ldLibraryPath: lib, runtimeEnv: {}});
      expect(report.ok).toBe(true);
      const cuda = report.problems.filter((p) => p.edge === 'dlopen' && p.object === join(dir, 'libggml-cuda.so'));
      expect(cuda.map((p) => [p.kind, p.library, p.impact, p.feature])).toEqual([['not-found', 'libcuda.so.1', 'feature', CPU_ONLY]]);
    });

    testIf(HAVE_CORPUS, NOT_CORPUS)('the CUDA 12 build with all of CUDA 12.4 and the toolkit\'s stub libcuda.so.1 first: the real run loads the CUDA backend, which cannot initialise CUDA ("CUDA driver is a stub library"), and runs on the CPU; check warns about the stub with what is lost', async () => {
      const {dir, program, lib, stubs} = cuda12();
      const ldLibraryPath = `${stubs}:${lib}`;
      const real = spied(program, {LD_LIBRARY_PATH: ldLibraryPath});
      expect(real.status).toBe(0);
      // The backend registers, with no device: the work runs on the CPU.
      expect(real.stdout.split('\n')).toEqual(['CUDA', 'CPU']);
      expect(real.stderr).toContain('ggml_cuda_init: failed to initialize CUDA: CUDA driver is a stub library');
      const report = await checkLibraries({targets: [join(dir, REGISTRY)], exe: program, sysroot: root, ldLibraryPath, runtimeEnv: {}});
      expect(report.ok).toBe(true);
      const stub = report.problems.filter((p) => p.kind === 'cuda-stub');
      // Said of the registry's load of the CUDA plugin, which brings the stub.
      expect(stub.map((p) => [p.edge, p.object, p.impact, p.feature])).toEqual([['dlopen', join(dir, REGISTRY), 'feature', CPU_ONLY]]);
      expect(JSON.stringify(stub[0])).toContain(join(stubs, 'libcuda.so.1'));
      expect(stub[0]!.fix).toContain(stubs);
    });

    test('the CUDA 12 build with Debian\'s CUDA 12.4 runtime and cuBLAS but not cuBLASLt: the real run cannot load it (libcublasLt.so.12), as check says', async () => {
      const dir = join(root, 'opt', 'llama12');
      const program = assemble(dir, CUDA12_PLUGIN);
      const cuda = place(join(root, 'opt', 'cuda-12.4', 'lib64'), [...readdirSync(RUNTIME).filter((f) => f.startsWith('libcudart.so')).map((f) => join(RUNTIME, f)),
        ...readdirSync(GPU_CODE).filter((f) => f.startsWith('libcublas.so')).map((f) => join(GPU_CODE, f))]);
      const real = spied(program, {LD_LIBRARY_PATH: cuda});
      expect(real.stdout.split('\n')).toEqual(['CPU']);
      expect(real.loads.filter((l) => basename(l.caller) === REGISTRY).map((l) => onHost(l.name))).toContain(join(dir, 'libggml-cuda.so'));
      const report = await checkLibraries({targets: [join(dir, REGISTRY)], exe: program, sysroot: root, ldLibraryPath: cuda, runtimeEnv: {}});
      const missing = report.problems.filter((p) => p.edge === 'dlopen' && p.kind === 'not-found' && p.feature === 'the CUDA backend: without it llama.cpp runs on the CPU').map((p) => p.library);
      expect(missing).toContain('libcublasLt.so.12');
      expect(missing).not.toContain('libcudart.so.12');
      expect(report.ok).toBe(true);
    });
  });
});
