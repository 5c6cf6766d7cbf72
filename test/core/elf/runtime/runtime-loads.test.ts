import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, renameSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine, type CheckReport} from '../../../../src/core/elf/index.js';
import {readElfSync} from '../../../../src/core/elf/read/elf/index.js';
import {constantStrings} from '../../../../src/core/elf/read/elf/rodata-strings.js';
import {makeTempDir, type TempDir} from '../../../helpers/tmp.js';
import {REPO_ROOT} from '../../../helpers/cli.js';
import {describeIf} from '../../../helpers/skip.js';
import {NEEDS} from '../../../helpers/capabilities.js';
import {buildLib, HAVE_GCC} from '../fixtures.js';

/**
 * What CUDA loads at run time (issue 32), against the real loader: Debian trixie's libcudart12,
 * libnvrtc12 and libnvrtc-builtins12.4, and the driver's user-space libcuda1 (550.163.01; no
 * kernel module is needed to load it). Small C programs call the real libraries under
 * LD_DEBUG=libs, and the model must name the file the real run loads, and fail where it fails.
 * The toolkit's stub libcuda is a stand-in built here with the real stub's documented shape
 * (CUDA 12.4's lib64/stubs/libcuda.so: SONAME libcuda.so.1, no DT_NEEDED, no symbol versions,
 * every entry point returning CUDA_ERROR_STUB_LIBRARY); libcudart answers it as it answers the
 * real one (cudaErrorStubLibrary, checked once against Debian's nvidia-cuda-dev, docs/check.md).
 * cuDNN is not in Debian: its shims are stand-ins with the real SONAMEs and name strings.
 */
const DL = join(REPO_ROOT, 'test', 'fixtures', 'downloaded');
const RUNTIME = join(DL, 'trixie-runtime', 'usr', 'lib', 'x86_64-linux-gnu');
const DRIVER = join(DL, 'trixie-driver', 'usr', 'lib', 'x86_64-linux-gnu', 'nvidia', 'current');
const present = ['libcudart.so.12', 'libnvrtc.so.12', 'libnvrtc-builtins.so.12.4'].every((n) => existsSync(join(RUNTIME, n))) && existsSync(join(DRIVER, 'libcuda.so.1'));
const d = describeIf(present && HAVE_GCC, present ? 'needs gcc (apt-get install gcc)' : NEEDS.realCudaLibs);
const NO_DRIVER = !existsSync('/proc/driver/nvidia/version');

/** Runs `program` with LD_DEBUG=libs: its output and the file each name was loaded from. */
function run(program: string, env: NodeJS.ProcessEnv = {}): {stdout: string; loaded: Map<string, string>} {
  const r = spawnSync(program, [], {env: {PATH: '/usr/bin:/bin', ...env, LD_DEBUG: 'libs'}, encoding: 'utf8'});
  const loaded = new Map<string, string>();
  let want: string | null = null;
  for (const line of r.stderr.split('\n')) {
    const find = /find library=(\S+) \[\d+\]; searching/.exec(line);
    if (find) want = find[1]!;
    const hit = /trying file=(\S+)/.exec(line);
    if (hit && want) loaded.set(want, hit[1]!);
    const map = /file=(\S+) \[\d+\];\s+generating link map/.exec(line);
    if (map && want === map[1]) want = null;
  }
  // The last file tried for a name is the one it loaded (or the last it failed on).
  return {stdout: r.stdout.trim(), loaded};
}

function runtimeProblems(report: CheckReport) {
  return report.problems.filter((p) => p.edge === 'dlopen');
}

/** The run-time edge `name` of the checked object named `caller`. */
function runtimeEdge(report: CheckReport, caller: string, name: string) {
  return report.objects.find((o) => o.path.endsWith(`/${caller}`))?.needed.find((e) => e.dlopen && e.name === name);
}

