import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, type CheckReport} from '../../../../src/core/elf/index.js';
import {readElfSync, readStats, resetReadStats} from '../../../../src/core/elf/read/elf/index.js';
import {callerLoads, cudaMajorOf, importsDlopen} from '../../../../src/core/elf/runtime/callers.js';
import {makeTempDir, type TempDir} from '../../../helpers/tmp.js';
import {REPO_ROOT} from '../../../helpers/cli.js';
import {describeIf, testIf} from '../../../helpers/skip.js';
import {NEEDS} from '../../../helpers/capabilities.js';
import {buildLib, HAVE_GCC} from '../fixtures.js';
import {buildDlopenSpy, readSpyLog, spyLog} from './dlopen-spy.js';

/**
 * Issue 43: the callers of dlopen are found by what a library does (it imports dlopen and its
 * strings name CUDA libraries), not by its SONAME; a library that declares its loads in
 * `.note.dlopen` has them taken from there. The oracle of the stand-ins is an LD_PRELOAD spy of
 * dlopen (./dlopen-spy.ts) in a real run: the names and callers it logs are the edges check lists.
 */
const DL = join(REPO_ROOT, 'test', 'fixtures', 'downloaded');
const GPU_CODE = join(DL, 'trixie-gpu-code', 'usr', 'lib', 'x86_64-linux-gnu');
const RUNTIME = join(DL, 'trixie-runtime', 'usr', 'lib', 'x86_64-linux-gnu');
const IMAGE = join(REPO_ROOT, 'bench', 'out', 'torch-trixie');
const TORCH_IMAGE = process.env.CUDAENV_TORCH_IMAGE ?? (existsSync(join(IMAGE, 'usr')) ? IMAGE : '/work/main/bench/out/torch-trixie');
const TORCH_LIB = join(TORCH_IMAGE, 'usr', 'lib', 'x86_64-linux-gnu');
const HAVE_TORCH = existsSync(join(TORCH_LIB, 'libtorch_cuda.so.2.6'));
const NOT_TORCH = 'optional: the PyTorch image is not fetched (sudo bash bench/fetch-torch.sh; 6.8 GB, never CI\'s)';
const X86_64 = process.arch === 'x64';

/** The loads a file's own reading gives, as a check of it would (its libcudart's major for prefixes). */
function loadsOf(path: string, measure = false) {
  const info = readElfSync(path, {symbols: 'undefined'});
  // What the run-time stage reads on top of what the loader model read already.
  if (measure) resetReadStats();
  const started = performance.now();
  const loads = callerLoads(info, path, `test:${path}`, info.soname ?? path, cudaMajorOf(info, []));
  lastMs = performance.now() - started;
  return loads;
}
let lastMs = 0;

function dlopenEdges(report: CheckReport, caller: string) {
  return report.objects.find((o) => o.path.endsWith(`/${caller}`))?.needed.filter((e) => e.dlopen) ?? [];
}

const d = describeIf(HAVE_GCC && X86_64, HAVE_GCC ? 'needs x86-64 (the dlopen spy is x86-64 assembly)' : NEEDS.tool('gcc'));

