import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir, type TempDir} from '../helpers/tmp.js';
import {testIf} from '../helpers/skip.js';
import {DOWNLOADED, have, NEEDS} from '../helpers/capabilities.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {buildLib, HAVE_GCC, HAVE_LDD, lddVerdict} from '../core/elf/fixtures.js';

/**
 * Issue 42, items 3 and 4: one verdict on every surface. On a machine without an NVIDIA kernel
 * module, a toolkit whose libcudart.so.12 dlopens a libcuda.so.1 nothing provides (a warning) and
 * whose libcusparse.so.12 needs a libnvJitLink.so.12 that is not there (an error): the one line
 * after a switch and the last line of `check` name the error, never the warning before it. The
 * libraries are Debian trixie's real libcudart12 and libcusparse12 (`ldd -r` is the oracle of
 * what is missing); the libcuda.so.1 of a DT_NEEDED entry is a gcc-built stand-in (only its
 * name matters), and the machine with a kernel module is an image whose /proc says so.
 */
const LIB = join(DOWNLOADED, 'trixie', 'usr', 'lib', 'x86_64-linux-gnu');
const REAL = ['libcudart.so.12', 'libcusparse.so.12'].every((n) => existsSync(join(LIB, n)));
const NO_MODULE = !existsSync('/proc/driver/nvidia/version') && !existsSync('/sys/module/nvidia');
const NO_LIBCUDA = !/\blibcuda\.so\.1\b/.test(spawnSync('ldconfig', ['-p'], {encoding: 'utf8'}).stdout ?? '');
const NO_JITLINK = !/\blibnvJitLink\.so\.12\b/.test(spawnSync('ldconfig', ['-p'], {encoding: 'utf8'}).stdout ?? '');
const noDriverReason = !NO_MODULE ? 'optional: this machine runs an NVIDIA kernel module: the case needs one without'
  : !NO_LIBCUDA ? 'optional: this machine has libcuda.so.1 in its loader cache' : '';
const real = testIf(REAL && HAVE_LDD && have('script') && NO_MODULE && NO_LIBCUDA && NO_JITLINK,
  !REAL ? NEEDS.realCudaLibs : !HAVE_LDD || !have('script') ? 'needs ldd and script (util-linux)' : noDriverReason || 'optional: this machine has libnvJitLink.so.12 in its loader cache');
const built = testIf(HAVE_GCC && HAVE_LDD && NO_MODULE && NO_LIBCUDA, !HAVE_GCC ? 'needs gcc' : !HAVE_LDD ? 'needs ldd' : noDriverReason);
const built2 = testIf(HAVE_GCC, 'needs gcc');

let tmp: TempDir;
let store: string;
let toolkit: string;
let caffe2: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-verdict-');
  store = join(tmp.dir, 'store');
  toolkit = makeFakeToolkit(join(tmp.dir, 'cuda-12.4'), {version: '12.4.1', cudartVersion: ''});
  if (REAL) for (const n of ['libcudart.so.12', 'libcusparse.so.12']) symlinkSync(join(LIB, n), join(toolkit, 'lib64', n));
  if (HAVE_GCC) {
    // PyTorch's libcaffe2_nvrtc.so: DT_NEEDED libcuda.so.1 (linked against one that is then removed).
    const build = join(tmp.dir, 'build');
    const cuda = buildLib({out: join(build, 'libcuda.so.1'), soname: 'libcuda.so.1', extra: ['-nostdlib'], source: 'int cuInit(unsigned f){return 0;}\n'});
    caffe2 = buildLib({out: join(tmp.dir, 'torch', 'lib', 'libcaffe2_nvrtc.so'), link: [cuda], extra: ['-nostdlib'], source: 'int cuInit(unsigned); int nvrtc_shim(void){return cuInit(0);}\n'});
    spawnSync('rm', ['-rf', build]);
  }
});
afterAll(() => tmp?.cleanup());

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const e = cliEnv(store, {PATH: '/usr/bin:/bin', ...extra});
  delete e.LD_LIBRARY_PATH;
  delete e.LD_PRELOAD;
  return e;
}

real('item 3: check\'s last line and the line after a switch name the error (libnvJitLink.so.12 missing), not the libcuda.so.1 warning before it', () => {
  const lib64 = join(toolkit, 'lib64');
  // The oracle: the real loader finds no libnvJitLink.so.12 for libcusparse, and no libcuda.so.1.
  expect(lddVerdict(join(lib64, 'libcusparse.so.12'), '').libs).toContain('libnvJitLink.so.12 => not found');
  const r = runCli(['check', lib64, '--ld-library-path', ''], {env: env()});
  expect(r.status).toBe(1);
  const lines = r.stdout.trim().split('\n');
  // The warning comes first in the loader's order, and stays a warning.
  expect(lines[0]).toMatch(/^warning: not found: libcudart\.so\.12 dlopens libcuda\.so\.1 at the first CUDA call, and this machine has no NVIDIA driver/);
  expect(r.stdout).toContain('error: not found: libcusparse.so.12 needs libnvJitLink.so.12, which the loader cannot find');
  expect(lines.at(-1)).toMatch(/^libcusparse\.so\.12 needs libnvJitLink\.so\.12, which the loader cannot find; /);
  // The same line after a switch (exec at a terminal prints it).
  expect(runCli(['add', toolkit], {env: env()}).status).toBe(0);
  const tty = spawnSync('script', ['-qec', `${process.execPath} ${CLI} exec --cuda 12.4 -- true`, '/dev/null'], {env: env(), encoding: 'utf8'});
  expect(tty.status).toBe(0);
  expect(tty.stdout.replaceAll('\r', '').trim()).toMatch(/^cudaenv: CUDA 12\.4\.1: libcusparse\.so\.12 needs libnvJitLink\.so\.12, which the loader cannot find; /);
});