d('libcudart dlopens the driver\'s libcuda.so.1 at the first CUDA call', () => {
  let tmp: TempDir;
  let program: string;
  let stubs: string;
  const cudart = join(RUNTIME, 'libcudart.so.12');
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-runtime-');
    program = buildLib({out: join(tmp.dir, 'count'), executable: true, link: [cudart], runpath: RUNTIME, source: `
#include <stdio.h>
int cudaGetDeviceCount(int *);
const char *cudaGetErrorName(int);
int main(void) { int n = -1; int e = cudaGetDeviceCount(&n); printf("%d %s\\n", e, cudaGetErrorName(e)); return 0; }
`});
    stubs = join(tmp.dir, 'cuda-12.4', 'lib64', 'stubs');
    buildLib({out: join(stubs, 'libcuda.so'), soname: 'libcuda.so.1', extra: ['-nostdlib'], source: `
int cuInit(unsigned f) { return 34; }
int cuDriverGetVersion(int *v) { return 34; }
int cuGetProcAddress(const char *s, void **p, int v, unsigned long long f) { return 34; }
int cuGetProcAddress_v2(const char *s, void **p, int v, unsigned long long f, void *st) { return 34; }
int cuGetExportTable(const void **t, const void *id) { return 34; }
`});
    // As people copy it into place: under its SONAME.
    symlinkSync('libcuda.so', join(stubs, 'libcuda.so.1'));
  });
  afterAll(() => tmp?.cleanup());

  test('the names come from the libraries themselves: libcudart holds "libcuda.so.1", libnvrtc "libnvrtc-builtins.so.12.4"', () => {
    expect(constantStrings(cudart, /libcuda\.so\.1/)).toEqual(['libcuda.so.1']);
    expect(constantStrings(join(RUNTIME, 'libnvrtc.so.12'), /libnvrtc-builtins\.so\.\d+\.\d+/)).toEqual(['libnvrtc-builtins.so.12.4']);
    // A near name inside a longer string is not a name: only whole strings count.
    expect(constantStrings(cudart, /cuda\.so\.1/)).toEqual([]);
  });

  test('the stand-in stub has the real stub\'s shape, and the real driver library does not', () => {
    const stub = readElfSync(join(stubs, 'libcuda.so'));
    expect({soname: stub.soname, needed: stub.needed, needs: stub.versionNeeds}).toEqual({soname: 'libcuda.so.1', needed: [], needs: []});
    const driver = readElfSync(join(DRIVER, 'libcuda.so.1'));
    expect(driver.soname).toBe('libcuda.so.1');
    expect(driver.needed).toContain('libc.so.6');
  });

  test('the stub on LD_LIBRARY_PATH: the real run fails with cudaErrorStubLibrary, and check names the stub, the entry and the fix', async () => {
    const real = run(program, {LD_LIBRARY_PATH: stubs});
    expect(real.stdout).toBe('34 cudaErrorStubLibrary');
    expect(real.loaded.get('libcuda.so.1')).toBe(join(stubs, 'libcuda.so.1'));
    const report = await checkLibraries({targets: [cudart], ldLibraryPath: stubs, exe: program});
    expect(report.ok).toBe(false);
    const [stub] = runtimeProblems(report);
    expect(stub).toMatchObject({kind: 'cuda-stub', edge: 'dlopen', impact: 'library', loadedBy: {object: cudart, when: 'at the first CUDA call'}, library: 'libcuda.so.1'});
    expect(stub!.chosen).toBe(`${join(stubs, 'libcuda.so.1')} (LD_LIBRARY_PATH entry ${stubs})`);
    expect(stub!.summary).toContain('CUDA driver is a stub library');
    expect(stub!.fix).toBe(`run \`unset LD_LIBRARY_PATH\` (it only holds ${stubs}), so that the driver's libcuda.so.1 is found`);
    expect(runtimeEdge(report, 'libcudart.so.12', 'libcuda.so.1')?.path).toBe(real.loaded.get('libcuda.so.1'));
    // The switch-time check's one line is this problem with its fix.
    expect(firstProblemLine(report)).toBe(`${stub!.summary}; ${stub!.fix}`);
  });

  // Issue 37, 2f: the note said the path twice ("picked: X (already loaded as X)", "finds X by already loaded as X")
  // and advised deleting the toolkit's stub, where the LD_PRELOAD entry is what brought it.
  test('the stub in LD_PRELOAD: the real run fails with cudaErrorStubLibrary, and check names the entry once and takes it out of LD_PRELOAD', async () => {
    const entry = join(stubs, 'libcuda.so');
    const real = run(program, {LD_PRELOAD: entry});
    expect(real.stdout).toBe('34 cudaErrorStubLibrary');
    const report = await checkLibraries({targets: [cudart], preload: [entry], exe: program});
    const [stub] = runtimeProblems(report);
    expect(stub).toMatchObject({kind: 'cuda-stub', library: 'libcuda.so.1'});
    expect(stub!.chosen).toBe(`${entry} (already loaded: an entry of LD_PRELOAD)`);
    expect(stub!.explanation).toContain(`${entry} is already loaded (an entry of LD_PRELOAD), so the loader takes it without a search.`);
    expect(stub!.fix).toBe(`take ${entry} out of LD_PRELOAD (\`unset LD_PRELOAD\` if it is the only entry), so that the driver's libcuda.so.1 is found`);
    expect(stub!.chosen!.split(entry).length - 1).toBe(1);
  });

  test('the stub linked by the program itself is already loaded when libcudart asks: the fix is the program\'s RUNPATH that found it, not deleting the stub', async () => {
    const app = buildLib({out: join(tmp.dir, 'linked', 'count'), executable: true, link: [cudart, join(stubs, 'libcuda.so.1')], runpath: `${stubs}:${RUNTIME}`, source: `
#include <stdio.h>
int cudaGetDeviceCount(int *);
int cuInit(unsigned);
/* A reference to the stub, so the link keeps it as DT_NEEDED (as a program calling the driver API directly does). */
int (*volatile keep)(unsigned) = cuInit;
int main(void) { int n; printf("%d\\n", cudaGetDeviceCount(&n)); return 0; }
`});
    expect(run(app).stdout).toBe('34');
    const report = await checkLibraries({targets: [cudart], exe: app});
    const [stub] = runtimeProblems(report);
    expect(stub).toMatchObject({kind: 'cuda-stub'});
    expect(stub!.chosen).toBe(`${join(stubs, 'libcuda.so.1')} (already loaded)`);
    expect(stub!.fix).toBe(`remove ${stubs} from the DT_RUNPATH named in "DT_RUNPATH entry ${stubs} of ${app}" (\`patchelf --set-rpath\`), so that the driver's libcuda.so.1 is found`);
  });

  test('the stub copied next to the program\'s own libraries is found through its RUNPATH: the same verdict', async () => {
    const lib = join(tmp.dir, 'app', 'lib');
    mkdirSync(lib, {recursive: true});
    spawnSync('cp', [join(stubs, 'libcuda.so'), join(lib, 'libcuda.so.1')]);
    const app = buildLib({out: join(tmp.dir, 'app', 'count'), executable: true, link: [cudart], rpath: `${lib}:${RUNTIME}`, source: `
#include <stdio.h>
int cudaGetDeviceCount(int *);
int main(void) { int n; printf("%d\\n", cudaGetDeviceCount(&n)); return 0; }
`});
    const real = run(app);
    expect(real.stdout).toBe('34');
    const report = await checkLibraries({targets: [cudart], exe: app});
    expect(runtimeProblems(report).map((p) => p.kind)).toEqual(['cuda-stub']);
    expect(runtimeEdge(report, 'libcudart.so.12', 'libcuda.so.1')?.path).toBe(real.loaded.get('libcuda.so.1'));
    expect(runtimeProblems(report)[0]!.fix).toContain('DT_RPATH');
  });

  test('the driver\'s libcuda: the real run gets past loading (no GPU here: cudaErrorNoDevice), and check has nothing to say', async () => {
    const real = run(program, {LD_LIBRARY_PATH: DRIVER});
    expect(real.stdout).not.toMatch(/^3[45] /);
    expect(real.loaded.get('libcuda.so.1')).toBe(join(DRIVER, 'libcuda.so.1'));
    const report = await checkLibraries({targets: [cudart], ldLibraryPath: DRIVER, exe: program});
    expect(runtimeProblems(report)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(runtimeEdge(report, 'libcudart.so.12', 'libcuda.so.1')).toMatchObject({path: join(DRIVER, 'libcuda.so.1'), via: 'ld_library_path', dlopen: {when: 'at the first CUDA call', impact: 'library'}});
  });

  test('a libcuda older than libcudart 12.4 needs (a stand-in named libcuda.so.470.57.02): driver-too-old, with the minimum', async () => {
    const old = join(tmp.dir, 'driver-470');
    buildLib({out: join(old, 'libcuda.so.470.57.02'), soname: 'libcuda.so.1', source: '#include <unistd.h>\nint cuInit(unsigned f) { return getpid() < 0; }\n'});
    symlinkSync('libcuda.so.470.57.02', join(old, 'libcuda.so.1'));
    const report = await checkLibraries({targets: [cudart], ldLibraryPath: old, exe: program});
    const [tooOld] = runtimeProblems(report);
    expect(tooOld).toMatchObject({kind: 'driver-too-old', library: 'libcuda.so.1', impact: 'library'});
    expect(tooOld!.explanation).toContain('is libcuda 470.57.02; libcudart.so.12 of CUDA 12.4 needs driver 550');
    expect(report.ok).toBe(false);
  });

  // Issue 42, item 8: the release was read from the file name, so the real 550 library named .470 was "too old".
  test('the real driver library 550.163.01 renamed libcuda.so.470.57.02: its contents say 550, so it is not too old for libcudart 12.4', async () => {
    const renamed = join(tmp.dir, 'renamed-550');
    mkdirSync(renamed, {recursive: true});
    copyFileSync(join(DRIVER, 'libcuda.so.550.163.01'), join(renamed, 'libcuda.so.470.57.02'));
    symlinkSync('libcuda.so.470.57.02', join(renamed, 'libcuda.so.1'));
    const real = run(program, {LD_LIBRARY_PATH: renamed});
    expect(real.loaded.get('libcuda.so.1')).toBe(join(renamed, 'libcuda.so.1'));
    // Not cudaErrorInsufficientDriver (35), which a driver too old for 12.4 gives.
    expect(real.stdout).not.toMatch(/^3[45] /);
    const report = await checkLibraries({targets: [cudart], ldLibraryPath: renamed, exe: program});
    expect(runtimeProblems(report).filter((p) => p.kind === 'driver-too-old')).toEqual([]);
    expect(report.ok).toBe(true);
  });

  (NO_DRIVER ? test : test.skip)('no libcuda anywhere on a machine without the driver: the real run fails with cudaErrorInsufficientDriver; check warns, and passes', async () => {
    const real = run(program);
    expect(real.stdout).toBe('35 cudaErrorInsufficientDriver');
    const report = await checkLibraries({targets: [cudart], exe: program});
    expect(report.ok).toBe(true);
    const [missing] = runtimeProblems(report);
    expect(missing).toMatchObject({kind: 'not-found', library: 'libcuda.so.1', impact: 'feature'});
    expect(missing!.summary).toBe('libcudart.so.12 dlopens libcuda.so.1 at the first CUDA call, and this machine has no NVIDIA driver to provide it');
    expect(missing!.explanation).toContain('comes only with the driver');
    expect((await checkLibraries({targets: [cudart], exe: program, strict: true})).ok).toBe(false);
  });
});

