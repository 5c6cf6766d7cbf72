import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {basename, dirname, join} from 'node:path';
import {checkLibraries, type CheckReport} from '../../../../src/core/elf/index.js';
import {isCudaStackName} from '../../../../src/core/elf/runtime/families.js';
import {DEBIAN_CUOBJDUMP, DOWNLOADED, IS_ROOT, NEEDS} from '../../../helpers/capabilities.js';
import {cliEnv, runCli} from '../../../helpers/cli.js';
import {describeIf} from '../../../helpers/skip.js';
import {makeTempDir, type TempDir} from '../../../helpers/tmp.js';
import {buildLib, HAVE_GCC} from '../fixtures.js';
import {buildRunin} from '../fuzz/images.js';
import {buildDlopenSpy, readSpyLog} from './dlopen-spy.js';
import {cuobjdump, mine} from '../read/device-code/cuobjdump-listing.js';

/**
 * Issue 43: a corpus of real CUDA programs, each an oracle of the run-time loads. Debian trixie
 * contrib's MAGMA 2.9, StarPU 1.4, Gloo's CUDA part, PyCUDA and pyvkfft (NVRTC at run time), and
 * NCCL 2.22.3 (libnccl2), with the CUDA 12.4 libraries and the driver's libcuda1 and NVML (550),
 * unpacked into one trixie root by test/fixtures/fetch-corpus.sh. Trixie's libraries need glibc
 * 2.38, so each program runs in a copy of that root (hard links; chroot, the static `runin` helper
 * of the glibc-release tests), under the LD_PRELOAD dlopen spy, loaded by a small C driver that
 * dlopens the program's library (the extension modules after libpython3.13, whose symbols they bind
 * to, as python provides them) and makes its first CUDA call. No GPU here: each program stops at
 * that call (cuInit, cudaGetDeviceCount, magma_init, ncclCommInitAll; StarPU goes on without CUDA),
 * so the load up to that call is the oracle, and the call's error code says which libcuda it reached
 * (34: the stub, 35: none; NCCL says 1 for all, and the loader's own log tells them apart).
 * For each program and scenario, `check` of the program's library in the same root must agree with
 * the real run: the verdict, the first problem, and the dlopen edges (every CUDA load the spy saw
 * is a modelled run-time load of the same caller; every modelled load is seen or named by its
 * caller's own strings or notes).
 */
const CORPUS = join(DOWNLOADED, 'corpus-trixie');
const BOOKWORM = join(DOWNLOADED, 'bookworm', 'usr', 'lib', 'x86_64-linux-gnu');
const LIB = '/usr/lib/x86_64-linux-gnu';
const NV = `${LIB}/nvidia/current`;
const PY = '/usr/lib/python3/dist-packages';
const LIBPYTHON = `${LIB}/libpython3.13.so.1.0`;
const STUBS = '/opt/cuda-12.4/lib64/stubs';
const OLD = '/opt/cuda-11.8/lib64';
const OLD_NVRTC = '/opt/cuda-12.2/lib64';

interface Program {
  /** The file checked, in the image. */
  target: string;
  /** The driver's steps after the spy is in place. */
  steps: string[];
  /** Put first in the global scope (the extension modules' libpython). */
  preload?: string[];
  /** The library of its CUDA major, and its files (removed for "its CUDA major absent"). */
  major: {soname: string; files: string[]};
}

const PROGRAMS: Record<string, Program> = {
  magma: {target: '/usr/lib/libmagma.so.2', steps: ['open:/usr/lib/libmagma.so.2', 'call0:magma_init', 'callp:cudaGetDeviceCount', 'where'],
    major: {soname: 'libcudart.so.12', files: ['libcudart.so.12', 'libcudart.so.12.4.127']}},
  starpu: {target: `${LIB}/libstarpu-1.4.so.6`, steps: [`open:${LIB}/libstarpu-1.4.so.6`, 'call0:starpu_init', 'call0:starpu_cuda_worker_get_count', 'call0:starpu_cpu_worker_get_count', 'callp:cudaGetDeviceCount', 'where'],
    major: {soname: 'libcudart.so.12', files: ['libcudart.so.12', 'libcudart.so.12.4.127']}},
  gloo: {target: '/usr/lib/libgloo_cuda.so.0', steps: ['open:/usr/lib/libgloo_cuda.so.0', 'callp:cudaGetDeviceCount', 'where'],
    major: {soname: 'libcudart.so.12', files: ['libcudart.so.12', 'libcudart.so.12.4.127']}},
  pycuda: {target: `${PY}/pycuda/_driver.cpython-313-x86_64-linux-gnu.so`, preload: [LIBPYTHON],
    steps: [`open:${LIBPYTHON}`, `open:${PY}/pycuda/_driver.cpython-313-x86_64-linux-gnu.so`, 'call0:cuInit', 'where'],
    major: {soname: 'libcurand.so.10', files: ['libcurand.so.10', 'libcurand.so.10.3.5.147']}},
  pyvkfft: {target: `${PY}/pyvkfft/_vkfft_cuda.cpython-313-x86_64-linux-gnu.so`, preload: [LIBPYTHON],
    steps: [`open:${LIBPYTHON}`, `open:${PY}/pyvkfft/_vkfft_cuda.cpython-313-x86_64-linux-gnu.so`, 'call0:cuInit', 'nvrtc', 'where'],
    major: {soname: 'libnvrtc.so.12', files: ['libnvrtc.so.12', 'libnvrtc.so.12.4.127']}},
};

