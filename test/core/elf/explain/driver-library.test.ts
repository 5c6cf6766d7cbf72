import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine, type Problem} from '../../../../src/core/elf/index.js';
import {formatProblems} from '../../../../src/core/elf/explain/format-report.js';
import {makeTempDir} from '../../../helpers/tmp.js';
import {testIf} from '../../../helpers/skip.js';
import {buildLib, HAVE_GCC, HAVE_LDD, lddVerdict} from '../fixtures.js';

/**
 * libcuda.so.1 as a DT_NEEDED entry nothing provides (issue 37): PyTorch's libcaffe2_nvrtc.so on a
 * machine without the NVIDIA driver. `ldd -r` says "libcuda.so.1 => not found", and so does check;
 * its fix must say that only the driver brings libcuda.so.1 (no toolkit or wheel), and that torch
 * does not load this library at import. The libraries are built here with the real names.
 */
const NO_LIBCUDA = !/\blibcuda\.so\.1\b/.test(spawnSync('ldconfig', ['-p'], {encoding: 'utf8'}).stdout ?? '');
const t = testIf(HAVE_GCC && HAVE_LDD && NO_LIBCUDA, !NO_LIBCUDA ? 'optional: this machine has libcuda.so.1 (the NVIDIA driver): the test needs one without' : 'needs gcc and ldd');

let tmp: {dir: string; cleanup: () => void};
let caffe2: string;
let mixed: string;
let driverDir: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-driver-lib-');
  if (!HAVE_GCC) return;
  // Linked against a libcuda.so.1 that is then removed: DT_NEEDED libcuda.so.1, as torch's.
  const stub = buildLib({out: join(tmp.dir, 'build', 'libcuda.so.1'), soname: 'libcuda.so.1', source: 'int cuInit(unsigned f){return 0;}\n'});
  caffe2 = buildLib({out: join(tmp.dir, 'torch', 'lib', 'libcaffe2_nvrtc.so'), link: [stub], source: 'int cuInit(unsigned); int nvrtc_shim(void){return cuInit(0);}\n'});
  rmSync(join(tmp.dir, 'build'), {recursive: true});
  // The same shape with two driver calls and one symbol of the loading program (h); a stand-in of
  // the driver's library is kept apart, only for the oracle: with it the loader resolves every cu*.
  driverDir = join(tmp.dir, 'driver');
  // A stand-in of the driver's library: like it (and unlike the toolkit's stub, which imports nothing),
  // it needs the C library.
  const cuda = buildLib({out: join(driverDir, 'libcuda.so.1'), soname: 'libcuda.so.1',
    source: 'char *getenv(const char *);\nint cuInit(unsigned f){return getenv("CUDA_VISIBLE_DEVICES") != 0;}\nint cuDriverGetVersion(int *v){*v = 12040; return 0;}\n'});
  mixed = buildLib({out: join(tmp.dir, 'mixed', 'libcaffe2_nvrtc.so'), link: [cuda],
    source: 'int cuInit(unsigned); int cuDriverGetVersion(int *); int h(void);\nint shim(void){int v; return cuInit(0) + cuDriverGetVersion(&v) + h();}\n'});
});
afterAll(() => tmp?.cleanup());

const notFound = (problems: Problem[]) => problems.find((p) => p.kind === 'not-found' && p.library === 'libcuda.so.1');

