import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../../src/core/elf/index.js';
import {makeTempDir} from '../../../helpers/tmp.js';
import {testIf} from '../../../helpers/skip.js';
import {buildLib, HAVE_GCC} from '../fixtures.js';

/**
 * The headline follows the order the process loads objects in (issue 37): Python imports torch by
 * dlopening libtorch_global_deps.so first, then torch/_C, and with a 22-byte text file named
 * libcudart.so.12 first on LD_LIBRARY_PATH the real load fails at the first. `check global_deps _C
 * --exe python3` named libtorch_python (a dependency of _C) in its headline: the objects of the
 * program's start, described once, shifted the second file's count of them. Stand-ins built by
 * gcc with the same shape; the oracle is a program that dlopens its arguments in order, as Python does.
 */
const t = testIf(HAVE_GCC, 'needs gcc (apt-get install gcc)');
let tmp: {dir: string; cleanup: () => void};
let fx: {globalDeps: string; extension: string; driver: string; llp: string};

beforeAll(() => {
  tmp = makeTempDir('cudaenv-headline-');
  if (!HAVE_GCC) return;
  const root = tmp.dir;
  const cudart = buildLib({out: join(root, 'cuda', 'libcudart.so.12'), soname: 'libcudart.so.12', source: 'int cudaFree(void *p){return 0;}\n'});
  const globalDeps = buildLib({out: join(root, 'torch', 'lib', 'libtorch_global_deps.so'), link: [cudart], source: 'int cudaFree(void *); int gd(void){return cudaFree(0);}\n'});
  const python = buildLib({out: join(root, 'torch', 'lib', 'libtorch_python.so'), soname: 'libtorch_python.so', link: [cudart], source: 'int cudaFree(void *); int tp(void){return cudaFree(0);}\n'});
  const extension = buildLib({out: join(root, 'torch', '_C.so'), link: [python], runpath: join(root, 'torch', 'lib'), source: 'int tp(void); int PyInit__C(void){return tp();}\n'});
  // The 22-byte text file first on LD_LIBRARY_PATH; the real libcudart is found by the cache's stand-in: a later entry.
  mkdirSync(join(root, 'junk'));
  writeFileSync(join(root, 'junk', 'libcudart.so.12'), 'this is not a library\n');
  const driver = join(root, 'python');
  writeFileSync(`${driver}.c`, '#include <dlfcn.h>\n#include <stdio.h>\nint main(int c, char **v) {\n  for (int i = 1; i < c; i++)\n' +
    '    if (!dlopen(v[i], RTLD_NOW | RTLD_GLOBAL)) { printf("ERR %s\\n", dlerror()); return 3; }\n  printf("OK\\n");\n  return 0;\n}\n');
  const cc = spawnSync('gcc', ['-o', driver, `${driver}.c`], {encoding: 'utf8'});
  if (cc.status !== 0) throw new Error(cc.stderr);
  fx = {globalDeps, extension, driver, llp: `${join(root, 'junk')}:${join(root, 'cuda')}`};
});
afterAll(() => tmp?.cleanup());

t('the headline names the first file the program loads, where the real load fails', async () => {
  const real = spawnSync(fx.driver, [fx.globalDeps, fx.extension], {encoding: 'utf8', env: {...process.env, LD_LIBRARY_PATH: fx.llp}});
  expect(real.stdout).toBe(`ERR ${join(tmp.dir, 'junk', 'libcudart.so.12')}: file too short\n`);
  // The real load stops at the first dlopen: libtorch_global_deps.so's own need.
  const alone = spawnSync(fx.driver, [fx.extension], {encoding: 'utf8', env: {...process.env, LD_LIBRARY_PATH: fx.llp}});
  expect(alone.stdout).toMatch(/^ERR .*file too short/);
  const report = await checkLibraries({targets: [fx.globalDeps, fx.extension], exe: fx.driver, ldLibraryPath: fx.llp});
  const stops = report.problems.filter((p) => p.kind === 'not-found');
  expect(stops.map((p) => p.object)).toEqual([fx.globalDeps, join(tmp.dir, 'torch', 'lib', 'libtorch_python.so')]);
  expect(firstProblemLine(report)).toMatch(/^libtorch_global_deps\.so needs libcudart\.so\.12, and the loader stops at .*junk\/libcudart\.so\.12/);
  // Named the other way round, the process loads _C first: the headline follows.
  const reversed = await checkLibraries({targets: [fx.extension, fx.globalDeps], exe: fx.driver, ldLibraryPath: fx.llp});
  expect(firstProblemLine(reversed)).toMatch(/^libtorch_python\.so needs libcudart\.so\.12/);
});