/**
 * The driver: `open:PATH` dlopens (RTLD_NOW | RTLD_GLOBAL) and stops at a failure ("ERR" and
 * dlerror); `call0:F` / `callp:F` call F(0) / F(scratch) found in the global scope and print what
 * it returns; `where` prints every libcuda loaded; `nvrtc` compiles a kernel with the
 * loaded NVRTC, as pyvkfft does at its first transform; `nvrtc-out:KIND:FILE` has it write PTX, a
 * relocatable cubin or LTO-IR, and `jitlink:TYPE:FILE:OPTIONS` links one with the loaded nvJitLink; `nccl-id` and
 * `nccl-init` call the loaded NCCL's ncclGetUniqueId (a 128-byte ncclUniqueId) and ncclCommInitAll (one
 * communicator, device list NULL) and print what they return. Built on the host (glibc 2.36), it runs
 * on trixie's 2.41.
 */
const DRIVER_C = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int (*fn)(void *);
/* Every libcuda loaded (libcudart dlopens it RTLD_LOCAL: not in the global scope). */
static int where(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size; (void)data;
  const char *b = strrchr(info->dlpi_name, '/');
  if (b && !strncmp(b, "/libcuda.so", 11)) printf("where %s\\n", info->dlpi_name);
  return 0;
}
static int nvrtc(void) {
  int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *) = dlsym(RTLD_DEFAULT, "nvrtcCreateProgram");
  int (*compile)(void *, int, const char *const *) = dlsym(RTLD_DEFAULT, "nvrtcCompileProgram");
  if (!create || !compile) return -1;
  void *p;
  int e = create(&p, "extern \\"C\\" __global__ void k(float *x) { x[0] = 1.0f; }", "k.cu", 0, 0, 0);
  return e ? e : compile(p, 0, 0);
}
/* NVRTC (loaded) compiles a kernel that calls a device function to KIND (ptx, cubin: relocatable, ltoir: -dlto) into OUT. */
static int nvrtc_out(const char *kind, const char *out) {
  int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *) = dlsym(RTLD_DEFAULT, "nvrtcCreateProgram");
  int (*compile)(void *, int, const char *const *) = dlsym(RTLD_DEFAULT, "nvrtcCompileProgram");
  int ptx = !strcmp(kind, "ptx"), cubin = !strcmp(kind, "cubin");
  int (*size)(void *, size_t *) = dlsym(RTLD_DEFAULT, ptx ? "nvrtcGetPTXSize" : cubin ? "nvrtcGetCUBINSize" : "nvrtcGetLTOIRSize");
  int (*get)(void *, char *) = dlsym(RTLD_DEFAULT, ptx ? "nvrtcGetPTX" : cubin ? "nvrtcGetCUBIN" : "nvrtcGetLTOIR");
  if (!create || !compile || !size || !get) return -1;
  const char *opts[] = {ptx ? "-arch=compute_75" : "-arch=sm_75", cubin ? "-rdc=true" : "-dlto"};
  void *p;
  int e = create(&p, "extern \\"C\\" __device__ float twice(float x) { return 2.0f * x; }\\n"
    "extern \\"C\\" __global__ void k(float *x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\\n", "k.cu", 0, 0, 0);
  if (!e) e = compile(p, ptx ? 1 : 2, opts);
  size_t n = 0;
  if (!e) e = size(p, &n);
  static char buf[1 << 20];
  if (!e && n > sizeof buf) e = -2;
  if (!e) e = get(p, buf);
  FILE *f = e ? 0 : fopen(out, "wb");
  if (f) { fwrite(buf, 1, n, f); fclose(f); }
  return e ? e : f ? 0 : -3;
}
/* nvJitLink 12.4 (loaded) links one input: TYPE (1 cubin, 2 PTX, 3 LTO-IR), the file, its options separated by commas. */
static void jitlink(char *spec) {
  char *type = strtok(spec, ":"), *in = strtok(0, ":"), *list = strtok(0, ":");
  const char *opts[8];
  unsigned nopts = 0;
  for (char *o = list ? strtok(list, ",") : 0; o && nopts < 8; o = strtok(0, ",")) opts[nopts++] = o;
  int (*create)(void **, unsigned, const char **) = dlsym(RTLD_DEFAULT, "__nvJitLinkCreate_12_4");
  int (*add)(void *, int, const void *, size_t, const char *) = dlsym(RTLD_DEFAULT, "__nvJitLinkAddData_12_4");
  int (*complete)(void *) = dlsym(RTLD_DEFAULT, "__nvJitLinkComplete_12_4");
  int (*cubin)(void *, size_t *) = dlsym(RTLD_DEFAULT, "__nvJitLinkGetLinkedCubinSize_12_4");
  static char buf[1 << 20];
  FILE *f = fopen(in, "rb");
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  if (!create || !add || !complete || !cubin || !n) { printf("jitlink-setup failed\\n"); return; }
  void *h;
  int e = create(&h, nopts, opts);
  printf("jitlink-create %d\\n", e);
  if (e) return;
  e = add(h, atoi(type), buf, n, in);
  printf("jitlink-add %d\\n", e);
  if (!e) printf("jitlink-complete %d\\n", e = complete(h));
  size_t size = 0;
  if (!e && !cubin(h, &size)) printf("jitlink-cubin %zu\\n", size);
}
int main(int argc, char **argv) {
  static int scratch[64];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strncmp(a, "open:", 5)) {
      if (!dlopen(a + 5, RTLD_NOW | RTLD_GLOBAL)) { printf("ERR %s\\n", dlerror()); return 3; }
      printf("OK %s\\n", a + 5);
    } else if (!strncmp(a, "call0:", 6) || !strncmp(a, "callp:", 6)) {
      fn f = (fn)dlsym(RTLD_DEFAULT, a + 6);
      if (!f) { printf("ERR %s\\n", dlerror()); return 4; }
      printf("%s %d\\n", a + 6, f(a[4] == 'p' ? (void *)scratch : 0));
    } else if (!strcmp(a, "where")) {
      dl_iterate_phdr(where, 0);
    } else if (!strcmp(a, "nvrtc")) {
      printf("nvrtc %d\\n", nvrtc());
    } else if (!strncmp(a, "nvrtc-out:", 10)) {
      char kind[16] = {0};
      size_t k = strcspn(a + 10, ":");
      memcpy(kind, a + 10, k < 15 ? k : 15);
      printf("nvrtc-out-%s %d\\n", kind, a[10 + k] ? nvrtc_out(kind, a + 11 + k) : -4);
    } else if (!strncmp(a, "jitlink:", 8)) {
      jitlink(argv[i] + 8);
    } else if (!strcmp(a, "nccl-id")) {
      static char id[128];
      int (*get)(void *) = dlsym(RTLD_DEFAULT, "ncclGetUniqueId");
      printf("nccl-id %d\\n", get ? get(id) : -1);
    } else if (!strcmp(a, "nccl-init")) {
      void *comm = 0;
      int (*init)(void **, int, const int *) = dlsym(RTLD_DEFAULT, "ncclCommInitAll");
      printf("nccl-init %d\\n", init ? init(&comm, 1, 0) : -1);
    }
    fflush(stdout);
  }
  return 0;
}
`;

/** NCCL 2.22.3 (Debian's libnccl2; cudart linked in statically): no CUDA-major library of its own to remove, no cudaGetDeviceCount export. */
const NCCL: Program = {target: `${LIB}/libnccl.so.2`, steps: [`open:${LIB}/libnccl.so.2`, 'nccl-id', 'nccl-init', 'where'], major: {soname: 'libnccl.so.2', files: []}};

// The driver's NVML (libnvidia-ml1) in nvidia/current came later to the corpus: a root without it is an old fetch.
const present = existsSync(join(CORPUS, '.unpacked-libmagma2')) && existsSync(join(CORPUS, '.unpacked-libnvidia-ml1'))
  && [...Object.values(PROGRAMS), NCCL].every((p) => existsSync(join(CORPUS, p.target)));
const d = describeIf(present && IS_ROOT && HAVE_GCC && process.arch === 'x64',
  !present ? 'needs the corpus: bash test/fixtures/fetch-corpus.sh' : !IS_ROOT ? `${NEEDS.root} (the programs run in a trixie root with chroot)` : HAVE_GCC ? 'needs x86-64 (the dlopen spy)' : NEEDS.tool('gcc'));

let tmp: TempDir;
let runin: string;
let base: string;
let spy: string;
let driver: string;
let serial = 0;

/** A copy of the corpus root (hard links, so nothing in the fixture is ever written), with `change` applied and its own ld.so.cache. */
function makeRoot(name: string, change: (root: string) => void = () => {}): string {
  const root = join(tmp.dir, name);
  const cp = spawnSync('cp', ['-al', base, root], {encoding: 'utf8'});
  if (cp.status !== 0) throw new Error(`cp -al ${base} ${root}: ${cp.stderr}`);
  change(root);
  rmSync(join(root, 'etc', 'ld.so.cache'), {force: true});
  const ldconfig = spawnSync(runin, [root, '/', '--', '/sbin/ldconfig'], {encoding: 'utf8'});
  if (ldconfig.status !== 0) throw new Error(`ldconfig in ${root} failed: ${ldconfig.stderr}`);
  return root;
}

interface RealRun {
  lines: string[];
  /** What the step printed ("OK", "ERR ...", the call's return code), by step name. */
  result: Map<string, string>;
  /** The CUDA loads the spy saw: caller's file name and the name asked for. */
  cudaLoads: Set<string>;
  /** Every name the spy saw asked for, by any caller. */
  names: Set<string>;
  /** Every load the spy saw, of any name, as "caller -> name" (libgdrapi.so and libibverbs are not CUDA-stack names). */
  loads: Set<string>;
}

/** `extraEnv`: more of the program's environment, as NAME=VALUE (NCCL_GDRCOPY_ENABLE=1). */
function realRun(root: string, program: Program, ldLibraryPath?: string, extraEnv: string[] = []): RealRun {
  const log = `/tmp/spy-${serial++}.log`;
  const env = ['PATH=/usr/bin', 'HOME=/tmp', 'LD_PRELOAD=/usr/lib/corpus-spy.so', `DLOPEN_SPY_LOG=${log}`, ...(ldLibraryPath ? [`LD_LIBRARY_PATH=${ldLibraryPath}`] : []), ...extraEnv];
  const r = spawnSync(runin, [root, '/tmp', ...env, '--', '/usr/bin/corpus-drv', ...program.steps], {encoding: 'utf8', timeout: 60_000});
  const lines = r.stdout.trim().split('\n');
  const result = new Map<string, string>();
  for (const l of lines) {
    const [head, ...rest] = l.split(' ');
    if (head === 'OK') result.set(rest.join(' '), 'OK');
    else result.set(head!, rest.join(' '));
  }
  const spied = readSpyLog(join(root, log));
  const names = new Set(spied.map((l) => l.name));
  const cudaLoads = new Set(spied.filter((l) => isCudaStackName(basename(l.name)) && !/\/libcuda\.so/.test(l.caller) && !l.caller.endsWith('/corpus-drv'))
    .map((l) => `${basename(l.caller)} -> ${l.name}`));
  const loads = new Set(spied.map((l) => `${basename(l.caller)} -> ${l.name}`));
  return {lines, result, cudaLoads, names, loads};
}

function check(root: string, program: Program, ldLibraryPath?: string): Promise<CheckReport> {
  return checkLibraries({targets: [join(root, program.target)], sysroot: root, ldLibraryPath: ldLibraryPath ?? '', ...(program.preload ? {preload: program.preload} : {})});
}

/** Every run-time load check models, as "caller -> name" (`check --json`'s runtimeLoads). */
function modelled(report: CheckReport): Set<string> {
  return new Set(report.objects.flatMap((o) => (o.runtimeLoads ?? []).flatMap((l) => l.soname.map((n) => `${basename(o.path)} -> ${n}`))));
}

/** The resolved dlopen edges: "caller -> name" and the file found (null: not found). */
function dlopenEdges(report: CheckReport): Map<string, string | null> {
  return new Map(report.objects.flatMap((o) => o.needed.filter((e) => e.dlopen).map((e) => [`${basename(o.path)} -> ${e.name}`, e.path] as const)));
}

/** The file holds `name` as a whole NUL-terminated string: grep, not cudaenv's own string reader. */
function namedIn(file: string, name: string): boolean {
  const pattern = `\\x00${name.replace(/[.+%]/g, (c) => `\\${c}`)}\\x00`;
  return spawnSync('grep', ['-qaP', pattern, file]).status === 0;
}

/**
 * The file's code builds `name` from immediates (NCCL's "libnccl-net.so": "libnccl-" and "net.so" as
 * two 8-byte moves): both parts are bytes of its .text section, as objcopy extracts it, not a string.
 */
const builtCache = new Map<string, boolean>();
function builtInCode(file: string, name: string): boolean {
  const key = `${file}\0${name}`;
  if (!builtCache.has(key)) {
    const text = join(mkdtempSync(join(tmpdir(), 'cudaenv-corpus-text-')), 'text.bin');
    const ok = spawnSync('objcopy', ['-O', 'binary', '--only-section=.text', file, text]).status === 0
      && [name.slice(0, 8), name.slice(8)].every((part) => part === '' || spawnSync('grep', ['-qaF', part, text]).status === 0);
    rmSync(dirname(text), {recursive: true, force: true});
    builtCache.set(key, ok);
  }
  return builtCache.get(key)!;
}

/** Seen ⊆ modelled, and every modelled load seen or named by its caller's own file. */
function expectEdgesAgree(report: CheckReport, real: RealRun): void {
  const model = modelled(report);
  expect([...real.cudaLoads].filter((l) => !model.has(l))).toEqual([]);
  const unsupported = report.objects.flatMap((o) => (o.runtimeLoads ?? []).flatMap((l) => l.soname.filter((n) => {
    if (real.cudaLoads.has(`${basename(o.path)} -> ${n}`) || l.source === 'note') return false;
    // A prefix the caller completes with its CUDA major ("libnvrtc.so." + "12") counts as the name.
    return !namedIn(o.path, n) && !namedIn(o.path, n.replace(/\d+$/, '')) && !builtInCode(o.path, n);
  }).map((n) => `${o.path} -> ${n}`)));
  expect(unsupported).toEqual([]);
}

/** The first problem that fails the check (warnings, 'feature', apart). */
const first = (report: CheckReport) => report.problems.find((p) => p.impact !== 'feature');

d('the corpus of real CUDA programs (Debian trixie contrib), each run in a trixie root under the dlopen spy', () => {
  let healthy: string;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-corpus-');
    runin = buildRunin(join(tmp.dir, 'runin'));
    spy = buildDlopenSpy(tmp.dir);
    driver = join(tmp.dir, 'corpus-drv');
    writeFileSync(`${driver}.c`, DRIVER_C);
    const cc = spawnSync('gcc', ['-O', '-o', driver, `${driver}.c`, '-ldl'], {encoding: 'utf8'});
    if (cc.status !== 0) throw new Error(`cannot build the corpus driver: ${cc.stderr}`);
    base = join(tmp.dir, 'base');
    const cp = spawnSync('cp', ['-al', CORPUS, base], {encoding: 'utf8'});
    if (cp.status !== 0) throw new Error(`cp -al ${CORPUS} ${base}: ${cp.stderr}`);
    // Debian's merged /usr, which base-files makes.
    for (const l of ['lib', 'lib64', 'bin', 'sbin']) if (!existsSync(join(base, l)) && existsSync(join(base, 'usr', l))) symlinkSync(`usr/${l}`, join(base, l));
    mkdirSync(join(base, 'tmp'), {recursive: true});
    copyFileSync(spy, join(base, 'usr', 'lib', 'corpus-spy.so'));
    copyFileSync(driver, join(base, 'usr', 'bin', 'corpus-drv'));
    // The toolkit's stub libcuda (not in Debian's packages): a stand-in of its documented shape
    // (SONAME libcuda.so.1, no DT_NEEDED, no symbol versions, every entry point returning
    // CUDA_ERROR_STUB_LIBRARY), with every function the real driver library exports, so that the
    // extension modules that link libcuda.so.1 bind to it as they do to the real stub.
    const entries = spawnSync('nm', ['-D', '--defined-only', join(base, NV, 'libcuda.so.1')], {encoding: 'utf8'}).stdout.split('\n')
      .flatMap((l) => (/ T (\w+)$/.exec(l)?.slice(1) ?? []));
    if (entries.length < 100) throw new Error(`nm -D ${join(base, NV, 'libcuda.so.1')} lists ${entries.length} functions: binutils is needed`);
    buildLib({out: join(base, STUBS, 'libcuda.so'), soname: 'libcuda.so.1', extra: ['-nostdlib'], source: entries.map((e) => `int ${e}(void) { return 34; }\n`).join('')});
    symlinkSync('libcuda.so', join(base, STUBS, 'libcuda.so.1'));
    // An older release: Debian bookworm's real CUDA 11.8 runtime.
    mkdirSync(join(base, OLD), {recursive: true});
    spawnSync('cp', ['-al', `${BOOKWORM}/.`, join(base, OLD)]);
    // NVRTC 12.2's builtins as NVRTC 12.4 sees them (a stand-in, as in runtime-loads.test.ts).
    buildLib({out: join(base, OLD_NVRTC, 'libnvrtc-builtins.so.12.4'), soname: 'libnvrtc-builtins.so.12.4',
      source: 'const char *__nvrtc_builtins__12_2_getBuiltinHeader(const char *name) { return 0; }\n'});
    healthy = makeRoot('healthy');
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  for (const [name, program] of Object.entries(PROGRAMS)) {
    test(`${name}: healthy (the driver's libcuda on LD_LIBRARY_PATH): loads, reaches the driver, and check passes with the same dlopen edges`, async () => {
      const real = realRun(healthy, program, NV);
      expect(real.result.get(program.target)).toBe('OK');
      expect(real.result.get('where')).toBe(`${NV}/libcuda.so.1`);
      const report = await check(healthy, program, NV);
      expect(report.problems.filter((p) => p.impact !== 'feature')).toEqual([]);
      expect(report.ok).toBe(true);
      expectEdgesAgree(report, real);
      // The libcuda the real run reached is the one check finds.
      const edges = dlopenEdges(report);
      for (const seen of real.cudaLoads) if (seen.endsWith('-> libcuda.so.1')) expect(edges.get(seen)).toBe(join(healthy, NV, 'libcuda.so.1'));
    }, 60_000);

    test(`${name}: no driver (no libcuda.so.1 anywhere): the real run and check agree on the verdict and the first problem`, async () => {
      const real = realRun(healthy, program);
      const report = await check(healthy, program);
      expectEdgesAgree(report, real);
      expect(real.result.get('where') ?? null).toBeNull();
      const missing = report.problems.find((p) => p.library === 'libcuda.so.1');
      if (real.result.get(program.target) === 'OK') {
        // Loaded: libcudart's dlopen of libcuda.so.1 fails at the first CUDA call (35), which
        // needs a GPU anyway; on this machine without the NVIDIA module check warns and passes.
        // StarPU goes on without CUDA: its CPU workers run (it falls back).
        expect(real.result.get('cudaGetDeviceCount')).toBe('35');
        expect(report.ok).toBe(true);
        expect(missing).toMatchObject({kind: 'not-found', edge: 'dlopen', impact: 'feature'});
      } else {
        // The extension module links libcuda.so.1 itself: its load fails. Check says so
        // ("cannot load here whatever the search"), as a warning on a machine without the NVIDIA
        // kernel module, where nothing could make it load (by design; --strict fails).
        expect(real.lines.at(-1)).toBe('ERR libcuda.so.1: cannot open shared object file: No such file or directory');
        expect(missing).toMatchObject({kind: 'not-found', impact: 'feature'});
        expect(missing!.edge).toBeUndefined();
        expect(missing!.explanation).toContain('cannot load here whatever the search');
        expect(report.ok).toBe(true);
        expect((await checkLibraries({targets: [join(healthy, program.target)], sysroot: healthy, ldLibraryPath: '', preload: program.preload, strict: true})).ok).toBe(false);
      }
    }, 60_000);

    // pyvkfft's and PyCUDA's modules link libcuda.so.1 (a DT_NEEDED): the stub found at their start is
    // judged as a dlopen's is (runtime/release-checks.ts startLibcudaChecks).
    test(`${name}: the toolkit's stub libcuda.so.1 first on LD_LIBRARY_PATH: the real first CUDA call gets CUDA_ERROR_STUB_LIBRARY, and check fails on the stub`, async () => {
      const real = realRun(healthy, program, `${STUBS}:${NV}`);
      expect(real.result.get(program.target)).toBe('OK');
      // libcudart closes the stub after the failed call where nothing else holds it (Gloo).
      expect([`${STUBS}/libcuda.so.1`, undefined]).toContain(real.result.get('where'));
      expect(real.result.get(program.steps.some((s) => s === 'call0:cuInit') ? 'cuInit' : 'cudaGetDeviceCount')).toBe('34');
      const report = await check(healthy, program, `${STUBS}:${NV}`);
      expectEdgesAgree(report, real);
      expect(report.ok).toBe(false);
      expect(first(report)).toMatchObject({kind: 'cuda-stub', library: 'libcuda.so.1'});
      expect(first(report)!.fix).toContain(STUBS);
    }, 60_000);

    test(`${name}: an older release first on LD_LIBRARY_PATH (Debian bookworm's real CUDA 11.8): other SONAMEs, so the real run is the healthy one, and check says nothing of it`, async () => {
      const real = realRun(healthy, program, `${OLD}:${NV}`);
      expect(real.result.get(program.target)).toBe('OK');
      expect(real.result.get('where')).toBe(`${NV}/libcuda.so.1`);
      const report = await check(healthy, program, `${OLD}:${NV}`);
      expectEdgesAgree(report, real);
      expect(report.ok).toBe(true);
      expect(report.problems.filter((p) => JSON.stringify(p).includes(OLD))).toEqual([]);
    }, 60_000);

    test(`${name}: its CUDA major absent (${program.major.soname} removed): the real load fails on it, and \`cudaenv check\` exits 1 naming it, what it costs and the fix`, async () => {
      const root = makeRoot(`no-major-${name}`, (r) => {
        for (const f of program.major.files) rmSync(join(r, LIB, f));
      });
      const real = realRun(root, program, NV);
      expect(real.lines.at(-1)).toBe(`ERR ${program.major.soname}: cannot open shared object file: No such file or directory`);
      const report = await check(root, program, NV);
      expect(report.ok).toBe(false);
      expect(first(report)).toMatchObject({kind: 'not-found', library: program.major.soname});
      const cli = runCli(['check', join(root, program.target), '--ld-library-path', NV, ],
        {env: cliEnv(join(tmp.dir, 'store'), {CUDAENV_SYSROOT: root})});
      expect(cli.status).toBe(1);
      const [line, why, fix] = cli.stdout.split('\n');
      expect(line).toMatch(new RegExp(`^error: not found: .* needs ${program.major.soname.replace(/\./g, '\\.')}, which the loader cannot find`));
      expect(why).toMatch(/^ {2}why: /);
      expect(fix).toMatch(/^ {2}fix: /);
      console.log(`${name}, ${program.major.soname} absent:\n${cli.stdout.split('\n').slice(0, 3).join('\n')}`);
    }, 60_000);
  }

  test('pyvkfft: NVRTC\'s builtins missing: the module loads, the real compilation fails, and check fails naming libnvrtc-builtins.so.12.4', async () => {
    const program = PROGRAMS.pyvkfft!;
    const root = makeRoot('no-builtins', (r) => {
      for (const f of ['libnvrtc-builtins.so.12.4', 'libnvrtc-builtins.so.12.4.127']) rmSync(join(r, LIB, f));
    });
    const real = realRun(root, program, NV);
    expect(real.result.get(program.target)).toBe('OK');
    expect(real.result.get('nvrtc')).not.toBe('0');
    const report = await check(root, program, NV);
    expectEdgesAgree(report, real);
    expect(report.ok).toBe(false);
    expect(first(report)).toMatchObject({kind: 'not-found', library: 'libnvrtc-builtins.so.12.4', edge: 'dlopen', impact: 'library'});
  }, 60_000);

  test('pyvkfft: builtins of another release first on LD_LIBRARY_PATH: the real compilation fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, and check names both releases', async () => {
    const program = PROGRAMS.pyvkfft!;
    const real = realRun(healthy, program, `${OLD_NVRTC}:${NV}`);
    expect(real.result.get('nvrtc')).toBe('7');
    const report = await check(healthy, program, `${OLD_NVRTC}:${NV}`);
    expectEdgesAgree(report, real);
    expect(report.ok).toBe(false);
    expect(first(report)).toMatchObject({kind: 'mixed-release', library: 'libnvrtc-builtins.so.12.4'});
  }, 60_000);

  // nvJitLink 12.4 (cuSPARSE's and cuFFT's dependency): its strings name libcuda.so and libnvvm.so.
  // It links inputs NVRTC 12.4 makes in the same root, one kind at a time: no GPU is needed to link.
  const JITLINK = `${LIB}/libnvJitLink.so.12`;
  const NVRTC = `${LIB}/libnvrtc.so.12`;
  const JIT_INPUTS = [['cubin', 1, '-arch=sm_75'], ['ptx', 2, '-arch=sm_75'], ['ltoir', 3, '-arch=sm_75,-lto']] as const;
  const jitlink = (kind: string, type: number, options: string): Program =>
    ({target: JITLINK, steps: [`open:${JITLINK}`, `jitlink:${type}:/tmp/jit.${kind}:${options}`], major: {soname: 'libnvJitLink.so.12', files: []}});
  const linkLoad = 'libnvJitLink.so.12 -> libcuda.so';

  test('nvJitLink: no libcuda anywhere: a relocatable cubin, PTX and LTO-IR each link, its one load is libcuda.so at nvJitLinkCreate, never libnvvm.so, and check passes without a word on either', async () => {
    const gen = realRun(healthy, {target: NVRTC, steps: [`open:${NVRTC}`, ...JIT_INPUTS.map(([kind]) => `nvrtc-out:${kind}:/tmp/jit.${kind}`)], major: {soname: 'libnvrtc.so.12', files: []}});
    for (const [kind] of JIT_INPUTS) expect(gen.result.get(`nvrtc-out-${kind}`)).toBe('0');
    for (const [kind, type, options] of JIT_INPUTS) {
      const program = jitlink(kind, type, options);
      const real = realRun(healthy, program);
      expect([kind, real.result.get('jitlink-create'), real.result.get('jitlink-add'), real.result.get('jitlink-complete')]).toEqual([kind, '0', '0', '0']);
      expect(Number(real.result.get('jitlink-cubin'))).toBeGreaterThan(0);
      expect(real.cudaLoads).toEqual(new Set([linkLoad]));
      expect([...real.names].filter((n) => /nvvm/.test(n))).toEqual([]);
      const report = await check(healthy, program);
      expectEdgesAgree(report, real);
      expect(report.ok).toBe(true);
      // Both loads are modelled (the file names them), neither is a problem: it links without libcuda, and never loads libnvvm.
      expect(modelled(report)).toEqual(new Set([linkLoad, 'libnvJitLink.so.12 -> libnvvm.so']));
      expect(report.problems).toEqual([]);
    }
  }, 120_000);

  test('nvJitLink: the driver\'s libcuda on LD_LIBRARY_PATH: nvJitLinkCreate loads it, and check finds that file', async () => {
    const program = jitlink('ptx', 2, '-arch=sm_75');
    const real = realRun(healthy, program, NV);
    expect(real.cudaLoads).toEqual(new Set([linkLoad]));
    // Without a GPU (no NVIDIA kernel module) the driver's cuInit fails, and so does nvJitLinkCreate
    // (NVJITLINK_ERROR_INTERNAL): the stop at the first driver call every program of the corpus makes here.
    if (!existsSync('/proc/driver/nvidia/version')) expect(real.result.get('jitlink-create')).toBe('6');
    const report = await check(healthy, program, NV);
    expectEdgesAgree(report, real);
    expect(report.ok).toBe(true);
    expect(report.problems).toEqual([]);
    expect(dlopenEdges(report).get(linkLoad)).toBe(join(healthy, NV, 'libcuda.so'));
  }, 60_000);

  test('nvJitLink: the toolkit\'s stub first on LD_LIBRARY_PATH: nvJitLinkCreate loads it and fails, and check fails on the stub', async () => {
    const program = jitlink('ptx', 2, '-arch=sm_75');
    const real = realRun(healthy, program, `${STUBS}:${NV}`);
    expect(real.cudaLoads).toEqual(new Set([linkLoad]));
    expect(real.result.get('jitlink-create')).toBe('6');
    const report = await check(healthy, program, `${STUBS}:${NV}`);
    expectEdgesAgree(report, real);
    expect(report.ok).toBe(false);
    expect(first(report)).toMatchObject({kind: 'cuda-stub', library: 'libcuda.so', edge: 'dlopen'});
    expect(first(report)!.fix).toContain(STUBS);
  }, 60_000);

  // NCCL 2.22.3 (Debian trixie's libnccl2; the CUDA runtime linked in statically), driven through its API:
  // ncclGetUniqueId runs NCCL's ncclInit (GDRCopy, with NCCL_GDRCOPY_ENABLE=1, then the bootstrap network,
  // whose outcome in the chroot is not asserted), ncclCommInitAll loads libcuda.so.1 (its cudart) and stops at
  // its first CUDA call (cudaGetDeviceCount: "unhandled cuda error", 1) without a GPU. So without a GPU the load
  // up to that call is the oracle; NVML, InfiniBand verbs and the network and tuner plugins come later in a
  // communicator's initialization, which needs a GPU: they stay modelled from NCCL's strings and sources.
  const ncclLoads = (real: RealRun) => [...real.loads].filter((l) => l.startsWith('libnccl.so.2 -> '));
  const ncclDriver = 'libnccl.so.2 -> libcuda.so.1';
  const ncclNvml = 'libnccl.so.2 -> libnvidia-ml.so.1';
  const noGpu = !existsSync('/proc/driver/nvidia/version');
  /** The files the loader opened in a run with LD_DEBUG=files and LD_DEBUG_OUTPUT=/tmp/NAME (it appends the pid), and those it unloaded. */
  const loaderFiles = (root: string, name: string) => {
    const text = readdirSync(join(root, 'tmp')).filter((f) => f.startsWith(`${name}.`)).map((f) => readFileSync(join(root, 'tmp', f), 'utf8')).join('');
    const all = (re: RegExp) => [...text.matchAll(re)].map((m) => m[1]!);
    return {opened: all(/opening file=(\S+) \[0\]/g), unloaded: all(/file=(\S+) \[0\];  destroying link map/g)};
  };

  test('NCCL: healthy (the driver\'s libcuda and NVML on LD_LIBRARY_PATH), without a GPU the load up to the first CUDA call as the oracle: ncclCommInitAll loads that libcuda.so.1 and fails at its first call, and check passes finding the same file', async () => {
    const real = realRun(healthy, NCCL, NV);
    expect(real.result.get(NCCL.target)).toBe('OK');
    expect(real.result.get('nccl-id')).toMatch(/^\d+$/);
    // Without NCCL_GDRCOPY_ENABLE, ncclGetUniqueId loads nothing; ncclCommInitAll loads the driver, only.
    expect(ncclLoads(real)).toEqual([ncclDriver]);
    expect(real.result.get('where')).toBe(`${NV}/libcuda.so.1`);
    if (noGpu) expect(real.result.get('nccl-init')).toBe('1');
    // Why it fails, in NCCL's words (NCCL_DEBUG=WARN: the same loads): the driver's first call, without the NVIDIA kernel module.
    const warn = realRun(healthy, NCCL, NV, ['NCCL_DEBUG=WARN']);
    expect(ncclLoads(warn)).toEqual([ncclDriver]);
    if (noGpu) expect(warn.lines.some((l) => l.includes('NCCL WARN Cuda failure \'OS call failed or operation not supported on this OS\''))).toBe(true);
    const report = await check(healthy, NCCL, NV);
    expectEdgesAgree(report, real);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(dlopenEdges(report).get(ncclDriver)).toBe(join(healthy, NV, 'libcuda.so.1'));
    // NVML is modelled (found beside libcuda), not seen: the communicator loads it past the first CUDA call, which needs a GPU.
    expect(dlopenEdges(report).get(ncclNvml)).toBe(join(healthy, NV, 'libnvidia-ml.so.1'));
    if (noGpu) expect(real.names.has('libnvidia-ml.so.1')).toBe(false);
  }, 60_000);

  test('NCCL: no driver (no libcuda.so.1 anywhere), without a GPU the load up to the first CUDA call as the oracle: the dlopen of libcuda.so.1 fails and so does ncclCommInitAll; check warns on that edge and --strict fails', async () => {
    const real = realRun(healthy, NCCL);
    expect(real.result.get(NCCL.target)).toBe('OK');
    expect(ncclLoads(real)).toEqual([ncclDriver]);
    expect(real.result.get('where') ?? null).toBeNull();
    expect(real.result.get('nccl-init')).toBe('1');
    const report = await check(healthy, NCCL);
    expectEdgesAgree(report, real);
    expect(dlopenEdges(report).get(ncclDriver)).toBeNull();
    // On this machine without the NVIDIA kernel module no libcuda could work: a warning (by design; --strict fails).
    expect(report.problems.find((p) => p.library === 'libcuda.so.1')).toMatchObject({kind: 'not-found', edge: 'dlopen', impact: 'feature'});
    expect(report.ok).toBe(true);
    expect((await checkLibraries({targets: [join(healthy, NCCL.target)], sysroot: healthy, ldLibraryPath: '', strict: true})).ok).toBe(false);
  }, 60_000);

  test('NCCL: the toolkit\'s stub libcuda.so.1 first on LD_LIBRARY_PATH, without a GPU the load up to the first CUDA call as the oracle: ncclCommInitAll loads the stub and fails, and check fails on the stub', async () => {
    const real = realRun(healthy, NCCL, `${STUBS}:${NV}`, ['LD_DEBUG=files', 'LD_DEBUG_OUTPUT=/tmp/nccl-stub-ld']);
    expect(real.result.get(NCCL.target)).toBe('OK');
    expect(ncclLoads(real)).toEqual([ncclDriver]);
    expect(real.result.get('nccl-init')).toBe('1');
    // The loader's own account: the stub is the libcuda.so.1 opened, and it is closed again after the failed call ("where" finds none).
    const files = loaderFiles(healthy, 'nccl-stub-ld');
    expect(files.opened.filter((f) => basename(f).startsWith('libcuda.so'))).toEqual([`${STUBS}/libcuda.so.1`]);
    expect(files.unloaded).toContain(`${STUBS}/libcuda.so.1`);
    expect(real.result.get('where')).toBeUndefined();
    const report = await check(healthy, NCCL, `${STUBS}:${NV}`);
    expectEdgesAgree(report, real);
    expect(dlopenEdges(report).get(ncclDriver)).toBe(join(healthy, STUBS, 'libcuda.so.1'));
    expect(report.ok).toBe(false);
    expect(first(report)).toMatchObject({kind: 'cuda-stub', library: 'libcuda.so.1'});
    expect(first(report)!.fix).toContain(STUBS);
  }, 60_000);

  test('NCCL: NCCL_GDRCOPY_ENABLE=1, without a GPU the load up to the first CUDA call as the oracle: ncclGetUniqueId (NCCL\'s ncclInit) dlopens libgdrapi.so, absent, and goes on; check models that load as optional and says nothing of it', async () => {
    const gdr = 'libnccl.so.2 -> libgdrapi.so';
    const id = realRun(healthy, {...NCCL, steps: [`open:${NCCL.target}`, 'nccl-id']}, NV, ['NCCL_GDRCOPY_ENABLE=1']);
    expect(id.result.get('nccl-id')).toMatch(/^\d+$/);
    expect(ncclLoads(id)).toEqual([gdr]);
    // Then the communicator, as in the healthy run: libgdrapi.so is not asked for again.
    const real = realRun(healthy, NCCL, NV, ['NCCL_GDRCOPY_ENABLE=1']);
    expect(ncclLoads(real)).toEqual([gdr, ncclDriver]);
    expect(real.result.get('where')).toBe(`${NV}/libcuda.so.1`);
    const report = await check(healthy, NCCL, NV);
    expectEdgesAgree(report, real);
    expect(ncclLoads(real).filter((l) => !modelled(report).has(l))).toEqual([]);
    // An optional load that finds nothing is what NCCL expects: no edge, no problem.
    expect(dlopenEdges(report).has(gdr)).toBe(false);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
  }, 60_000);

  test('NCCL: an older release first on LD_LIBRARY_PATH (Debian bookworm\'s real CUDA 11.8), without a GPU the load up to the first CUDA call as the oracle: its cudart is static, so the real run is the healthy one, and check says nothing of it', async () => {
    const real = realRun(healthy, NCCL, `${OLD}:${NV}`, ['LD_DEBUG=files', 'LD_DEBUG_OUTPUT=/tmp/nccl-old-ld']);
    expect(real.result.get(NCCL.target)).toBe('OK');
    expect(ncclLoads(real)).toEqual([ncclDriver]);
    // The loader opens nothing of the older release (its libcudart.so.11.0 is no name NCCL asks for).
    const opened = loaderFiles(healthy, 'nccl-old-ld').opened;
    expect(opened).toContain(`${NV}/libcuda.so.1`);
    expect(opened.filter((f) => f.startsWith(`${OLD}/`))).toEqual([]);
    expect(real.result.get('where')).toBe(`${NV}/libcuda.so.1`);
    if (noGpu) expect(real.result.get('nccl-init')).toBe('1');
    const report = await check(healthy, NCCL, `${OLD}:${NV}`);
    expectEdgesAgree(report, real);
    expect(dlopenEdges(report).get(ncclDriver)).toBe(join(healthy, NV, 'libcuda.so.1'));
    expect(report.ok).toBe(true);
    expect(report.problems.filter((p) => JSON.stringify(p).includes(OLD))).toEqual([]);
  }, 60_000);
});