real('item 4: without a kernel module the libcuda.so.1 dlopen is a warning on its edge and its problem alike in --json, and check passes unless --strict', () => {
  const cudart = join(toolkit, 'lib64', 'libcudart.so.12');
  const r = runCli(['check', cudart, '--ld-library-path', '', '--json'], {env: env()});
  expect(r.status).toBe(0);
  const report = JSON.parse(r.stdout) as {ok: boolean; objects: Array<{path: string; needed: Array<{name: string; edge: string; dlopen?: {impact: string}}>}>; problems: Array<{library: string; impact: string; edge: string; feature?: string}>};
  const edge = report.objects.find((o) => o.path === cudart)!.needed.find((e) => e.name === 'libcuda.so.1')!;
  const problem = report.problems.find((p) => p.library === 'libcuda.so.1')!;
  expect(edge).toMatchObject({edge: 'dlopen', dlopen: {impact: 'feature'}});
  expect(problem).toMatchObject({edge: 'dlopen', impact: 'feature'});
  expect(problem.feature).toMatch(/no NVIDIA driver/);
  expect(runCli(['check', cudart, '--ld-library-path', '', '--strict'], {env: env()}).status).toBe(1);
});

built('item 4: libcaffe2_nvrtc.so\'s DT_NEEDED libcuda.so.1 with no kernel module: a warning that says nothing needs fixing on a build host; exit 0, 1 with --strict', () => {
  expect(lddVerdict(caffe2, '').libs).toContain('libcuda.so.1 => not found');
  const r = runCli(['check', caffe2, '--ld-library-path', ''], {env: env()});
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(/^warning: not found: libcaffe2_nvrtc\.so needs libcuda\.so\.1, which the loader cannot find/);
  expect(r.stdout).toContain('on a build host without a GPU, nothing needs fixing');
  expect(r.stdout).not.toMatch(/^error:/m);
  expect(r.stdout.trim().split('\n').at(-1)).toMatch(/^all 1 library resolves; but libcaffe2_nvrtc\.so needs libcuda\.so\.1, which the loader cannot find$/);
  // cuInit is libcuda.so.1's (undefined only because it is missing: ldd -r with it finds it): said once, under that library, and in --json too.
  expect(r.stdout).toContain(`warning: 1 undefined symbol of ${caffe2} would come from libcuda.so.1, which is not found (see above)`);
  expect(r.stdout).not.toContain('left to the loading program');
  const strict = runCli(['check', caffe2, '--ld-library-path', '', '--strict'], {env: env()});
  expect(strict.status).toBe(1);
  expect(strict.stdout).toMatch(/^error: not found: libcaffe2_nvrtc\.so needs libcuda\.so\.1/);
  // In --json the DT_NEEDED edge carries its problem's impact too, as a dlopen edge does.
  const json = JSON.parse(runCli(['check', caffe2, '--ld-library-path', '', '--json'], {env: env()}).stdout) as {objects: Array<{path: string; needed: Array<{name: string; edge: string; impact?: string}>}>; problems: Array<{object: string; library: string | null; impact?: string}>};
  const edge = json.objects.find((o) => o.path === caffe2)!.needed.find((e) => e.name === 'libcuda.so.1')!;
  expect(edge).toMatchObject({edge: 'needed', impact: 'feature'});
  expect(json.problems.find((p) => p.library === 'libcuda.so.1')).toMatchObject({impact: 'feature'});
  for (const o of json.objects) for (const e of o.needed) expect(['library', 'feature']).toContain(e.impact);
  expect(json.problems.filter((p) => p.library === null)).toEqual([]);
  expect(json.problems.find((p) => (p as {symbol?: string}).symbol === 'cuInit')).toMatchObject({library: 'libcuda.so.1', impact: 'feature', kind: 'undefined-symbol'});
});

built2('item 4: with a kernel module loaded (an image whose /proc/driver/nvidia/version, or only /sys/module/nvidia, says so) the same libcuda.so.1 is an error', () => {
  for (const proc of [true, false]) {
    const img = join(tmp.dir, proc ? 'img-proc' : 'img-sys');
    if (proc) {
      mkdirSync(join(img, 'proc', 'driver', 'nvidia'), {recursive: true});
      writeFileSync(join(img, 'proc', 'driver', 'nvidia', 'version'), 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.163.01  Tue Apr  8 12:00:00 UTC 2025\n');
    } else {
      mkdirSync(join(img, 'sys', 'module', 'nvidia'), {recursive: true});
    }
    mkdirSync(join(img, 'opt', 'torch'), {recursive: true});
    spawnSync('cp', [caffe2, join(img, 'opt', 'torch', 'libcaffe2_nvrtc.so')]);
    const r = runCli(['check', join(img, 'opt', 'torch', 'libcaffe2_nvrtc.so'), '--ld-library-path', '', '--no-cache'], {env: env({CUDAENV_SYSROOT: img})});
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^error: not found: libcaffe2_nvrtc\.so needs libcuda\.so\.1/);
    expect(r.stdout).not.toContain('nothing needs fixing');
    if (proc) expect(r.stdout).toContain('install the driver\'s user-space libraries of 550.163.01');
    else expect(r.stdout).toContain('`modinfo nvidia` names its version');
  }
});
