import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, realpathSync, truncateSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries} from '../../../../src/core/elf/index.js';
import {makeTempDir} from '../../../helpers/tmp.js';
import {testIf} from '../../../helpers/skip.js';
import {IS_ROOT, NEEDS} from '../../../helpers/capabilities.js';
import {buildLib, HAVE_GCC} from '../fixtures.js';

/**
 * The cause's file (issue 37): an old libcudnn.so.9 put first in ld.so.cache by
 * /etc/ld.so.conf.d/00-cudnn.conf is found and reported, and the fix names that file, the one
 * thing to change. A system image (CUDAENV_SYSROOT) with its ld.so.cache written by ldconfig; the
 * oracle is the host's ld.so copied into it and run there with chroot, before and after the fix.
 */
const HOST_LDSO = '/lib64/ld-linux-x86-64.so.2';
const HOST_LIBC = '/lib/x86_64-linux-gnu/libc.so.6';
const LDCONFIG = ['/usr/sbin/ldconfig', '/sbin/ldconfig'].find((p) => existsSync(p));
const t = testIf(HAVE_GCC && IS_ROOT && LDCONFIG !== undefined && existsSync(HOST_LIBC) && process.arch === 'x64',
  !HAVE_GCC ? NEEDS.tool('gcc') : !IS_ROOT ? `${NEEDS.root} (chroot)` : LDCONFIG === undefined ? NEEDS.tool('ldconfig', 'libc-bin') : 'needs a Debian-layout x86-64 glibc');

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-cache-conf-');
});
afterAll(() => tmp?.cleanup());

/**
 * What the image's loader says in `ldd -r`'s trace mode, set by the host's env copied into the image
 * (the variables given to chroot would trace chroot itself).
 */
function realLoader(img: string, lib: string): string {
  const r = spawnSync('chroot', [img, '/usr/bin/env', 'LD_TRACE_LOADED_OBJECTS=1', 'LD_WARN=yes', 'LD_BIND_NOW=yes', '/lib64/ld-linux-x86-64.so.2', lib],
    {encoding: 'utf8', env: {PATH: '/usr/sbin:/usr/bin:/sbin:/bin'}});
  return `${r.stdout}${r.stderr}`;
}

t('an old libcudnn.so.9 first in ld.so.cache through 00-cudnn.conf: the fix names that file and ldconfig, and applied, the load works', async () => {
  const img = join(realpathSync(tmp.dir), 'img');
  const multiarch = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
  const good = buildLib({out: join(multiarch, 'libcudnn.so.9'), soname: 'libcudnn.so.9', source: 'int cudnnCreate(void){return 0;}\n',
    versionScript: 'libcudnn.so.9 { global: cudnn*; local: *; };\n', extra: ['-nostdlib']});
  // Another build under the same name, without the version node the references carry.
  buildLib({out: join(img, 'opt', 'cudnn', 'lib', 'libcudnn.so.9'), soname: 'libcudnn.so.9', source: 'int cudnnCreate(void){return 1;}\n',
    versionScript: 'libcudnn.so.8 { global: cudnn*; local: *; };\n', extra: ['-nostdlib']});
  const app = buildLib({out: join(img, 'opt', 'app', 'libapp.so'), soname: 'libapp.so', link: [good], source: 'int cudnnCreate(void); int f(void){return cudnnCreate();}\n', extra: ['-nostdlib']});
  mkdirSync(join(img, 'lib64'));
  copyFileSync(HOST_LDSO, join(img, 'lib64', 'ld-linux-x86-64.so.2'));
  copyFileSync(HOST_LIBC, join(multiarch, 'libc.so.6'));
  mkdirSync(join(img, 'usr', 'bin'));
  copyFileSync('/usr/bin/env', join(img, 'usr', 'bin', 'env'));
  spawnSync('chmod', ['+x', join(img, 'usr', 'bin', 'env')]);
  mkdirSync(join(img, 'etc', 'ld.so.conf.d'), {recursive: true});
  writeFileSync(join(img, 'etc', 'ld.so.conf'), 'include /etc/ld.so.conf.d/*.conf\n');
  const conf = join(img, 'etc', 'ld.so.conf.d', '00-cudnn.conf');
  writeFileSync(conf, '/opt/cudnn/lib\n');
  writeFileSync(join(img, 'etc', 'ld.so.conf.d', 'x86_64-linux-gnu.conf'), '/usr/lib/x86_64-linux-gnu\n');
  expect(spawnSync(LDCONFIG!, ['-r', img]).status).toBe(0);

  const before = realLoader(img, '/opt/app/libapp.so');
  expect(before).toContain('libcudnn.so.9 => /opt/cudnn/lib/libcudnn.so.9');
  expect(before).toContain('undefined symbol: cudnnCreate, version libcudnn.so.9\t(/opt/app/libapp.so)');
  const report = await checkLibraries({targets: [app], sysroot: img, ldLibraryPath: ''});
  const p = report.problems.find((x) => x.kind === 'undefined-symbol')!;
  expect(p.symbol).toBe('cudnnCreate');
  expect(p.chosen).toBe(`${join(img, 'opt', 'cudnn', 'lib', 'libcudnn.so.9')} (ld.so.cache (${join(img, 'etc', 'ld.so.cache')}))`);
  expect(p.fix).toBe(`remove /opt/cudnn/lib from ${conf} and run \`sudo ldconfig -r ${img}\`, so that ${good} is found`);

  // The fix, applied: the real loader and the check agree that it loads.
  writeFileSync(conf, '');
  expect(spawnSync(LDCONFIG!, ['-r', img]).status).toBe(0);
  const after = realLoader(img, '/opt/app/libapp.so');
  expect(after).toContain('libcudnn.so.9 => /usr/lib/x86_64-linux-gnu/libcudnn.so.9');
  expect(after).not.toMatch(/not found/);
  expect((await checkLibraries({targets: [app], sysroot: img, ldLibraryPath: ''})).ok).toBe(true);
});

