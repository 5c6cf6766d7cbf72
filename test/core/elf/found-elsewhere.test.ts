import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {realpathSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../src/core/elf/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf} from '../../helpers/skip.js';
import {buildLib, HAVE_GCC, HAVE_LDD, lddVerdict} from './fixtures.js';

/**
 * A wheel's vendored libraries (`scipy.libs/libgfortran-….so` needing `libquadmath-….so` beside it,
 * without an RPATH of its own), built the same way with gcc: on its own the library fails, as
 * `ldd -r` says; loaded by the extension module whose DT_RPATH names the vendored directory, the
 * loader finds its dependency (DT_RPATH is searched for the dependencies of what it loads too;
 * DT_RUNPATH is not). Checking the whole tree, the failure stays and says both.
 */
const d = describeIf(HAVE_GCC && HAVE_LDD, 'needs gcc and ldd');

let tmp: {dir: string; cleanup: () => void};
let outer: string;
let extRpath: string;
let extRunpath: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-found-elsewhere-');
  if (!HAVE_GCC) return;
  const libs = join(tmp.dir, 'site', 'pkg.libs');
  // Versioned, like libquadmath (QUADMATH_1.0): the reference names the library it comes from.
  const inner = buildLib({out: join(libs, 'libinner-1a2b.so'), soname: 'libinner-1a2b.so', source: 'int f(void){return 1;}\n', versionScript: 'INNER_1.0 { global: f; local: *; };\n'});
  outer = buildLib({out: join(libs, 'libouter-3c4d.so'), soname: 'libouter-3c4d.so', link: [inner], source: 'int f(void); int g(void){return f();}\n'});
  extRpath = buildLib({out: join(tmp.dir, 'site', 'pkg', 'ext.so'), link: [outer], rpath: '$ORIGIN/../pkg.libs', source: 'int g(void); int h(void){return g();}\n'});
  extRunpath = buildLib({out: join(tmp.dir, 'runpath', 'pkg', 'ext.so'), link: [outer], runpath: `${libs}`, source: 'int g(void); int h(void){return g();}\n'});
});
afterAll(() => tmp?.cleanup());

d('a library found only when the files it ships with load it', () => {
  test('the real loader: on its own it fails, through the extension module\'s DT_RPATH it loads', () => {
    expect(lddVerdict(outer).libs).toContain('libinner-1a2b.so => not found');
    expect(lddVerdict(extRpath).libs).toContain(`libinner-1a2b.so => ${`${tmp.dir}/site/pkg/../pkg.libs/libinner-1a2b.so`}`);
    // DT_RUNPATH applies to the object's own DT_NEEDED only: through it the vendored library still fails.
    expect(lddVerdict(extRunpath).libs).toContain('libinner-1a2b.so => not found');
  });

  test('checking the tree: still a failure (as `ldd -r` of it), naming the file that finds it and how, and the advice for both ways', async () => {
    const report = await checkLibraries({targets: [join(tmp.dir, 'site')], recursive: true});
    expect(report.ok).toBe(false);
    const notFound = report.problems.filter((p) => p.kind === 'not-found');
    expect(notFound.map((p) => [p.object, p.library])).toEqual([[outer, 'libinner-1a2b.so']]);
    const p = notFound[0];
    expect(p.foundWhenLoadedBy).toEqual({
      object: extRpath,
      path: `${tmp.dir}/site/pkg/../pkg.libs/libinner-1a2b.so`,
      rule: `DT_RPATH entry $ORIGIN/../pkg.libs of ${extRpath}`,
    });
    expect(p.summary).toBe('libouter-3c4d.so needs libinner-1a2b.so, which the loader cannot find when it is loaded on its own (loaded by ext.so, it is found)');
    expect(p.fix).toMatch(/^nothing, if only the files it ships with load libouter-3c4d\.so \(ext\.so does\); for a program that loads it by itself: add .*pkg\.libs to LD_LIBRARY_PATH/);
    expect(firstProblemLine(report)).toContain('when it is loaded on its own');
    // The symbol that would have come from there says so too; the extension module itself is fine.
    const symbol = report.problems.find((x) => x.kind === 'undefined-symbol' && x.symbol === 'f');
    expect(symbol?.foundWhenLoadedBy?.object).toBe(extRpath);
    expect(report.problems.filter((x) => x.object === extRpath)).toEqual([]);
  });

  test('on its own, or with a loader that does not find it (DT_RUNPATH), the problem is only the plain one', async () => {
    const alone = await checkLibraries({targets: [outer]});
    expect(alone.problems.find((p) => p.kind === 'not-found')?.foundWhenLoadedBy).toBeUndefined();
    const runpath = await checkLibraries({targets: [outer, extRunpath]});
    const problems = runpath.problems.filter((p) => p.kind === 'not-found');
    expect(problems.map((p) => p.object)).toEqual([outer]);
    expect(problems[0].foundWhenLoadedBy).toBeUndefined();
    expect(problems[0].summary).not.toContain('on its own');
    // One file finds it (DT_RPATH), another that loads it does not (DT_RUNPATH): that failure is
    // real, so nothing calls the library's own failure harmless.
    const mixed = await checkLibraries({targets: [join(tmp.dir, 'site'), extRunpath], recursive: true});
    expect(mixed.problems.filter((p) => p.kind === 'not-found').map((p) => p.foundWhenLoadedBy)).toEqual([undefined]);
    expect(mixed.problems.some((p) => p.explanation.includes('harmless'))).toBe(false);
  });
});

d('inside a system image (CUDAENV_SYSROOT)', () => {
  test('a file another one loads through an absolute link of the image is the same file: the note is given', async () => {
    // The vendored pair again, in an image; the extension module's DT_RPATH names a link whose
    // absolute target (/site/pkg.libs) exists only inside the image: on the host it leads nowhere.
    const img = join(realpathSync(tmp.dir), 'img');
    const libs = join(img, 'site', 'pkg.libs');
    const inner = buildLib({out: join(libs, 'libinner-1a2b.so'), soname: 'libinner-1a2b.so', source: 'int f(void){return 1;}\n', versionScript: 'INNER_1.0 { global: f; local: *; };\n', extra: ['-nostdlib']});
    const outerImg = buildLib({out: join(libs, 'libouter-3c4d.so'), soname: 'libouter-3c4d.so', link: [inner], source: 'int f(void); int g(void){return f();}\n', extra: ['-nostdlib']});
    symlinkSync('/site/pkg.libs', join(img, 'site', 'pkg.libs-link'));
    const ext = buildLib({out: join(img, 'site', 'pkg', 'ext.so'), link: [outerImg], rpath: '/site/pkg.libs-link', source: 'int g(void); int h(void){return g();}\n', extra: ['-nostdlib']});
    const report = await checkLibraries({targets: [join(img, 'site')], recursive: true, sysroot: img});
    const notFound = report.problems.filter((p) => p.kind === 'not-found');
    expect(notFound.map((p) => [p.object, p.library])).toEqual([[outerImg, 'libinner-1a2b.so']]);
    expect(notFound[0].foundWhenLoadedBy).toEqual({object: ext, path: join(img, 'site', 'pkg.libs-link', 'libinner-1a2b.so'), rule: `DT_RPATH entry /site/pkg.libs-link of ${ext}`});
  });
});
