import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, readdirSync, realpathSync, statSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries} from '../../../../src/core/elf/index.js';
import {formatProblems} from '../../../../src/core/elf/explain/format-report.js';
import {SETTLE_MS} from '../../../../src/core/elf/cache/verdict-cache.js';
import {makeTempDir, type TempDir} from '../../../helpers/tmp.js';
import {testIf} from '../../../helpers/skip.js';
import {buildLib, HAVE_GCC, HAVE_PYTHON} from '../fixtures.js';

/**
 * Issue 42, item 5: one object per file, as ld.so keys objects by device and inode. Under a merged
 * /usr (`lib -> usr/lib`, Debian since 12) a library named by its usr/lib path and reached by
 * another through lib/ is one file: the real loader maps it once (python's ctypes gets one handle
 * for both names), and check reports it once, its error once. gcc-built stand-ins: only the
 * layout (two names of one file) matters.
 */
const t = testIf(HAVE_GCC && HAVE_PYTHON, 'needs gcc and python3');

let tmp: TempDir;
let usrlib: string;
let lib: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-one-object-');
  const root = realpathSync(tmp.dir);
  usrlib = join(root, 'usr', 'lib');
  lib = join(root, 'lib');
  mkdirSync(usrlib, {recursive: true});
  symlinkSync('usr/lib', lib);
  if (!HAVE_GCC) return;
  const gone = buildLib({out: join(root, 'build', 'libgone.so.1'), soname: 'libgone.so.1', source: 'int gone(void){return 0;}\n'});
  // libA needs a library that is not there (an error of libA); libB reaches libA through lib/ (its RUNPATH).
  const a = buildLib({out: join(usrlib, 'libA.so.1'), soname: 'libA.so.1', link: [gone], source: 'int gone(void); int a(void){return gone();}\n'});
  buildLib({out: join(usrlib, 'libB.so.1'), soname: 'libB.so.1', link: [a], runpath: lib, source: 'int a(void); int b(void){return a();}\n'});
  buildLib({out: join(usrlib, 'libgood.so.1'), soname: 'libgood.so.1', source: 'int good(void){return 0;}\n'});
  buildLib({out: join(usrlib, 'libuser.so.1'), soname: 'libuser.so.1', link: [join(usrlib, 'libgood.so.1')], runpath: lib, source: 'int good(void); int u(void){return good();}\n'});
  spawnSync('rm', ['-rf', join(root, 'build')]);
});
afterAll(() => tmp?.cleanup());

t('the real loader maps a file named by two paths once: one handle', () => {
  const r = spawnSync('python3', ['-c', 'import ctypes, sys\nprint(ctypes.CDLL(sys.argv[1])._handle == ctypes.CDLL(sys.argv[2])._handle)', join(usrlib, 'libgood.so.1'), join(lib, 'libgood.so.1')], {encoding: 'utf8'});
  expect(r.stdout.trim()).toBe('True');
});

t('named by usr/lib and reached through lib/: one object, under the name given, and its error once', async () => {
  const good = await checkLibraries({targets: [join(usrlib, 'libgood.so.1'), join(usrlib, 'libuser.so.1')], ldLibraryPath: ''});
  expect(good.objects.map((o) => o.path).filter((p) => /lib(good|user)\.so\.1$/.test(p)).sort()).toEqual([join(usrlib, 'libgood.so.1'), join(usrlib, 'libuser.so.1')]);
  // libuser's edge leads to the object kept, under its given name.
  expect(good.objects.find((o) => o.path === join(usrlib, 'libuser.so.1'))!.needed.find((e) => e.name === 'libgood.so.1')!.path).toBe(join(usrlib, 'libgood.so.1'));

  const bad = await checkLibraries({targets: [join(usrlib, 'libA.so.1'), join(usrlib, 'libB.so.1')], ldLibraryPath: ''});
  const missing = bad.problems.filter((p) => p.kind === 'not-found' && p.library === 'libgone.so.1');
  expect(missing.map((p) => p.object)).toEqual([join(usrlib, 'libA.so.1')]);
  expect(bad.objects.filter((o) => o.path.endsWith('/libA.so.1'))).toHaveLength(1);
  expect(formatProblems(bad).filter((l) => l.startsWith('error: not found:'))).toHaveLength(1);
});

t('answered from the verdict cache, the same one object per file: the identities the cache found unchanged key them', async () => {
  // Results resting on files younger than SETTLE_MS are not kept (the ctime counts: utimes cannot age a file).
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 200));
  const cacheDir = join(tmp.dir, 'cache');
  const options = {targets: [join(usrlib, 'libgood.so.1'), join(usrlib, 'libuser.so.1')], ldLibraryPath: '', cacheDir};
  const first = await checkLibraries(options);
  const files = () => readdirSync(cacheDir).filter((n) => n.endsWith('.json')).map((n) => {
    const st = statSync(join(cacheDir, n));
    return `${n}:${st.ino}:${st.mtimeMs}`;
  });
  const kept = files();
  expect(kept).toHaveLength(1);
  const cached = await checkLibraries(options);
  // Every file was answered from the cache: it had nothing new to write.
  expect(files()).toEqual(kept);
  expect(cached).toEqual(first);
  // libuser's process reached libgood through lib/: one object, under the name given.
  expect(cached.objects.map((o) => o.path).filter((p) => /lib(good|user)\.so\.1$/.test(p)).sort()).toEqual([join(usrlib, 'libgood.so.1'), join(usrlib, 'libuser.so.1')]);
  expect(cached.objects.find((o) => o.path === join(usrlib, 'libuser.so.1'))!.needed.find((e) => e.name === 'libgood.so.1')!.path).toBe(join(usrlib, 'libgood.so.1'));
}, 30_000);