t('no driver: libcaffe2_nvrtc.so needs libcuda.so.1, as ldd -r says; the fix names the driver and says import torch works', async () => {
  expect(lddVerdict(caffe2).libs).toContain('libcuda.so.1 => not found');
  const report = await checkLibraries({targets: [caffe2], ldLibraryPath: ''});
  // No kernel module here (NO_LIBCUDA; the CI machine has none): a warning that fails only with strict (issue 42, item 4).
  expect(report.ok).toBe(!existsSync('/proc/driver/nvidia/version') && !existsSync('/sys/module/nvidia'));
  expect((await checkLibraries({targets: [caffe2], ldLibraryPath: '', strict: true})).ok).toBe(false);
  const p = notFound(report.problems)!;
  expect(p.summary).toBe('libcaffe2_nvrtc.so needs libcuda.so.1, which the loader cannot find');
  expect(p.explanation).toMatch(/libcuda\.so\.1 is the NVIDIA driver's own library: it comes only with the driver/);
  expect(p.explanation).toMatch(/never with a CUDA toolkit, a cudaenv version or a pip wheel/);
  expect(p.explanation).toMatch(/`import torch` works without the driver/);
  expect(p.fix).toMatch(/^install the NVIDIA driver/);
  expect(p.fix).not.toMatch(/a package that provides/);
});

t('a kernel module without its libcuda.so.1 (a system image whose /proc says 550.163.01): the fix names that release', async () => {
  const img = join(tmp.dir, 'img');
  mkdirSync(join(img, 'proc', 'driver', 'nvidia'), {recursive: true});
  mkdirSync(join(img, 'usr', 'lib', 'x86_64-linux-gnu'), {recursive: true});
  writeFileSync(join(img, 'proc', 'driver', 'nvidia', 'version'),
    'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.163.01  Tue Apr  8 12:00:00 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n');
  // libcaffe2_nvrtc.so itself, with its DT_NEEDED libcuda.so.1, inside the image.
  const lib = join(img, 'opt', 'torch', 'libcaffe2_nvrtc.so');
  mkdirSync(join(img, 'opt', 'torch'), {recursive: true});
  copyFileSync(caffe2, lib);
  const report = await checkLibraries({targets: [lib], sysroot: img, ldLibraryPath: ''});
  const p = notFound(report.problems)!;
  // A kernel module is loaded: an error (issue 42, item 4).
  expect(p.impact).toBeUndefined();
  expect(report.ok).toBe(false);
  expect(p.explanation).toMatch(/The NVIDIA kernel module 550\.163\.01 is loaded, but its libcuda\.so\.1 is in none of those directories/);
  expect(p.fix).toMatch(/^install the driver's user-space libraries of 550\.163\.01/);
});

t('no driver: the cu* symbols libcuda.so.1 would define go with its not-found, not among those left to the loading program (ldd -r with a stand-in says which are)', async () => {
  // The oracle: without libcuda.so.1 the loader leaves cuInit, cuDriverGetVersion and h undefined;
  // with one, only h: the program's.
  expect(lddVerdict(mixed, '').symbols.sort()).toEqual([`cuDriverGetVersion@ ${mixed}`, `cuInit@ ${mixed}`, `h@ ${mixed}`]);
  const withDriver = lddVerdict(mixed, driverDir).symbols;
  expect(withDriver).toEqual([`h@ ${mixed}`]);
  const report = await checkLibraries({targets: [mixed], ldLibraryPath: ''});
  const left = report.problems.filter((p) => p.kind === 'unversioned-undefined-symbol').map((p) => `${p.symbol}@ ${p.object}`);
  expect(left).toEqual(withDriver);
  // The others are libcuda.so.1's, carrying its not-found's impact (a warning without a kernel module).
  const fromDriver = report.problems.filter((p) => p.kind === 'undefined-symbol' && p.library === 'libcuda.so.1');
  expect(fromDriver.map((p) => p.symbol).sort()).toEqual(['cuDriverGetVersion', 'cuInit']);
  for (const p of fromDriver) expect(p.impact).toBe(notFound(report.problems)!.impact);
  // The text says so once, under the missing library, and counts only h as left to the program.
  const text = formatProblems(report);
  expect(text).toContain(`${report.ok ? 'warning' : 'error'}: 2 undefined symbols of ${mixed} would come from libcuda.so.1, which is not found (see above)`);
  expect(text).toContain(`note: ${mixed} references 1 unversioned symbol nothing loaded defines: h`);
  expect(text.join('\n')).not.toMatch(/unversioned symbols? nothing loaded defines: .*cuInit/);
  if (report.ok) expect(firstProblemLine(report)).toMatch(/^all 1 library resolves \(1 unversioned undefined symbol left to the loading program\); but /);
  // With the driver's library found, the model agrees with the loader too.
  const found = await checkLibraries({targets: [mixed], ldLibraryPath: driverDir});
  expect(found.problems.map((p) => `${p.kind} ${p.symbol}`)).toEqual(['unversioned-undefined-symbol h']);
});