d('callers found by what they do, whatever their name (stand-ins built here, a real run as the oracle)', () => {
  let tmp: TempDir;
  let spy: string;
  let cudart: string;
  let nvrtc: string;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-callers-');
    spy = buildDlopenSpy(tmp.dir);
    // Stand-ins with the real SONAMEs: the CUDA major comes from the libcudart the caller needs.
    const lib = join(tmp.dir, 'lib');
    cudart = buildLib({out: join(lib, 'libcudart.so.12'), soname: 'libcudart.so.12', source: 'int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n'});
    nvrtc = buildLib({out: join(lib, 'libnvrtc.so.12'), soname: 'libnvrtc.so.12', source: 'int nvrtcVersion(int *a, int *b) { *a = 12; *b = 4; return 0; }\n'});
  });
  afterAll(() => tmp?.cleanup());

  /** Runs `program` under the spy: what it dlopened, and who asked. */
  function spied(program: string, env: NodeJS.ProcessEnv = {}) {
    const log = join(tmp.dir, `spy-${Math.random().toString(36).slice(2)}.log`);
    const r = spawnSync(program, [], {env: {PATH: '/usr/bin:/bin', ...env, LD_PRELOAD: spy, DLOPEN_SPY_LOG: log}, encoding: 'utf8'});
    return {stdout: r.stdout.trim(), status: r.status, loads: readSpyLog(log)};
  }

  test('a distribution\'s versioned SONAME (libtorch_cuda.so.2.6) whose strings hold the prefix "libnvrtc.so.": the real run loads libnvrtc.so.12, and check lists that edge with torch\'s facts', async () => {
    const dir = join(tmp.dir, 'torchlike');
    const torch = buildLib({out: join(dir, 'libtorch_cuda.so.2.6'), soname: 'libtorch_cuda.so.2.6', link: [cudart], runpath: join(tmp.dir, 'lib'), extra: ['-ldl'], source: `
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
/* As PyTorch's LazyNVRTC: the prefix in the file, the CUDA major added at run time. */
static const char prefix[] = "libnvrtc.so.";
int cudaGetDeviceCount(int *);
int torch_jit(void) {
  char name[64];
  int n; cudaGetDeviceCount(&n);
  snprintf(name, sizeof name, "%s%d", prefix, 12);
  return dlopen(name, RTLD_NOW) ? 0 : 1;
}
`});
    const program = buildLib({out: join(dir, 'jit'), executable: true, link: [torch], runpath: `${dir}:${join(tmp.dir, 'lib')}`, source: 'int torch_jit(void);\nint main(void) { return torch_jit(); }\n'});
    const real = spied(program);
    expect(real.status).toBe(0);
    expect(real.loads).toEqual([{caller: torch, name: 'libnvrtc.so.12'}]);
    const report = await checkLibraries({targets: [torch], exe: program});
    expect(report.ok).toBe(true);
    expect(dlopenEdges(report, 'libtorch_cuda.so.2.6')).toEqual([expect.objectContaining({name: 'libnvrtc.so.12', path: nvrtc, dlopen: {when: 'at the first JIT-compiled kernel', impact: 'feature'}})]);
    // Its entry in the shape of ELF dlopen metadata.
    expect(report.objects.find((o) => o.path === torch)?.runtimeLoads).toEqual([{soname: ['libnvrtc.so.12'], feature: 'JIT-compiled kernels (fusion, torch.compile, jiterator)', description: 'NVRTC, at the first JIT-compiled kernel', priority: 'recommended', source: 'strings'}]);
  });

  test('a library that imports dlopen and names no CUDA library: the real run loads libz, and check follows nothing of it', async () => {
    const lib = buildLib({out: join(tmp.dir, 'plain', 'libplugins.so.1'), soname: 'libplugins.so.1', extra: ['-ldl'], source: `
#include <dlfcn.h>
int load(void) { return dlopen("libz.so.1", RTLD_NOW) ? 0 : 1; }
`});
    const program = buildLib({out: join(tmp.dir, 'plain', 'run'), executable: true, link: [lib], rpath: join(tmp.dir, 'plain'), source: 'int load(void);\nint main(void) { return load(); }\n'});
    expect(spied(program).loads.map((l) => l.name)).toEqual(['libz.so.1']);
    expect(loadsOf(lib)).toEqual([]);
    const report = await checkLibraries({targets: [lib]});
    expect(dlopenEdges(report, 'libplugins.so.1')).toEqual([]);
    expect(report.objects.some((o) => o.runtimeLoads)).toBe(false);
  });

  test('a library that names libcuda.so.1 and libnvidia-ml.so.1 but imports no dlopen: the real run loads nothing, and check lists nothing', async () => {
    const lib = buildLib({out: join(tmp.dir, 'names', 'libnames.so.1'), soname: 'libnames.so.1', source: `
#include <stdio.h>
int say(void) { return puts("libcuda.so.1") + puts("libnvidia-ml.so.1"); }
`});
    const program = buildLib({out: join(tmp.dir, 'names', 'run'), executable: true, link: [lib], rpath: join(tmp.dir, 'names'), source: 'int say(void);\nint main(void) { say(); return 0; }\n'});
    const real = spied(program);
    expect(real.stdout).toBe('libcuda.so.1\nlibnvidia-ml.so.1');
    expect(real.loads).toEqual([]);
    expect(loadsOf(lib)).toEqual([]);
    expect(dlopenEdges(await checkLibraries({targets: [lib]}), 'libnames.so.1')).toEqual([]);
  });

  test('declared loads first: a required name missing fails the check, a recommended one is a warning named by its feature; the real run asks for exactly those names', async () => {
    const dir = join(tmp.dir, 'declared');
    buildLib({out: join(dir, 'libpresent.so.2'), soname: 'libpresent.so.2', source: 'int present(void) { return 2; }\n'});
    const json = (entries: unknown) => JSON.stringify(JSON.stringify(entries));
    // The note names other libraries than the strings do: the note decides.
    const lib = buildLib({out: join(dir, 'libdeclares.so.1'), soname: 'libdeclares.so.1', runpath: '$ORIGIN', extra: ['-ldl'], source: `
#include <dlfcn.h>
#include <stdint.h>
#define NOTE(json, var) \\
  __attribute__((used, section(".note.dlopen"))) _Alignas(4) static const struct { \\
    struct { uint32_t n_namesz, n_descsz, n_type; } nhdr; char name[4]; _Alignas(4) char json_[sizeof(json)]; \\
  } var = { { 4, sizeof(json), 0x407c0c0a }, "FDO", json }
NOTE(${json([{soname: ['libmissing-core.so.3'], priority: 'required', description: 'the core engine'}])}, n1);
NOTE(${json([{soname: ['libmissing-gpu.so.1', 'libpresent.so.2'], feature: 'gpu', priority: 'recommended', description: 'GPU offload'}])}, n2);
NOTE(${json([{soname: ['libmissing-extra.so.1'], feature: 'extras', priority: 'suggested', description: 'extra codecs'}])}, n3);
static const char *strings_say = "libcuda.so.1";
int init(void) {
  int got = 0;
  got += dlopen("libmissing-core.so.3", RTLD_NOW) != 0;
  if (!dlopen("libmissing-gpu.so.1", RTLD_NOW)) got += dlopen("libpresent.so.2", RTLD_NOW) != 0;
  got += dlopen("libmissing-extra.so.1", RTLD_NOW) != 0;
  return got + (strings_say[0] == 0);
}
`});
    const program = buildLib({out: join(dir, 'run'), executable: true, link: [lib], rpath: dir, source: '#include <stdio.h>\nint init(void);\nint main(void) { printf("%d\\n", init()); return 0; }\n'});
    const real = spied(program);
    expect(real.stdout).toBe('1');
    expect(real.loads.map((l) => l.name)).toEqual(['libmissing-core.so.3', 'libmissing-gpu.so.1', 'libpresent.so.2', 'libmissing-extra.so.1']);
    expect(new Set(real.loads.map((l) => l.caller))).toEqual(new Set([lib]));
    const report = await checkLibraries({targets: [lib], exe: program});
    expect(report.ok).toBe(false);
    const edges = dlopenEdges(report, 'libdeclares.so.1');
    expect(edges.map((e) => [e.name, e.path, e.dlopen?.impact])).toEqual([
      ['libmissing-core.so.3', null, 'library'],
      // The second alternative is the one the search finds.
      ['libpresent.so.2', join(dir, 'libpresent.so.2'), 'feature'],
      ['libmissing-extra.so.1', null, 'feature'],
    ]);
    const problems = report.problems.filter((p) => p.edge === 'dlopen');
    expect(problems.map((p) => [p.library, p.impact, p.feature ?? null])).toEqual([['libmissing-core.so.3', 'library', null], ['libmissing-extra.so.1', 'feature', 'extras']]);
    expect(report.objects.find((o) => o.path === lib)?.runtimeLoads).toEqual([
      {soname: ['libmissing-core.so.3'], description: 'the core engine', priority: 'required', source: 'note'},
      {soname: ['libmissing-gpu.so.1', 'libpresent.so.2'], feature: 'gpu', description: 'GPU offload', priority: 'recommended', source: 'note'},
      {soname: ['libmissing-extra.so.1'], feature: 'extras', description: 'extra codecs', priority: 'suggested', source: 'note'},
    ]);
  });

  test('an object cudart_static is linked into (it carries the runtime\'s messages) loads libcuda.so.1 as libcudart does: at the first CUDA call', () => {
    const lib = buildLib({out: join(tmp.dir, 'static', 'libk.so'), extra: ['-ldl'], source: `
#include <dlfcn.h>
const char *cuda_message = "CUDA driver version is insufficient for CUDA runtime version";
void *driver(void) { return dlopen("libcuda.so.1", RTLD_NOW); }
`});
    expect(loadsOf(lib).map((l) => [l.names, l.role.when, l.role.impact])).toEqual([[['libcuda.so.1'], 'at the first CUDA call', 'library']]);
  });
});