/** The corpus's files with GPU code, and Debian's cuobjdump (CUDA 12.4) to compare the reader with. */
const CUOBJDUMP = DEBIAN_CUOBJDUMP;
const GPU_FILES = ['/usr/lib/libmagma.so.2', '/usr/lib/libgloo_cuda.so.0.5.0', `${PY}/pyvkfft/_vkfft_cuda.cpython-313-x86_64-linux-gnu.so`,
  `${PY}/pycuda/_driver.cpython-313-x86_64-linux-gnu.so`, `${LIB}/libstarpu-1.4.so.6.0.0`, `${LIB}/libcurand.so.10.3.5.147`, `${LIB}/libcusolver.so.11.6.1.9`];
describeIf(present && existsSync(CUOBJDUMP), present ? 'needs cuobjdump: bash test/fixtures/fetch-cuda-libs.sh' : 'needs the corpus: bash test/fixtures/fetch-corpus.sh')(
  'GPU code of the corpus against cuobjdump 12.4', () => {
    test('every SASS and PTX image cuobjdump lists, in its order, name for name (MAGMA\'s 1419 SASS and 473 PTX by their compilation unit)', () => {
      const disagreements: string[] = [];
      let compared = 0;
      for (const f of GPU_FILES) {
        const file = join(CORPUS, f);
        const theirs = cuobjdump(CUOBJDUMP, file);
        for (const mode of ['elf', 'ptx'] as const) {
          expect(theirs[mode].fatal).toBeNull();
          const a = mine(file, mode);
          const b = theirs[mode].lines;
          compared += b.length;
          const i = b.findIndex((l, k) => l !== a[k]);
          if (i >= 0 || a.length !== b.length) disagreements.push(`${f} --list-${mode}: ${a.length} here, ${b.length} there; first difference at ${i + 1}: ${a[i]} vs ${b[i]}`);
        }
      }
      expect(disagreements).toEqual([]);
      expect(compared).toBeGreaterThan(1900);
      // MAGMA's entries name their compilation unit (built with nvcc -G; -lineinfo names them too); cuobjdump names its images by it.
      expect(mine(join(CORPUS, '/usr/lib/libmagma.so.2'), 'elf').slice(0, 2)).toEqual(['zaxpycp.sm_70.cubin', 'zaxpycp.sm_75.cubin']);
    }, 120_000);
  });
