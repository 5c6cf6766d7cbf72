import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {checkLibraries} from '../../../../src/core/elf/index.js';
import {makeTempDir, type TempDir} from '../../../helpers/tmp.js';
import {testIf} from '../../../helpers/skip.js';
import {buildLib, ctypesLoad, HAVE_GCC, HAVE_LDD, HAVE_PYTHON, lddVerdict} from '../fixtures.js';
import {formatProblems} from '../../../../src/core/elf/explain/format-report.js';

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
let oldX: string;
let driver: string;
let host: string;
let top: string;
let libY: string;
let libZ: string;
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
  oldX = join(old, 'libX.so.1');
  const dlopenMain = '#include <dlfcn.h>\n#include <stdio.h>\n';
  const body = 'int main(int c, char **v) {\n  void *h = dlopen(v[1], RTLD_NOW | RTLD_GLOBAL);\n  if (!h) { printf("ERR %s\\n", dlerror()); return 3; }\n  printf("OK\\n");\n  return 0;\n}\n';
  // A plain dlopen driver (the preload case), and a host program that needs the old libX.so.1
  // itself (DT_RUNPATH to its directory): loaded as it starts, before it dlopens the object.
  driver = buildLib({out: join(tmp.dir, 'bin', 'driver'), executable: true, extra: ['-ldl'], source: dlopenMain + body});
  host = buildLib({out: join(tmp.dir, 'bin', 'host'), executable: true, link: ['-Wl,--no-as-needed', oldX], runpath: old, extra: ['-ldl'],
    source: `${dlopenMain}int g(void);\nint (*volatile keep)(void) = g;\n${body}`});
  // An earlier library: top needs libY.so then libZ.so; libY's DT_RUNPATH loads the old libX.so.1
  // first (breadth-first, before libZ's needs are searched); libZ's own DT_RUNPATH copy defines f.
  libY = buildLib({out: join(tmp.dir, 'y', 'libY.so'), soname: 'libY.so', link: [oldX], runpath: old, source: 'int g(void); int y(void){return g();}\n'});
  libZ = buildLib({out: join(own, 'libZ.so'), soname: 'libZ.so', link: [x], runpath: '$ORIGIN', source: 'int f(void); int z(void){return f();}\n'});
  top = buildLib({out: join(tmp.dir, 'top', 'libtop.so'), link: ['-Wl,--no-as-needed', libY, libZ], runpath: `${join(tmp.dir, 'y')}:${own}`, source: 'int t(void){return 0;}\n'});
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

/** The driver (or host) dlopening `target` with RTLD_NOW: "OK" or "ERR <dlerror()>". */
function dlopenRun(program: string, target: string, env: NodeJS.ProcessEnv = {}): string {
  const e: NodeJS.ProcessEnv = {...process.env, ...env};
  if (!env.LD_LIBRARY_PATH) delete e.LD_LIBRARY_PATH;
  if (!env.LD_PRELOAD) delete e.LD_PRELOAD;
  const r = spawnSync(program, [target], {encoding: 'utf8', env: e});
  return `${r.stdout}${r.stderr}`.trim();
}