d('libnvrtc dlopens its builtins at the first compilation, searched from libnvrtc', () => {
  let tmp: TempDir;
  const nvrtc = join(RUNTIME, 'libnvrtc.so.12');
  const source = `
#include <stdio.h>
typedef struct _nvrtcProgram *nvrtcProgram;
int nvrtcCreateProgram(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
int nvrtcCompileProgram(nvrtcProgram, int, const char *const *);
const char *nvrtcGetErrorString(int);
int main(void) {
  nvrtcProgram p;
  int e = nvrtcCreateProgram(&p, "extern \\"C\\" __global__ void k(float *x) { x[0] = 1.0f; }", "k.cu", 0, 0, 0);
  if (e == 0) e = nvrtcCompileProgram(p, 0, 0);
  printf("%d %s\\n", e, nvrtcGetErrorString(e));
  return 0;
}
`;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-nvrtc-');
  });
  afterAll(() => tmp?.cleanup());

  test('a program with DT_RPATH: libnvrtc (no RUNPATH of its own) finds the builtins through the program\'s RPATH, and the compilation works', async () => {
    const program = buildLib({out: join(tmp.dir, 'rpath', 'compile'), executable: true, link: [nvrtc], rpath: RUNTIME, source});
    const real = run(program);
    expect(real.stdout).toBe('0 NVRTC_SUCCESS');
    expect(real.loaded.get('libnvrtc-builtins.so.12.4')).toBe(join(RUNTIME, 'libnvrtc-builtins.so.12.4'));
    const report = await checkLibraries({targets: [nvrtc], exe: program});
    expect(runtimeProblems(report)).toEqual([]);
    expect(runtimeEdge(report, 'libnvrtc.so.12', 'libnvrtc-builtins.so.12.4')).toMatchObject({path: real.loaded.get('libnvrtc-builtins.so.12.4'), via: 'rpath'});
  });

  test('a program with DT_RUNPATH: it applies to the program\'s own needs only, so the dlopen from libnvrtc misses the builtins, as check says', async () => {
    const program = buildLib({out: join(tmp.dir, 'runpath', 'compile'), executable: true, link: [nvrtc], runpath: RUNTIME, source});
    const real = run(program);
    expect(real.stdout).not.toMatch(/^0 /);
    expect(real.loaded.has('libnvrtc.so.12')).toBe(true);
    const report = await checkLibraries({targets: [nvrtc], exe: program});
    expect(report.ok).toBe(false);
    const [missing] = runtimeProblems(report);
    expect(missing).toMatchObject({kind: 'not-found', library: 'libnvrtc-builtins.so.12.4', impact: 'library', loadedBy: {object: nvrtc}});
    expect(missing!.summary).toBe('libnvrtc.so.12 dlopens libnvrtc-builtins.so.12.4 at the first nvrtcCompileProgram, the first JIT compilation, and the loader cannot find it');
    // The same with the directory on LD_LIBRARY_PATH: found, and the compilation works.
    expect(run(program, {LD_LIBRARY_PATH: RUNTIME}).stdout).toBe('0 NVRTC_SUCCESS');
    expect(runtimeProblems(await checkLibraries({targets: [nvrtc], exe: program, ldLibraryPath: RUNTIME}))).toEqual([]);
  });

  test('builtins of another release first on LD_LIBRARY_PATH: the real compilation fails, and check names both releases and directories', async () => {
    // DT_RUNPATH: the dlopen from libnvrtc searches LD_LIBRARY_PATH first (a DT_RPATH would come before it).
    const program = buildLib({out: join(tmp.dir, 'mixed', 'compile'), executable: true, link: [nvrtc], runpath: RUNTIME, source});
    // NVRTC 12.2's builtins, as far as NVRTC 12.4 can tell: the name it asks for, another release's entry points.
    const other = join(tmp.dir, 'cuda-12.2', 'lib64');
    buildLib({out: join(other, 'libnvrtc-builtins.so.12.4'), soname: 'libnvrtc-builtins.so.12.4',
      source: 'const char *__nvrtc_builtins__12_2_getBuiltinHeader(const char *name) { return 0; }\n'});
    const real = run(program, {LD_LIBRARY_PATH: other});
    expect(real.loaded.get('libnvrtc-builtins.so.12.4')).toBe(join(other, 'libnvrtc-builtins.so.12.4'));
    // The dlopen works; the compilation fails (issue 42, item 8: the text said the load fails).
    expect(real.stdout).toBe('7 NVRTC_ERROR_BUILTIN_OPERATION_FAILURE');
    const report = await checkLibraries({targets: [nvrtc], exe: program, ldLibraryPath: other});
    expect(report.ok).toBe(false);
    const [mixed] = runtimeProblems(report);
    expect(mixed).toMatchObject({kind: 'mixed-release', library: 'libnvrtc-builtins.so.12.4', impact: 'library'});
    expect(mixed!.summary).toContain(`libnvrtc.so.12 is 12.4 (${RUNTIME})`);
    expect(mixed!.summary).toContain(`libnvrtc-builtins.so.12.4 is 12.2 (${other})`);
    expect(mixed!.fix).toContain('unset LD_LIBRARY_PATH');
    expect(mixed!.summary).toMatch(/: nvrtcCompileProgram returns NVRTC_ERROR_BUILTIN_OPERATION_FAILURE$/);
    expect(mixed!.explanation).toContain('The dlopen itself works');
    expect(mixed!.explanation).toContain('nvrtcCompileProgram returns NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (7)');
    expect(mixed!.explanation).not.toContain('the call that loads it fails');
  });

  // Issue 42, item 8: builtins of another release beside libnvrtc itself (found through the program's DT_RPATH):
  // the fix was to take the directory out of the RPATH (\`patchelf\`), which loses libnvrtc too; it is to install the matching builtins there.
  test('builtins of another release beside libnvrtc: the real compilation fails; the fix installs the matching builtins there, relinks nothing', () => {
    const dir = join(tmp.dir, 'beside');
    mkdirSync(dir, {recursive: true});
    symlinkSync(nvrtc, join(dir, 'libnvrtc.so.12'));
    buildLib({out: join(dir, 'libnvrtc-builtins.so.12.4'), soname: 'libnvrtc-builtins.so.12.4',
      source: 'const char *__nvrtc_builtins__11_8_getBuiltinHeader(const char *name) { return 0; }\n'});
    const program = buildLib({out: join(tmp.dir, 'beside-app', 'compile'), executable: true, link: [join(dir, 'libnvrtc.so.12')], rpath: dir, source});
    const real = run(program);
    expect(real.loaded.get('libnvrtc-builtins.so.12.4')).toBe(join(dir, 'libnvrtc-builtins.so.12.4'));
    expect(real.stdout).toBe('7 NVRTC_ERROR_BUILTIN_OPERATION_FAILURE');
    return checkLibraries({targets: [join(dir, 'libnvrtc.so.12')], exe: program}).then((report) => {
      const [mixed] = runtimeProblems(report);
      expect(mixed).toMatchObject({kind: 'mixed-release', library: 'libnvrtc-builtins.so.12.4'});
      expect(mixed!.summary).toContain('libnvrtc-builtins.so.12.4 is 11.8');
      expect(mixed!.fix).toMatch(new RegExp(`^install libnvrtc-builtins\\.so\\.12\\.4 of release 12\\.4 \\(that of libnvrtc\\.so\\.12\\) in ${dir.replace(/[.]/g, '\\.')} in place of the 11\\.8 one there`));
      expect(mixed!.fix).not.toMatch(/patchelf|DT_RPATH|DT_RUNPATH/);
    });
  });
});

