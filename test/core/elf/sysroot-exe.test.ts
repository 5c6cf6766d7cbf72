import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, realpathSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries} from '../../../src/core/elf/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {testIf} from '../../helpers/skip.js';
import {IS_ROOT, NEEDS} from '../../helpers/capabilities.js';
import {buildLib, HAVE_GCC} from './fixtures.js';

/**
 * --exe under CUDAENV_SYSROOT (issue 37): `--exe /usr/bin/python3.13` was refused as "no such file"
 * (a host path), while LD_LIBRARY_PATH and LD_PRELOAD values are the image's paths. One rule for
 * both: an absolute --exe names the image's program, links inside the image resolve in it, and one
 * already under the image's root is taken as it is. The oracle: the program run in the image with chroot.
 */
const HOST_LDSO = '/lib64/ld-linux-x86-64.so.2';
const HOST_LIBC = '/lib/x86_64-linux-gnu/libc.so.6';
const t = testIf(HAVE_GCC && IS_ROOT && existsSync(HOST_LIBC) && process.arch === 'x64',
  !HAVE_GCC ? NEEDS.tool('gcc') : !IS_ROOT ? `${NEEDS.root} (chroot)` : 'needs a Debian-layout x86-64 glibc');

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-sysroot-exe-');
});
afterAll(() => tmp?.cleanup());

t('--exe /usr/bin/python3 names the image\'s program (through the image\'s absolute link): its DT_RPATH finds what the plugin needs, as in the image', async () => {
  const img = join(realpathSync(tmp.dir), 'img');
  // libdep.so only in /opt/py/lib, which the program's DT_RPATH names: the plugin finds it only when loaded by that program.
  const dep = buildLib({out: join(img, 'opt', 'py', 'lib', 'libdep.so'), soname: 'libdep.so', source: 'int d(void){return 0;}\n'});
  buildLib({out: join(img, 'opt', 'plug', 'libplug.so'), soname: 'libplug.so', link: [dep], source: 'int d(void); int p(void){return d();}\n'});
  mkdirSync(join(img, 'usr', 'bin'), {recursive: true});
  const program = join(img, 'usr', 'bin', 'python3.13');
  writeFileSync(`${program}.c`, '#include <dlfcn.h>\n#include <stdio.h>\nint main(int c, char **v) {\n  if (!dlopen(v[1], RTLD_NOW | RTLD_GLOBAL)) { printf("ERR %s\\n", dlerror()); return 3; }\n  printf("OK\\n");\n  return 0;\n}\n');
  expect(spawnSync('gcc', ['-o', program, `${program}.c`, '-Wl,--disable-new-dtags', '-Wl,-rpath,/opt/py/lib']).status).toBe(0);
  // Debian's layout: the absolute link (which on the host leads nowhere) and the loader and libc in the image.
  symlinkSync('/usr/bin/python3.13', join(img, 'usr', 'bin', 'python3'));
  mkdirSync(join(img, 'lib64'));
  copyFileSync(HOST_LDSO, join(img, 'lib64', 'ld-linux-x86-64.so.2'));
  mkdirSync(join(img, 'lib', 'x86_64-linux-gnu'), {recursive: true});
  copyFileSync(HOST_LIBC, join(img, 'lib', 'x86_64-linux-gnu', 'libc.so.6'));

  const real = spawnSync('chroot', [img, '/usr/bin/python3', '/opt/plug/libplug.so'], {encoding: 'utf8'});
  expect(real.stdout).toBe('OK\n');
  const plugin = join(img, 'opt', 'plug', 'libplug.so');
  const byImagePath = await checkLibraries({targets: [plugin], sysroot: img, exe: '/usr/bin/python3', ldLibraryPath: ''});
  expect(byImagePath.problems.filter((p) => p.kind === 'not-found')).toEqual([]);
  expect(byImagePath.ok).toBe(true);
  // The same program by its host path: the same answer.
  const byHostPath = await checkLibraries({targets: [plugin], sysroot: img, exe: program, ldLibraryPath: ''});
  expect(byHostPath.ok).toBe(true);
  // Without the program, libdep.so is not found (the oracle for the difference the program makes).
  const alone = spawnSync('chroot', [img, '/lib64/ld-linux-x86-64.so.2', '--list', '/opt/plug/libplug.so'], {encoding: 'utf8'});
  expect(`${alone.stdout}${alone.stderr}`).toMatch(/libdep\.so(: cannot open shared object file| => not found)/);
  expect((await checkLibraries({targets: [plugin], sysroot: img, ldLibraryPath: ''})).ok).toBe(false);
  // A program the image does not have is named as the image's path.
  await expect(checkLibraries({targets: [plugin], sysroot: img, exe: '/usr/bin/python9', ldLibraryPath: ''}))
    .rejects.toThrow(`--exe /usr/bin/python9: no such file in the image (${join(img, 'usr', 'bin', 'python9')})`);
});