describeIf(existsSync(join(GPU_CODE, 'libnccl.so.2')) && existsSync(join(RUNTIME, 'libcudart.so.12')), NEEDS.realCudaLibs)('real libraries of Debian trixie (the fixtures)', () => {
  const DRIVER = join(REPO_ROOT, 'test', 'fixtures', 'downloaded', 'trixie-driver', 'usr', 'lib', 'x86_64-linux-gnu', 'nvidia', 'current', 'libcuda.so.1');
  testIf(existsSync(DRIVER), NEEDS.realCudaLibs)('the driver\'s own libcuda.so.1 (550.163.01): what it names for itself (EGL, GLX, Tegra, OpenSSL) is the driver\'s, not listed', () => {
    const info = readElfSync(DRIVER, {symbols: 'undefined'});
    // It does import dlopen and names those libraries: only the rule keeps them out.
    expect(importsDlopen(info)).toBe(true);
    expect(loadsOf(DRIVER)).toEqual([]);
  });

  test('libnccl.so.2 (2.22.3): libcuda.so.1, NVML, InfiniBand verbs, GDRCopy, and its plugins\' templates, from its own strings', () => {
    const loads = loadsOf(join(GPU_CODE, 'libnccl.so.2'));
    expect(loads.map((l) => [l.names[0], l.priority, l.template ?? false])).toEqual([
      // The template completed from the environment (none given: NCCL's default name, plugin-dirs.test.ts).
      ['libnccl-net.so', 'suggested', false],
      ['libgdrapi.so', 'suggested', false],
      ['libibverbs.so', 'suggested', false],
      ['libibverbs.so.1', 'suggested', false],
      ['libnvidia-ml.so.1', 'required', false],
      ['libnccl-tuner-%s.so', 'suggested', true],
      ['libcuda.so.1', 'required', false],
    ]);
    expect(loads.find((l) => l.names[0] === 'libcuda.so.1')?.role.when).toBe('at the first communicator (ncclCommInitRank)');
  });

  test('libcublas.so.12 and libcudart.so.12: libcuda.so.1, the one name each holds, at the first CUDA call (cuBLAS carries cudart_static)', () => {
    for (const path of [join(GPU_CODE, 'libcublas.so.12'), join(RUNTIME, 'libcudart.so.12')]) {
      expect(loadsOf(path).map((l) => [l.names, l.role.when, l.role.impact])).toEqual([[['libcuda.so.1'], 'at the first CUDA call', 'library']]);
    }
  });

  test('the strings of a 241 MB library are read from its .rodata alone (130 KB)', () => {
    loadsOf(join(GPU_CODE, 'libnccl.so.2'), true);
    expect(readStats().bytes).toBeLessThan(1024 * 1024);
  });
});