d('cuDNN\'s shim dlopens its parts (stand-ins with the real SONAMEs and name strings)', () => {
  let tmp: TempDir;
  let dir: string;
  let program: string;
  const parts = ['graph', 'engines_precompiled', 'engines_runtime_compiled', 'heuristic', 'ops', 'cnn', 'adv'];
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-cudnn-');
    dir = join(tmp.dir, 'nvidia', 'cudnn', 'lib');
    for (const part of parts) {
      buildLib({out: join(dir, `libcudnn_${part}.so.9.1.0`), soname: `libcudnn_${part}.so.9`, source: `int cudnn_${part}_ready(void) { return 1; }\n`});
      symlinkSync(`libcudnn_${part}.so.9.1.0`, join(dir, `libcudnn_${part}.so.9`));
    }
    // The shim loads each part by name when first asked, from its own directory ($ORIGIN), as the wheel's does.
    buildLib({out: join(dir, 'libcudnn.so.9.1.0'), soname: 'libcudnn.so.9', runpath: '$ORIGIN', extra: ['-ldl'], source: `
#include <dlfcn.h>
#include <stdio.h>
static const char *parts[] = {${parts.map((p) => `"libcudnn_${p}.so.9"`).join(', ')}};
int cudnnCreate(void) {
  int failed = 0;
  for (unsigned i = 0; i < sizeof parts / sizeof *parts; i++) {
    if (!dlopen(parts[i], RTLD_NOW)) { printf("%s\\n", dlerror()); failed++; }
  }
  return failed;
}
`});
    symlinkSync('libcudnn.so.9.1.0', join(dir, 'libcudnn.so.9'));
    program = buildLib({out: join(tmp.dir, 'train'), executable: true, link: [join(dir, 'libcudnn.so.9')], runpath: dir, source: `
int cudnnCreate(void);
int main(void) { return cudnnCreate(); }
`});
  });
  afterAll(() => tmp?.cleanup());

  test('every part present: the real dlopens work, and check follows each with the shim\'s RUNPATH', async () => {
    expect(spawnSync(program, {encoding: 'utf8'}).status).toBe(0);
    const report = await checkLibraries({targets: [join(dir, 'libcudnn.so.9')], exe: program});
    expect(runtimeProblems(report)).toEqual([]);
    const edges = report.objects.find((o) => o.path.endsWith('/libcudnn.so.9'))!.needed.filter((e) => e.dlopen);
    expect(edges.map((e) => e.name).sort()).toEqual(parts.map((p) => `libcudnn_${p}.so.9`).sort());
    expect(edges.every((e) => e.via === 'runpath')).toBe(true);
  });

  test('a part missing: the real dlopen fails with "cannot open shared object file"; check says so, and that only convolutions fail', async () => {
    renameSync(join(dir, 'libcudnn_cnn.so.9'), join(dir, 'gone'));
    try {
      const real = spawnSync(program, {encoding: 'utf8'});
      expect(real.stdout).toContain('libcudnn_cnn.so.9: cannot open shared object file');
      const report = await checkLibraries({targets: [join(dir, 'libcudnn.so.9')], exe: program});
      const problems = runtimeProblems(report);
      expect(problems.map((p) => [p.kind, p.library, p.impact, p.feature])).toEqual([['not-found', 'libcudnn_cnn.so.9', 'feature', 'convolutions']]);
      expect(report.ok).toBe(true);
    } finally {
      renameSync(join(dir, 'gone'), join(dir, 'libcudnn_cnn.so.9'));
    }
  });

  test('a part of another release in the directory: check names both versions', async () => {
    buildLib({out: join(dir, 'libcudnn_ops.so.9.3.0'), soname: 'libcudnn_ops.so.9', source: 'int cudnn_ops_ready(void) { return 3; }\n'});
    spawnSync('ln', ['-sf', 'libcudnn_ops.so.9.3.0', join(dir, 'libcudnn_ops.so.9')]);
    const report = await checkLibraries({targets: [join(dir, 'libcudnn.so.9')], exe: program});
    const [mixed] = runtimeProblems(report);
    expect(mixed).toMatchObject({kind: 'mixed-release', library: 'libcudnn_ops.so.9', impact: 'library'});
    expect(mixed!.summary).toContain('libcudnn.so.9 is 9.1.0');
    expect(mixed!.summary).toContain('libcudnn_ops.so.9 is 9.3.0');
  });
});