t('a libcudnn.so.9 cut short after ldconfig listed it (an interrupted copy): the loader stops there, and the fix names 00-cudnn.conf too', async () => {
  const img = join(realpathSync(tmp.dir), 'img2');
  const multiarch = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
  const good = buildLib({out: join(multiarch, 'libcudnn.so.9'), soname: 'libcudnn.so.9', source: 'int cudnnCreate(void){return 0;}\n', extra: ['-nostdlib']});
  const bad = buildLib({out: join(img, 'opt', 'cudnn', 'lib', 'libcudnn.so.9'), soname: 'libcudnn.so.9', source: 'int cudnnCreate(void){return 0;}\n', extra: ['-nostdlib']});
  const app = buildLib({out: join(img, 'opt', 'app', 'libapp.so'), soname: 'libapp.so', link: [good], source: 'int cudnnCreate(void); int f(void){return cudnnCreate();}\n', extra: ['-nostdlib']});
  mkdirSync(join(img, 'lib64'));
  copyFileSync(HOST_LDSO, join(img, 'lib64', 'ld-linux-x86-64.so.2'));
  copyFileSync(HOST_LIBC, join(multiarch, 'libc.so.6'));
  mkdirSync(join(img, 'usr', 'bin'));
  copyFileSync('/usr/bin/env', join(img, 'usr', 'bin', 'env'));
  spawnSync('chmod', ['+x', join(img, 'usr', 'bin', 'env')]);
  mkdirSync(join(img, 'etc', 'ld.so.conf.d'), {recursive: true});
  writeFileSync(join(img, 'etc', 'ld.so.conf'), 'include /etc/ld.so.conf.d/*.conf\n');
  const conf = join(img, 'etc', 'ld.so.conf.d', '00-cudnn.conf');
  writeFileSync(conf, '/opt/cudnn/lib\n');
  writeFileSync(join(img, 'etc', 'ld.so.conf.d', 'x86_64-linux-gnu.conf'), '/usr/lib/x86_64-linux-gnu\n');
  expect(spawnSync(LDCONFIG!, ['-r', img]).status).toBe(0);
  // ldconfig refuses a truncated file: it is cut short (inside its headers) after the cache lists it.
  truncateSync(bad, 100);
  expect(realLoader(img, '/opt/app/libapp.so')).toContain('error while loading shared libraries: /opt/cudnn/lib/libcudnn.so.9: cannot read file data');
  const report = await checkLibraries({targets: [app], sysroot: img, ldLibraryPath: ''});
  const p = report.problems.find((x) => x.kind === 'not-found')!;
  // The same file the real loader stops at (the model words why in its own terms).
  expect(p.summary).toContain(`libapp.so needs libcudnn.so.9, and the loader stops at ${bad} with`);
  expect(p.fix).toMatch(new RegExp(`^remove /opt/cudnn/lib from ${conf.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} and run \`sudo ldconfig -r `));
});