describe('the PyTorch 2.6 image (Debian trixie, CUDA 12.4.1)', () => {
  const t = testIf(HAVE_TORCH, NOT_TORCH);

  t('libtorch_cuda.so.2.6 (no dlopen of its own: at::DynamicLibrary) loads libnvrtc.so.12 from the prefix, the driver and its linear algebra library; its 1.2 GB cost a read of its .rodata (6 MB)', () => {
    const loads = loadsOf(join(TORCH_LIB, 'libtorch_cuda.so.2.6'), true);
    const ms = lastMs;
    expect(loads.map((l) => [l.names[0], l.role.impact])).toEqual([['libtorch_cuda_linalg.so', 'feature'], ['libcuda.so.1', 'library'], ['libnvrtc.so.12', 'feature']]);
    expect(readStats().bytes).toBeLessThan(16 * 1024 * 1024);
    // Warm page cache, measured at 10 to 30 ms (the regular expression over the text took 200 ms).
    expect(ms).toBeLessThan(1000);
  });

  t('libc10_cuda.so.2.6 loads NVML (optional) and the driver; libcublasLt.so.12\'s initializer load of libcuda.so.1 is optional', () => {
    expect(loadsOf(join(TORCH_LIB, 'libc10_cuda.so.2.6')).map((l) => [l.names[0], l.role.impact])).toEqual([['libnvidia-ml.so.1', 'optional'], ['libcuda.so.1', 'library']]);
    const lt = loadsOf(join(TORCH_LIB, 'libcublasLt.so.12'), true);
    expect(lt.map((l) => [l.names[0], l.role.impact, l.role.when])).toEqual([['libcuda.so.1', 'optional', 'in its initializer, when it is loaded (failure ignored)']]);
    // 442 MB, of which its .rodata (33 MB) is read.
    expect(readStats().bytes).toBeLessThan(40 * 1024 * 1024);
  });

  testIf(HAVE_TORCH && process.getuid?.() === 0 && HAVE_GCC && X86_64, HAVE_TORCH ? 'needs root (a chroot of the image), gcc and x86-64' : NOT_TORCH)(
    'import torch in a chroot of the image, under the spy: libcublasLt.so.12 dlopens libcuda.so.1 twice and import goes on (the fact behind its optional role)', async () => {
      const tmp = makeTempDir('cudaenv-torch-spy-');
      try {
        const spy = buildDlopenSpy(tmp.dir);
        // A private mount namespace: the image gets a tmpfs /tmp, /proc and /dev there, and nothing in it changes.
        const script = `set -e; mount -t tmpfs none "$1/tmp"; cp "$2" "$1/tmp/spy.so"; mount -t proc proc "$1/proc"; mount --rbind /dev "$1/dev"
PYTHONDONTWRITEBYTECODE=1 LD_PRELOAD=/tmp/spy.so /usr/sbin/chroot "$1" /usr/bin/python3 -c 'import torch; print("imported")'`;
        const r = spawnSync('unshare', ['-m', 'sh', '-c', script, 'sh', TORCH_IMAGE, spy], {encoding: 'utf8', timeout: 300_000});
        expect(r.stdout).toContain('imported');
        const lt = spyLog(r.stderr).filter((l) => l.name === 'libcuda.so.1');
        expect(lt.map((l) => l.caller.replace(/.*\//, ''))).toEqual(['libcublasLt.so.12', 'libcublasLt.so.12']);
      } finally {
        tmp.cleanup();
      }
    }, 300_000);
});

// A link in place of a library name must not change what its file says.
d('a caller reached through a link is read by its identity', () => {
  test('the same file under two names gives the same loads', () => {
    const tmp = makeTempDir('cudaenv-callers-link-');
    try {
      const lib = buildLib({out: join(tmp.dir, 'libnccl.so.2.22.3'), soname: 'libnccl.so.2', extra: ['-ldl'], source: '#include <dlfcn.h>\nvoid *f(void) { return dlopen("libnvidia-ml.so.1", RTLD_NOW); }\n'});
      symlinkSync('libnccl.so.2.22.3', join(tmp.dir, 'libnccl.so.2'));
      expect(loadsOf(join(tmp.dir, 'libnccl.so.2')).map((l) => [l.names[0], l.priority])).toEqual([['libnvidia-ml.so.1', 'required']]);
      expect(loadsOf(lib).map((l) => l.names[0])).toEqual(['libnvidia-ml.so.1']);
    } finally {
      tmp.cleanup();
    }
  });
});