t('an LD_PRELOAD object of the same SONAME lacks f, the object\'s own DT_RUNPATH copy has it: the real dlopen fails, and check names the preload and the fix', async () => {
  expect(dlopenRun(driver, obj)).toBe('OK');
  expect(dlopenRun(driver, obj, {LD_PRELOAD: oldX})).toMatch(/^ERR .*undefined symbol: f/);
  expect(lddVerdict(obj, undefined, undefined, {LD_PRELOAD: oldX}).symbols).toEqual([`f@ ${obj}`]);
  for (const exe of [undefined, driver]) {
    const report = await checkLibraries({targets: [obj], ldLibraryPath: undefined, preload: [oldX], ...(exe ? {exe} : {})});
    expect(report.ok).toBe(false);
    const p = report.problems.find((q) => q.symbol === 'f')!;
    expect(p).toMatchObject({kind: 'undefined-symbol', object: obj, library: 'libX.so.1', version: null});
    expect(p.chosen).toBe(`${oldX} (the LD_PRELOAD entry ${oldX})`);
    expect(p.shadowed).toMatch(new RegExp(`^${join(own, 'libX.so.1').replace(/\./g, '\\.')} \\(DT_RUNPATH .*\\), which would satisfy it$`));
    expect(p.summary).toBe(`LD_PRELOAD makes libobj.so bind ${oldX}, which lacks f`);
    expect(p.fix).toBe(`take ${oldX} out of LD_PRELOAD (\`unset LD_PRELOAD\` if it is the only entry), so that ${join(own, 'libX.so.1')} is found`);
    expect(formatProblems(report).join('\n')).not.toContain('left to the loading program');
  }
  // The preload of the copy that defines f: the real dlopen works, and check passes.
  expect(dlopenRun(driver, obj, {LD_PRELOAD: join(own, 'libX.so.1')})).toBe('OK');
  expect((await checkLibraries({targets: [obj], ldLibraryPath: undefined, preload: [join(own, 'libX.so.1')]})).ok).toBe(true);
});

t('the program loaded an older libX.so.1 as it started (--exe): the dlopen binds it by SONAME, fails on f, and check names the program and the fix', async () => {
  expect(dlopenRun(host, obj)).toMatch(/^ERR .*undefined symbol: f/);
  expect(dlopenRun(driver, obj)).toBe('OK');
  const report = await checkLibraries({targets: [obj], ldLibraryPath: undefined, exe: host});
  expect(report.ok).toBe(false);
  const p = report.problems.find((q) => q.symbol === 'f')!;
  expect(p).toMatchObject({kind: 'undefined-symbol', object: obj, library: 'libX.so.1', version: null});
  expect(p.chosen).toBe(`${oldX} (already loaded by the program ${host}, found by DT_RUNPATH entry ${old} of ${host})`);
  expect(p.summary).toBe(`libobj.so binds the libX.so.1 host loaded as it started, ${oldX}, which lacks f`);
  expect(p.fix).toMatch(new RegExp(`^load ${join(own, 'libX.so.1').replace(/\./g, '\\.')} first: LD_PRELOAD=`));
  // The fix works: with that preload the real dlopen loads it, and check passes.
  expect(dlopenRun(host, obj, {LD_PRELOAD: join(own, 'libX.so.1')})).toBe('OK');
  expect((await checkLibraries({targets: [obj], ldLibraryPath: undefined, exe: host, preload: [join(own, 'libX.so.1')]})).ok).toBe(true);
  // A program symbol h stays the program's: no shadowing is invented for the plugin.
  const plug = await checkLibraries({targets: [plugin], ldLibraryPath: undefined, exe: host});
  expect(plug.problems.find((q) => q.symbol === 'h')).toMatchObject({kind: 'unversioned-undefined-symbol'});
});

t('an earlier library\'s DT_RUNPATH loaded the older libX.so.1 first: the later need binds it by SONAME, and check names that library', async () => {
  expect(ctypesLoad(top)).toMatch(/undefined symbol: f/);
  expect(lddVerdict(top, '').symbols).toEqual([`f@ ${libZ}`]);
  const report = await checkLibraries({targets: [top], ldLibraryPath: undefined});
  expect(report.ok).toBe(false);
  const p = report.problems.find((q) => q.symbol === 'f')!;
  expect(p).toMatchObject({kind: 'undefined-symbol', object: libZ, library: 'libX.so.1', version: null});
  expect(p.chosen).toBe(`${oldX} (already loaded by ${libY}, found by DT_RUNPATH entry ${old} of ${libY})`);
  expect(p.summary).toBe(`libZ.so binds the libX.so.1 that libY.so loaded first, ${oldX}, which lacks f`);
  // libZ on its own loads its own copy: the real dlopen and check agree.
  expect(ctypesLoad(libZ)).toBeNull();
  expect((await checkLibraries({targets: [libZ], ldLibraryPath: undefined})).ok).toBe(true);
});
