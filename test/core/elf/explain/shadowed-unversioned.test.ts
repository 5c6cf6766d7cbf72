import {afterAll, beforeAll, expect} from '@jest/globals';
import {join} from 'node:path';
import {checkLibraries} from '../../../../src/core/elf/index.js';
import {makeTempDir, type TempDir} from '../../../helpers/tmp.js';
import {testIf} from '../../../helpers/skip.js';
import {buildLib, ctypesLoad, HAVE_GCC, HAVE_LDD, HAVE_PYTHON, lddVerdict} from '../fixtures.js';

/**
 * Issue 42, item 7: an object whose DT_RUNPATH copy of libX.so.1 defines f, with an older
 * libX.so.1 lacking f first on LD_LIBRARY_PATH. The real dlopen (RTLD_NOW, through python's
 * ctypes) and `ldd -r` fail with "undefined symbol: f"; check said "left to the loading program"
 * and passed. The libraries are gcc-built stand-ins: only their shape (names, RUNPATH, which
 * symbols each defines, no symbol versions) matters.
 */
const t = testIf(HAVE_GCC && HAVE_LDD && HAVE_PYTHON, 'needs gcc, ldd and python3');

let tmp: TempDir;
let obj: string;
let own: string;
let old: string;
let plugin: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-shadowed-unversioned-');
  if (!HAVE_GCC) return;
  own = join(tmp.dir, 'app', 'lib');
  old = join(tmp.dir, 'old', 'lib');
  const x = buildLib({out: join(own, 'libX.so.1'), soname: 'libX.so.1', source: 'int f(void){return 1;}\nint g(void){return 2;}\n'});
  buildLib({out: join(old, 'libX.so.1'), soname: 'libX.so.1', source: 'int g(void){return 2;}\n'});
  obj = buildLib({out: join(own, 'libobj.so'), link: [x], runpath: '$ORIGIN', source: 'int f(void); int g(void); int use(void){return f() + g();}\n'});
  // A plugin: h is defined by no candidate at all (the loading program's): still left to it.
  plugin = buildLib({out: join(own, 'libplugin.so'), link: [x], runpath: '$ORIGIN', source: 'int h(void); int g(void); int use2(void){return h() + g();}\n'});
});
afterAll(() => tmp?.cleanup());

t('the RUNPATH copy defines f, the LD_LIBRARY_PATH one does not: the real dlopen fails, and check reports an error with the entry and the fix', async () => {
  expect(ctypesLoad(obj)).toBeNull();
  expect(ctypesLoad(obj, old)).toMatch(/undefined symbol: f/);
  expect(lddVerdict(obj, old).symbols).toEqual([`f@ ${obj}`]);
  const report = await checkLibraries({targets: [obj], ldLibraryPath: old});
  expect(report.ok).toBe(false);
  const p = report.problems.find((q) => q.symbol === 'f')!;
  expect(p).toMatchObject({kind: 'undefined-symbol', object: obj, library: 'libX.so.1', version: null});
  expect(p.chosen).toBe(`${join(old, 'libX.so.1')} (LD_LIBRARY_PATH entry ${old})`);
  expect(p.shadowed).toMatch(new RegExp(`^${join(own, 'libX.so.1').replace(/\./g, '\\.')} \\(DT_RUNPATH .*\\), which would satisfy it$`));
  expect(p.summary).toBe(`this LD_LIBRARY_PATH makes libobj.so bind ${join(old, 'libX.so.1')}, which lacks f`);
  expect(p.fix).toMatch(/^run `unset LD_LIBRARY_PATH`.*, so that .*app\/lib\/libX\.so\.1 is found$/);
  // Without the entry: the real dlopen works and check passes.
  expect((await checkLibraries({targets: [obj], ldLibraryPath: undefined})).ok).toBe(true);
});

t('a symbol no candidate defines stays left to the loading program (a note), shadowing or not', async () => {
  expect(ctypesLoad(plugin, old)).toMatch(/undefined symbol: h/);
  const report = await checkLibraries({targets: [plugin], ldLibraryPath: old});
  expect(report.ok).toBe(true);
  expect(report.problems.find((q) => q.symbol === 'h')).toMatchObject({kind: 'unversioned-undefined-symbol'});
});