describeIf(HAVE_GCC, NEEDS.tool('gcc'))('pairs one release ships together (stand-ins with the real SONAMEs and file names)', () => {
  let tmp: TempDir;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-pinned-');
  });
  afterAll(() => tmp?.cleanup());

  const lt = (dir: string, version: string): string => {
    const file = buildLib({out: join(dir, `libcublasLt.so.${version}`), soname: 'libcublasLt.so.12', source: 'int cublasLtCreate(void **h) { return 0; }\n'});
    symlinkSync(`libcublasLt.so.${version}`, join(dir, 'libcublasLt.so.12'));
    return file;
  };

  test('libcublas 12.4 with the libcublasLt of 12.1 first on LD_LIBRARY_PATH: both versions and directories, and the entry to drop', async () => {
    const wheel = join(tmp.dir, 'nvidia', 'cublas', 'lib');
    const old = join(tmp.dir, 'cuda-12.1', 'lib64');
    const ownLt = lt(wheel, '12.4.5.8');
    lt(old, '12.1.3.1');
    buildLib({out: join(wheel, 'libcublas.so.12.4.5.8'), soname: 'libcublas.so.12', runpath: '$ORIGIN', link: [ownLt], source: 'int cublasLtCreate(void **); int cublasCreate_v2(void **h) { return cublasLtCreate(h); }\n'});
    symlinkSync('libcublas.so.12.4.5.8', join(wheel, 'libcublas.so.12'));
    const cublas = join(wheel, 'libcublas.so.12');
    const report = await checkLibraries({targets: [cublas], ldLibraryPath: old});
    expect(report.ok).toBe(false);
    const [mixed] = report.problems.filter((p) => p.kind === 'mixed-release');
    expect(mixed!.summary).toBe(`libcublas.so.12 is 12.4.5.8 (${wheel}) and libcublasLt.so.12 is 12.1.3.1 (${old}): one release ships them together`);
    expect(mixed!.fix).toBe(`run \`unset LD_LIBRARY_PATH\` (it only holds ${old}), so that the libcublasLt.so.12 of the same release as libcublas.so.12 is found`);
    // Its own build found first: nothing to say.
    expect((await checkLibraries({targets: [cublas]})).problems.filter((p) => p.kind === 'mixed-release')).toEqual([]);
  });
});

describe('run-time loads in the report', () => {
  test('a library of no known family loads nothing at run time', async () => {
    const report = await checkLibraries({targets: ['/lib/x86_64-linux-gnu/libc.so.6']});
    expect(report.objects.flatMap((o) => o.needed).filter((e) => e.dlopen)).toEqual([]);
  });
});
