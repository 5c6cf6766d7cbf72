import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, symlinkSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {checkLibraries, firstProblemLine, type CheckOptions, type CheckReport} from '../../../src/core/elf/index.js';
import {formatTree} from '../../../src/core/elf/explain/format-report.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildLib, write, ctypesLoad, HAVE_GCC, HAVE_LDD, HAVE_M32, HAVE_PYTHON, lddVerdict, withoutMissingVersions, type LoaderVerdict} from './fixtures.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {atPlatform, have, NEEDS, PYTHON_EXE} from '../../helpers/capabilities.js';

/**
 * Differential tests: every fixture is built with gcc, then both the real loader (`ldd -r`,
 * and a dlopen through python's ctypes where it adds something) and checkLibraries are asked;
 * they must agree on the libraries found (same paths), the missing names, versions and symbols.
 */
const enabled = HAVE_GCC && HAVE_LDD;
const d = describeIf(enabled, 'needs gcc and ldd (apt-get install gcc libc-bin)');

/** Our report for one target, in the shape lddVerdict gives. */
function verdictOf(report: CheckReport, cwd: string): LoaderVerdict {
  const target = report.checked[0];
  const libs = new Set<string>();
  const seen = new Set<string>([target]);
  for (const obj of report.objects) {
    for (const e of obj.needed) {
      // ldd -r is the oracle of what ld.so loads at start: what libraries dlopen later is not in it.
      if (e.dlopen) continue;
      if (e.path === null) {
        // ldd's listing starts at the main object; a filtee of the main object is linked in before
        // it (dl-deps.c), so a missing DT_AUXILIARY of the target (CUDA 13's libnvtx3interop.so.1
        // has `visibility=hidden`, from -Wl,-fvisibility=hidden) is never listed.
        if (e.filter === 'auxiliary' && obj.path === target) continue;
        libs.add(`${e.name} => not found`);
        continue;
      }
      // ldd lists a preloaded object under its path only, and never ld.so's own names.
      if (e.via === 'preload' || seen.has(e.path) || /\/ld-linux[^/]*$/.test(e.path)) continue;
      seen.add(e.path);
      libs.add(`${e.name} => ${e.path}`);
    }
  }
  const atStart = report.problems.filter((p) => p.edge !== 'dlopen');
  const versions = atStart.filter((p) => p.kind === 'version-not-found').map((p) => `${p.version} ${p.object}`);
  const symbols = atStart.filter((p) => p.kind === 'undefined-symbol' || p.kind === 'unversioned-undefined-symbol')
    .map((p) => `${p.symbol}@${p.version ?? ''} ${p.object}`);
  void cwd;
  return {libs: [...libs].sort(), versions: [...new Set(versions)].sort(), symbols: [...new Set(symbols)].sort(), raw: ''};
}

/** ldd prints relative paths for cwd-relative finds; make them comparable. */
function absolutise(v: LoaderVerdict, cwd: string): LoaderVerdict {
  return {...v, libs: v.libs.map((l) => l.replace(/ => (?!not found)(?!\/)(.*)$/, (_m, p: string) => ` => ${resolve(cwd, p)}`)).sort()};
}

async function agree(target: string, options: Partial<CheckOptions> = {}, cwd = process.cwd()): Promise<CheckReport> {
  const report = await checkLibraries({targets: [target], cwd, ...options});
  const real = absolutise(lddVerdict(target, options.ldLibraryPath, cwd, options.preload ? {LD_PRELOAD: options.preload.join(' ')} : {}), cwd);
  const ours = verdictOf(report, cwd);
  try {
    expect(ours.libs).toEqual(real.libs);
    expect(ours.versions).toEqual(real.versions);
    const missing = new Set(report.problems.filter((p) => p.kind === 'not-found').map((p) => p.library));
    const missingRefs = new Set(report.problems.filter((p) => p.symbol && p.library && missing.has(p.library)).map((p) => `${p.symbol} ${p.object}`));
    expect(withoutMissingVersions(ours.symbols, missingRefs)).toEqual(withoutMissingVersions(real.symbols, missingRefs));
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- ldd -r said:\n${real.raw}`);
  }
  // The --exe (dlopen) model against a real dlopen(RTLD_NOW|RTLD_GLOBAL) by a program that loads
  // nothing else (python loads zlib & co. at start-up, which a static model cannot know), in every scenario.
  if (!options.preload) {
    const driver = dlopenDriver();
    const dl = dlopenVerdict(driver, target, options.ldLibraryPath, cwd);
    // The driver only dlopens the target: what the target loads later (CUDA's run-time loads) is not in this oracle.
    const withExe = await checkLibraries({targets: [target], cwd, ...options, exe: driver, strict: true, runtimeLoads: false});
    const failing = withExe.problems.map((p) => `${p.kind} ${p.library ?? ''} ${p.version ?? ''} ${p.symbol ?? ''}`);
    if (withExe.ok !== (dl === null)) throw new Error(`--exe ${driver}: model ok=${withExe.ok} ${JSON.stringify(failing)}, dlopen said ${dl ?? 'OK'}`);
  }
  return report;
}

let driverPath: string | undefined;
function dlopenDriver(): string {
  if (driverPath) return driverPath;
  driverPath = buildLib({
    out: join(tmp.dir, 'driver', 'dlopen-driver'), executable: true,
    source: '#include <dlfcn.h>\n#include <stdio.h>\nint main(int c, char **v) {\n  if (!dlopen(v[1], RTLD_NOW | RTLD_GLOBAL)) { printf("%s\\n", dlerror()); return 3; }\n  return 0;\n}\n',
  });
  return driverPath;
}

function dlopenVerdict(driver: string, target: string, ldLibraryPath: string | undefined, cwd: string): string | null {
  const env: NodeJS.ProcessEnv = {...process.env};
  delete env.LD_LIBRARY_PATH;
  delete env.LD_PRELOAD;
  if (ldLibraryPath !== undefined) env.LD_LIBRARY_PATH = ldLibraryPath;
  const r = spawnSync(driver, [target], {encoding: 'utf8', env, cwd});
  return r.status === 0 ? null : `${r.stdout}${r.stderr}`.trim();
}

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-elf-');
});
afterAll(() => tmp?.cleanup());

// The second oracle (dlopen through python3's ctypes) is asserted only where python3 runs: say so when it does not.
testIf(HAVE_PYTHON, NEEDS.tool('python3'))('the dlopen oracle (python3 ctypes) runs here', () => {
  expect(ctypesLoad('libc.so.6')).toBeNull();
  expect(ctypesLoad('libcudaenv-no-such.so.1')).toContain('libcudaenv-no-such.so.1: cannot open shared object file');
});

d('the four failures of issue 3', () => {
  test('a pip wheel RUNPATH shadowed by LD_LIBRARY_PATH: undefined __nvJitLinkComplete_12_4', async () => {
    const root = join(tmp.dir, 'seed');
    const sp = join(root, 'venv', 'lib', 'python3.11', 'site-packages');
    const newJit = buildLib({
      out: join(sp, 'nvidia', 'nvjitlink', 'lib', 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12',
      source: 'int __nvJitLinkCreate(void){return 0;}\nint __nvJitLinkComplete_12_4(void){return 0;}\n',
      versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkCreate; __nvJitLinkComplete_12_4; local: *; };\n',
    });
    const store = join(root, 'store');
    const oldDir = join(store, 'versions', '12.3.2', 'lib64');
    buildLib({
      out: join(oldDir, 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12',
      source: 'int __nvJitLinkCreate(void){return 0;}\nint __nvJitLinkComplete_12_3(void){return 0;}\n',
      versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkCreate; __nvJitLinkComplete_12_3; local: *; };\n',
    });
    const cusparse = buildLib({
      out: join(sp, 'nvidia', 'cusparse', 'lib', 'libcusparse.so.12'), soname: 'libcusparse.so.12',
      source: 'int __nvJitLinkCreate(void); int __nvJitLinkComplete_12_4(void);\nint cusparseCreate(void){return __nvJitLinkCreate() + __nvJitLinkComplete_12_4();}\n',
      link: [newJit], runpath: '$ORIGIN:$ORIGIN/../../nvjitlink/lib',
    });

    const clean = await agree(cusparse);
    expect(clean.ok).toBe(true);
    expect(clean.objects[0].needed.find((n) => n.name === 'libnvJitLink.so.12')).toMatchObject({via: 'runpath'});

    const report = await agree(cusparse, {ldLibraryPath: oldDir, storeVersionsDir: join(store, 'versions')});
    expect(report.ok).toBe(false);
    const p = report.problems.find((x) => x.kind === 'undefined-symbol')!;
    expect(p).toMatchObject({object: cusparse, library: 'libnvJitLink.so.12', version: 'libnvJitLink.so.12', symbol: '__nvJitLinkComplete_12_4'});
    expect(p.chosen).toContain(`${oldDir}/libnvJitLink.so.12`);
    expect(p.chosen).toContain(`LD_LIBRARY_PATH entry ${oldDir}`);
    expect(p.shadowed).toContain('nvjitlink/lib/libnvJitLink.so.12');
    expect(p.shadowed).toContain('would satisfy it');
    expect(p.fix).toContain('cudaenv use 12.3.2 --ld-library-path none');
    const line = firstProblemLine(report);
    expect(line).toContain("this LD_LIBRARY_PATH makes the nvidia-cusparse wheel's libcusparse.so.12 bind");
    expect(line).toContain('which lacks __nvJitLinkComplete_12_4; run `cudaenv use 12.3.2 --ld-library-path none`');
    if (HAVE_PYTHON) expect(ctypesLoad(cusparse, oldDir)).toContain('undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12');

    // Outside the store the fix edits LD_LIBRARY_PATH itself.
    const other = await checkLibraries({targets: [cusparse], ldLibraryPath: `${oldDir}:/opt/x`});
    const otherFix = other.problems.find((x) => x.kind === 'undefined-symbol')!.fix;
    expect(otherFix).toContain('export LD_LIBRARY_PATH=/opt/x');
    expect(otherFix).toContain('`cudaenv use 12.4` (CUDA 12.4 or newer provides it)');
  });

  test('libcudart.so.11.0: cannot open shared object file', async () => {
    const root = join(tmp.dir, 'cudart');
    const cudart = buildLib({out: join(root, 'elsewhere', 'libcudart.so.11.0'), soname: 'libcudart.so.11.0', source: 'int cudaMalloc(void){return 0;}\n'});
    const lib = buildLib({out: join(root, 'app', 'libapp.so'), source: 'int cudaMalloc(void); int run(void){return cudaMalloc();}\n', link: [cudart]});
    const report = await agree(lib);
    expect(report.ok).toBe(false);
    const p = report.problems[0];
    expect(p).toMatchObject({kind: 'not-found', object: lib, library: 'libcudart.so.11.0', chosen: null});
    expect(p.fix).toContain('cudaenv install 11');
    expect(firstProblemLine(report)).toContain('libapp.so needs libcudart.so.11.0, which the loader cannot find');
    if (HAVE_PYTHON) expect(ctypesLoad(lib)).toContain('libcudart.so.11.0: cannot open shared object file');
  });

  test('libcupti.so.12 missing from a conda environment, then present', async () => {
    const env = join(tmp.dir, 'conda', 'envs', 'torch');
    const cupti = buildLib({out: join(tmp.dir, 'conda', 'pkgs', 'libcupti.so.12'), soname: 'libcupti.so.12', source: 'int cuptiGetVersion(void){return 12;}\n'});
    const lib = buildLib({
      out: join(env, 'lib', 'python3.11', 'site-packages', 'torch', 'lib', 'libtorch_cuda.so'),
      source: 'int cuptiGetVersion(void); int t(void){return cuptiGetVersion();}\n', link: [cupti], runpath: '$ORIGIN/../../../..',
    });
    const missing = await agree(lib);
    expect(missing.problems.map((p) => [p.kind, p.library])).toContainEqual(['not-found', 'libcupti.so.12']);
    expect(firstProblemLine(missing)).toContain("torch's libtorch_cuda.so needs libcupti.so.12");
    copyFileSync(cupti, join(env, 'lib', 'libcupti.so.12'));
    const present = await agree(lib);
    expect(present.ok).toBe(true);
    expect(present.objects[0].needed[0]).toMatchObject({name: 'libcupti.so.12', path: `${env}/lib/python3.11/site-packages/torch/lib/../../../../libcupti.so.12`, via: 'runpath'});
  });

  test("version `GLIBCXX_3.4.30' not found: the library found lacks a version node", async () => {
    const root = join(tmp.dir, 'glibcxx');
    const script = (vers: string[]) => vers.map((v, i) => `${v} { global: f_${v.replace(/\W/g, '_')};${i === 0 ? ' local: *;' : ''} }${i > 0 ? ` ${vers[i - 1]}` : ''};`).join('\n');
    const src = (vers: string[]) => vers.map((v) => `int f_${v.replace(/\W/g, '_')}(void){return 0;}`).join('\n');
    const newer = ['GLIBCXX_3.4.29', 'GLIBCXX_3.4.30'];
    const fresh = buildLib({out: join(root, 'new', 'libstdc++.so.6'), soname: 'libstdc++.so.6', source: src(newer), versionScript: script(newer)});
    const old = buildLib({out: join(root, 'old', 'libstdc++.so.6'), soname: 'libstdc++.so.6', source: src(newer.slice(0, 1)), versionScript: script(newer.slice(0, 1))});
    const lib = buildLib({
      out: join(root, 'app', 'libuses.so'), runpath: join(root, 'new'), link: [fresh],
      source: 'int f_GLIBCXX_3_4_29(void); int f_GLIBCXX_3_4_30(void); int u(void){return f_GLIBCXX_3_4_29() + f_GLIBCXX_3_4_30();}\n',
    });
    expect((await agree(lib)).ok).toBe(true);
    const report = await agree(lib, {ldLibraryPath: join(root, 'old')});
    const p = report.problems.find((x) => x.kind === 'version-not-found')!;
    expect(p).toMatchObject({object: lib, library: 'libstdc++.so.6', version: 'GLIBCXX_3.4.30'});
    expect(p.chosen).toContain(old);
    expect(p.shadowed).toContain(`${join(root, 'new')}/libstdc++.so.6`);
    expect(p.shadowed).toContain('would satisfy it');
    if (HAVE_PYTHON) expect(ctypesLoad(lib, join(root, 'old'))).toContain("version `GLIBCXX_3.4.30' not found");
  });

  test('a dependency next to the library but off its search path: not found, and the fix names that directory', async () => {
    const dir = join(tmp.dir, 'private libs');
    const bar = buildLib({out: join(dir, 'libbar.so.1'), soname: 'libbar.so.1', source: 'int bar(void){return 1;}\n'});
    const foo = buildLib({out: join(dir, 'libfoo.so.1'), link: [bar], source: 'int bar(void); int foo(void){return bar();}\n'});
    const report = await agree(foo, {ldLibraryPath: '/nonexistent'});
    const p = report.problems.find((x) => x.kind === 'not-found')!;
    expect(p).toMatchObject({library: 'libbar.so.1', chosen: null});
    expect(p.explanation).toContain(`${bar} is next to it`);
    expect(p.fix).toContain(`export LD_LIBRARY_PATH='${dir}:/nonexistent'`);
    expect(p.fix).toContain("-Wl,-rpath,'$ORIGIN'");
    expect((await agree(foo, {ldLibraryPath: dir})).ok).toBe(true);
  });

  test('the only candidate, on LD_LIBRARY_PATH, is too old: the fix does not say to drop that entry', async () => {
    const root = join(tmp.dir, 'only-old');
    const v2 = 'V1 { global: a; local: *; };\nV2 { global: b; } V1;\n';
    const fresh = buildLib({out: join(root, 'new', 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\nint b(void){return 2;}\n', versionScript: v2});
    const old = join(root, 'old');
    buildLib({out: join(old, 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\n', versionScript: 'V1 { global: a; local: *; };\n'});
    // No RUNPATH: without LD_LIBRARY_PATH the loader would not find libv.so at all.
    const lib = buildLib({out: join(root, 'app', 'libuses.so'), link: [fresh], source: 'int a(void); int b(void); int u(void){return a() + b();}\n'});
    const report = await agree(lib, {ldLibraryPath: old});
    const p = report.problems.find((x) => x.kind === 'version-not-found')!;
    expect(p).toMatchObject({library: 'libv.so', version: 'V2', shadowed: null});
    expect(p.fix).not.toContain('unset LD_LIBRARY_PATH');
    expect(p.fix).toContain(`before ${old} on LD_LIBRARY_PATH`);
    expect((await checkLibraries({targets: [lib]})).problems.map((x) => x.kind)).toContain('not-found');
  });
});

d('search order and precedence', () => {
  let root: string;
  let dirA: string;
  let dirB: string;
  beforeAll(() => {
    root = join(tmp.dir, 'prec');
    dirA = join(root, 'A');
    dirB = join(root, 'B');
    for (const dir of [dirA, dirB]) buildLib({out: join(dir, 'libx.so'), soname: 'libx.so', source: 'int x(void){return 1;}\n'});
  });

  test('DT_RPATH is searched before LD_LIBRARY_PATH', async () => {
    const lib = buildLib({out: join(root, 'r', 'librp.so'), source: 'int x(void); int r(void){return x();}\n', link: [join(dirA, 'libx.so')], rpath: dirA});
    const report = await agree(lib, {ldLibraryPath: dirB});
    expect(report.objects[0].needed[0]).toMatchObject({path: `${dirA}/libx.so`, via: 'rpath'});
  });

  test('LD_LIBRARY_PATH is searched before DT_RUNPATH', async () => {
    const lib = buildLib({out: join(root, 'u', 'librun.so'), source: 'int x(void); int r(void){return x();}\n', link: [join(dirA, 'libx.so')], runpath: dirA});
    const report = await agree(lib, {ldLibraryPath: dirB});
    expect(report.objects[0].needed[0]).toMatchObject({path: `${dirB}/libx.so`, via: 'ld_library_path'});
    expect((await agree(lib)).objects[0].needed[0]).toMatchObject({path: `${dirA}/libx.so`, via: 'runpath'});
  });

  test('DT_RPATH is inherited down the loader chain, even past an object with DT_RUNPATH', async () => {
    const base = join(root, 'inherit');
    const libD = buildLib({out: join(base, 'D', 'libD.so'), soname: 'libD.so', source: 'int d(void){return 4;}\n'});
    const libC = buildLib({out: join(base, 'C', 'libC.so'), soname: 'libC.so', source: 'int d(void); int c(void){return d();}\n', link: [libD]});
    const libB = buildLib({out: join(base, 'B', 'libB.so'), soname: 'libB.so', source: 'int c(void); int b(void){return c();}\n', link: [libC], runpath: join(base, 'C')});
    const top = buildLib({out: join(base, 'top', 'libtop.so'), source: 'int b(void); int t(void){return b();}\n', link: [libB], rpath: `${join(base, 'B')}:${join(base, 'D')}`});
    const report = await agree(top);
    expect(report.ok).toBe(true);
    const c = report.objects.find((o) => o.path.endsWith('libC.so'))!;
    expect(c.needed[0]).toMatchObject({name: 'libD.so', path: `${join(base, 'D')}/libD.so`, via: 'rpath'});
  });

  test('DT_RUNPATH applies to direct dependencies only', async () => {
    const base = join(root, 'runpath-direct');
    const libD = buildLib({out: join(base, 'D', 'libD.so'), soname: 'libD.so', source: 'int d(void){return 4;}\n'});
    const libC = buildLib({out: join(base, 'C', 'libC.so'), soname: 'libC.so', source: 'int d(void); int c(void){return d();}\n', link: [libD]});
    const top = buildLib({out: join(base, 'top', 'libtop.so'), source: 'int c(void); int t(void){return c();}\n', link: [libC], runpath: `${join(base, 'C')}:${join(base, 'D')}`});
    const report = await agree(top);
    expect(report.problems.map((p) => [p.kind, p.library])).toContainEqual(['not-found', 'libD.so']);
  });

  test('an object already loaded satisfies a later DT_NEEDED by soname, without a search', async () => {
    const base = join(tmp.dir, 'soname');
    // top's DT_NEEDED is the path /…/P/libP.so (linked against a copy without a soname);
    // the file there has SONAME libQ.so.1, which libR needs and which exists nowhere under that name.
    const pPath = join(base, 'P', 'libP.so');
    buildLib({out: pPath, source: 'int q(void){return 1;}\n'});
    buildLib({out: join(base, 'R', 'libR.so'), soname: 'libR.so', source: 'int q(void); int rr(void){return q();}\n'});
    const top = buildLib({out: join(base, 'top', 'libtop.so'), source: 'int q(void); int rr(void); int t(void){return q() + rr();}\n',
      link: [pPath, join(base, 'R', 'libR.so')], rpath: join(base, 'R')});
    buildLib({out: pPath, soname: 'libQ.so.1', source: 'int q(void){return 1;}\n'});
    buildLib({out: join(base, 'R', 'libR.so'), soname: 'libR.so', source: 'int q(void); int rr(void){return q();}\n', link: [pPath]});
    const report = await agree(top);
    expect(report.ok).toBe(true);
    const rObj = report.objects.find((o) => o.path.endsWith('libR.so'))!;
    expect(rObj.needed[0]).toMatchObject({name: 'libQ.so.1', path: pPath, via: 'loaded'});
  });

  test('two names for one file (a symlink) load one object', async () => {
    const base = join(root, 'inode');
    buildLib({out: join(base, 'L', 'libreal.so'), source: 'int z(void){return 1;}\n'});
    symlinkSync('libreal.so', join(base, 'L', 'libalias.so'));
    const top = buildLib({
      out: join(base, 'top', 'libtop.so'), source: 'int z(void); int t(void){return z();}\n',
      extra: [`-L${join(base, 'L')}`, '-Wl,--no-as-needed', '-l:libreal.so', '-l:libalias.so', `-Wl,-rpath,${join(base, 'L')}`],
    });
    const report = await agree(top);
    const edges = report.objects[0].needed.filter((n) => n.name.startsWith('lib') && n.name !== 'libc.so.6');
    expect(edges.map((e) => e.name)).toEqual(['libreal.so', 'libalias.so']);
    expect(new Set(edges.map((e) => e.path))).toEqual(new Set([`${join(base, 'L')}/libreal.so`]));
  });

  testIf(HAVE_M32, 'needs gcc -m32 (apt-get install gcc-12-multilib, or the multilib package of your gcc)')('a candidate of the wrong ELF class is passed over', async () => {
    const base = join(root, 'class');
    buildLib({out: join(base, 'c32', 'libw.so'), soname: 'libw.so', source: 'int w(void){return 32;}\n', m32: true});
    const w64 = buildLib({out: join(base, 'c64', 'libw.so'), soname: 'libw.so', source: 'int w(void){return 64;}\n'});
    const top = buildLib({out: join(base, 'top', 'libtop.so'), source: 'int w(void); int t(void){return w();}\n', link: [w64]});
    const report = await agree(top, {ldLibraryPath: `${join(base, 'c32')}:${join(base, 'c64')}`});
    expect(report.objects[0].needed[0]).toMatchObject({path: `${join(base, 'c64')}/libw.so`, via: 'ld_library_path',
      passedOver: [{path: `${join(base, 'c32')}/libw.so`, reason: 'wrong ELF class: ELFCLASS32'}]});
    const only32 = await agree(top, {ldLibraryPath: join(base, 'c32')});
    const p = only32.problems.find((x) => x.kind === 'not-found')!;
    expect(p.explanation).toContain('wrong ELF class: ELFCLASS32');
  });

  test('DF_1_NODEFLIB: the cache answer in a system directory and the system directories are refused', async () => {
    const base = join(root, 'nodeflib');
    const lib = buildLib({out: join(base, 'libnd.so'), source: 'int zlibVersion(void); int n(void){return zlibVersion() != 0;}\n', link: ['/lib/x86_64-linux-gnu/libz.so.1'], nodeflib: true});
    const report = await agree(lib);
    expect(report.problems.map((p) => [p.kind, p.library])).toContainEqual(['not-found', 'libz.so.1']);
  });

  test('$ORIGIN, ${ORIGIN}, $LIB and $PLATFORM expand as ld.so expands them', async () => {
    const base = join(root, 'dst');
    const o = buildLib({out: join(base, 'pkg', 'deps', 'libo.so'), soname: 'libo.so', source: 'int o(void){return 1;}\n'});
    const l = buildLib({out: join(base, 'lib', 'x86_64-linux-gnu', 'libl.so'), soname: 'libl.so', source: 'int l(void){return 1;}\n'});
    // $PLATFORM is AT_PLATFORM: x86_64, or haswell on Intel CPUs with AVX2 and friends.
    const p = buildLib({out: join(base, 'plat', atPlatform(), 'libp.so'), soname: 'libp.so', source: 'int p(void){return 1;}\n'});
    const top = buildLib({
      out: join(base, 'pkg', 'bin', 'libtop.so'), source: 'int o(void); int l(void); int p(void); int t(void){return o()+l()+p();}\n',
      link: [o, l, p], runpath: `$ORIGIN/../deps:${base}/$LIB:${base}/plat/\${PLATFORM}:$ORIGINX`,
    });
    const report = await agree(top);
    expect(report.objects[0].needed.map((n) => n.via)).toEqual(['runpath', 'runpath', 'runpath']);
  });

  test('a library in a symlinked directory: $ORIGIN is the directory it was opened under', async () => {
    const base = join(root, 'origin-link');
    buildLib({out: join(base, 'link', 'sub', 'libs.so'), soname: 'libs.so', source: 'int s(void){return 1;}\n'});
    const top = buildLib({out: join(base, 'real', 'libo.so'), source: 'int s(void); int t(void){return s();}\n', link: [join(base, 'link', 'sub', 'libs.so')], rpath: '$ORIGIN/sub'});
    symlinkSync('../real/libo.so', join(base, 'link', 'libo.so'));
    void top;
    const report = await agree(join(base, 'link', 'libo.so'));
    expect(report.ok).toBe(true);
  });

  test('glibc-hwcaps subdirectories are preferred where the CPU supports them', async () => {
    const base = join(root, 'hwcaps');
    const plain = buildLib({out: join(base, 'H', 'libh.so'), soname: 'libh.so', source: 'int h(void){return 1;}\n'});
    buildLib({out: join(base, 'H', 'glibc-hwcaps', 'x86-64-v2', 'libh.so'), soname: 'libh.so', source: 'int h(void){return 2;}\n'});
    const top = buildLib({out: join(base, 'top', 'libtop.so'), source: 'int h(void); int t(void){return h();}\n', link: [plain], runpath: join(base, 'H')});
    await agree(top);
  });

  test('an empty LD_LIBRARY_PATH element means the current directory', async () => {
    const base = join(root, 'cwd');
    const libD = buildLib({out: join(base, 'libD.so'), soname: 'libD.so', source: 'int dd(void){return 1;}\n'});
    const top = buildLib({out: join(base, 'top', 'libtop.so'), source: 'int dd(void); int t(void){return dd();}\n', link: [libD]});
    const report = await agree(top, {ldLibraryPath: '/nonexistent::'}, base);
    expect(report.objects[0].needed[0]).toMatchObject({path: `${base}/libD.so`, via: 'ld_library_path'});
  });

  test('LD_PRELOAD: a preloaded object with a matching soname satisfies a DT_NEEDED', async () => {
    const base = join(root, 'preload');
    const custom = buildLib({out: join(base, 'custom.so'), soname: 'libD.so', source: 'int dd(void){return 7;}\n'});
    const top = buildLib({out: join(base, 'top', 'libtop.so'), source: 'int dd(void); int t(void){return dd();}\n', link: [custom]});
    const without = await checkLibraries({targets: [top]});
    expect(without.problems[0]).toMatchObject({kind: 'not-found', library: 'libD.so'});
    const report = await agree(top, {preload: [custom]});
    expect(report.ok).toBe(true);
    expect(report.objects[0].needed[0]).toMatchObject({name: 'libD.so', path: custom, via: 'preload'});
  });
});

d('files the loader cannot use', () => {
  test('a text file under a library name stops the loader (file too short / invalid ELF header), even with a good one later', async () => {
    const base = join(tmp.dir, 'bad');
    const good = buildLib({out: join(base, 'good', 'libD.so'), soname: 'libD.so', source: 'int dd(void){return 1;}\n'});
    const top = buildLib({out: join(base, 'libtop.so'), source: 'int dd(void); int t(void){return dd();}\n', link: [good]});
    write(join(base, 'short', 'libD.so'), 'INPUT(libD.so.1)\n');
    write(join(base, 'script', 'libD.so'), `/* GNU ld script */\n${'GROUP ( libD.so.1 )\n'.repeat(8)}`);
    for (const [dir, reason] of [['short', 'file too short'], ['script', 'invalid ELF header']] as const) {
      const ld = `${join(base, dir)}:${join(base, 'good')}`;
      const report = await checkLibraries({targets: [top], ldLibraryPath: ld});
      const p = report.problems.find((x) => x.kind === 'not-found')!;
      expect(p.library).toBe('libD.so');
      expect(p.explanation).toContain(`${join(base, dir)}/libD.so: ${reason}`);
      const real = lddVerdict(top, ld);
      expect(real.raw).toContain(`${join(base, dir)}/libD.so: ${reason}`);
      if (HAVE_PYTHON) expect(ctypesLoad(top, ld)).toContain(reason);
    }
  });

  test('a file the loader stops at ends the load: nothing after it is checked, as ldd -r and a dlopen show', async () => {
    const base = join(tmp.dir, 'stop-ends');
    const good = buildLib({out: join(base, 'good', 'libD.so'), soname: 'libD.so', source: 'int dd(void){return 1;}\n'});
    const gone = buildLib({out: join(base, 'gone', 'libM.so'), soname: 'libM.so', source: 'int mm(void){return 1;}\n'});
    // libM.so first (found nowhere: a stand-in in trace mode), then libD.so (a text file first on the path).
    const top = buildLib({out: join(base, 'libtop.so'), source: 'int dd(void); int mm(void); int t(void){return dd() + mm();}\n', link: [gone, good]});
    spawnSync('rm', ['-rf', join(base, 'gone')]);
    write(join(base, 'junk', 'libD.so'), `/* GNU ld script */\n${'GROUP ( libD.so.1 )\n'.repeat(8)}`);
    const ld = `${join(base, 'junk')}:${join(base, 'good')}`;
    const real = lddVerdict(top, ld);
    // ld.so signals the error and lists nothing: no library, no symbol (dd and mm are not said to be unbound).
    expect(real.raw).toContain(`error while loading shared libraries: ${join(base, 'junk')}/libD.so: invalid ELF header`);
    expect({libs: real.libs, symbols: real.symbols}).toEqual({libs: [], symbols: []});
    const report = await checkLibraries({targets: [top], ldLibraryPath: ld});
    // A real run stops at libM.so first; ldd's trace passes it and stops at libD.so: both are named, nothing else.
    expect(report.problems.map((p) => [p.kind, p.library, p.symbol])).toEqual([['not-found', 'libM.so', null], ['not-found', 'libD.so', null]]);
    expect(report.problems[1].explanation).toContain(`${join(base, 'junk')}/libD.so: invalid ELF header`);
    // The same in a library a program dlopens: the dlopen fails there and binds nothing of it.
    const mid = buildLib({out: join(base, 'mid', 'libmid.so'), source: 'int dd(void); int mid(void){return dd();}\n', link: [good]});
    const dl = dlopenVerdict(dlopenDriver(), mid, ld, base);
    expect(dl).toContain(`${join(base, 'junk')}/libD.so: invalid ELF header`);
    const withExe = await checkLibraries({targets: [mid], ldLibraryPath: ld, exe: dlopenDriver(), strict: true});
    expect(withExe.problems.map((p) => [p.kind, p.object, p.library, p.symbol])).toEqual([['not-found', mid, 'libD.so', null]]);
    expect(withExe.ok).toBe(false);
  });

  test('after a stop at a file, the report lists what the loader searched and mapped before it, as LD_DEBUG=files shows', async () => {
    const base = join(tmp.dir, 'stop-objects');
    const good = join(base, 'good');
    // Breadth first: libtop's own entries (liba, libb, libc) are searched and mapped, then liba's
    // libjunk.so stops the load before libb's libq.so is ever searched.
    const q = buildLib({out: join(good, 'libq.so'), soname: 'libq.so', source: 'int q(void){return 1;}\n'});
    const junkSoname = buildLib({out: join(base, 'real', 'libjunk.so'), soname: 'libjunk.so', source: 'int j(void){return 1;}\n'});
    const a = buildLib({out: join(good, 'liba.so'), soname: 'liba.so', source: 'int j(void); int a(void){return j();}\n', link: [junkSoname]});
    const b = buildLib({out: join(good, 'libb.so'), soname: 'libb.so', source: 'int q(void); int b(void){return q();}\n', link: [q]});
    const top = buildLib({out: join(base, 'libtop.so'), source: 'int a(void); int b(void); int t(void){return a() + b();}\n', link: [a, b]});
    write(join(good, 'libjunk.so'), 'not a library\n');
    const r = spawnSync('ldd', ['-r', top], {encoding: 'utf8', env: {...process.env, LD_DEBUG: 'files', LD_LIBRARY_PATH: good}});
    expect(r.stdout + r.stderr).toContain(`${good}/libjunk.so: file too short`);
    // ldd is a shell script: LD_DEBUG reports the shell's own loading too (on stderr; the traced
    // process writes its debug output to stdout). Keep the traced process's lines.
    const out = r.stdout + r.stderr;
    const pid = new RegExp(`^\\s*(\\d+):\\s+file=${top} \\[0\\];\\s+generating link map`, 'm').exec(out)?.[1];
    const lines = out.split('\n').filter((l) => l.trimStart().startsWith(`${pid}:`)).join('\n');
    const searched = [...lines.matchAll(/file=(\S+) \[0\];\s+needed by (\S+) \[0\]/g)].map((m) => `${m[1]} <- ${m[2]}`);
    const mapped = [...lines.matchAll(/file=(\S+) \[0\];\s+generating link map/g)].map((m) => m[1].replace(/^.*\//, ''));
    expect(pid).toBeDefined();
    expect(searched).toEqual(expect.arrayContaining([`libjunk.so <- ${a}`]));
    expect(searched.some((s) => s.startsWith('libq.so'))).toBe(false);

    const report = await checkLibraries({targets: [top], ldLibraryPath: good});
    const ours = report.objects.flatMap((o) => o.needed.filter((e) => e.reached !== false && e.via !== 'loaded').map((e) => `${e.name} <- ${o.path}`));
    expect(ours.sort()).toEqual([...searched].sort());
    expect(report.objects.map((o) => o.path.replace(/^.*\//, '')).sort()).toEqual([...mapped].sort());
    const junkEdge = report.objects.find((o) => o.path === a)?.needed.find((e) => e.name === 'libjunk.so');
    expect(junkEdge).toMatchObject({path: null, error: `${good}/libjunk.so: file too short`});
    expect(report.objects.find((o) => o.path === b)?.needed.find((e) => e.name === 'libq.so')).toEqual({name: 'libq.so', path: null, via: null, rule: null, reached: false});
    expect(report.problems.map((p) => [p.kind, p.library])).toEqual([['not-found', 'libjunk.so']]);
    // --tree: the file it stops at, with the loader's message, and the entries it never searched.
    expect(formatTree(report)).toEqual([
      top,
      `├── liba.so => ${a} [ld_library_path: LD_LIBRARY_PATH entry ${good}]`,
      `│   └── libjunk.so => ${good}/libjunk.so: file too short [the loader stops here, LD_LIBRARY_PATH entry ${good}]`,
      `└── libb.so => ${b} [ld_library_path: LD_LIBRARY_PATH entry ${good}]`,
      '    └── libq.so (never searched: the loader stopped before it)',
    ]);
  });

  test('an LD_PRELOAD object that cannot start stops the program before a dlopen that would stop at a file', async () => {
    const base = join(tmp.dir, 'stop-preload');
    // libpre.so (preloaded) needs libgone.so, found nowhere: the program never starts. The library
    // it would dlopen needs libD.so, a text file first on the path: a stop the program never gets to.
    const gone = buildLib({out: join(base, 'gone', 'libgone.so'), soname: 'libgone.so', source: 'int g(void){return 1;}\n'});
    const pre = buildLib({out: join(base, 'libpre.so'), soname: 'libpre.so', source: 'int g(void); int p(void){return g();}\n', link: [gone]});
    spawnSync('rm', ['-rf', join(base, 'gone')]);
    const good = buildLib({out: join(base, 'good', 'libD.so'), soname: 'libD.so', source: 'int dd(void){return 1;}\n'});
    const mid = buildLib({out: join(base, 'mid', 'libmid.so'), source: 'int dd(void); int mid(void){return dd();}\n', link: [good]});
    write(join(base, 'junk', 'libD.so'), 'not a library\n');
    const ld = `${join(base, 'junk')}:${join(base, 'good')}`;
    const env: NodeJS.ProcessEnv = {...process.env, LD_LIBRARY_PATH: ld, LD_PRELOAD: pre};
    const real = spawnSync(dlopenDriver(), [mid], {encoding: 'utf8', env});
    expect(real.stderr).toContain('error while loading shared libraries: libgone.so: cannot open shared object file');
    const report = await checkLibraries({targets: [mid], ldLibraryPath: ld, preload: [pre], exe: dlopenDriver(), strict: true});
    expect(report.problems.slice(0, 2).map((p) => [p.kind, p.object, p.library])).toEqual([['not-found', pre, 'libgone.so'], ['not-found', mid, 'libD.so']]);
    // The program's start: the driver, the preload (with its missing libgone.so); the dlopened library mapped before its stop.
    expect(report.objects.map((o) => o.path)).toEqual(expect.arrayContaining([dlopenDriver(), pre, mid]));
    expect(firstProblemLine(report)).toContain('libgone.so');
  });

  test('a DT_NEEDED with a slash is opened as written, relative to the current directory', async () => {
    const base = join(tmp.dir, 'slash');
    const dep = buildLib({out: join(base, 'sub', 'libdep.so'), source: 'int dd(void){return 1;}\n'});
    void dep;
    const top = buildLib({out: join(base, 'libtop.so'), source: 'int dd(void); int t(void){return dd();}\n', extra: ['sub/libdep.so'], cwd: base});
    const report = await agree(top, {}, base);
    expect(report.objects[0].needed[0]).toMatchObject({name: 'sub/libdep.so', path: `${base}/sub/libdep.so`});
    const elsewhere = await agree(top, {}, tmp.dir);
    expect(elsewhere.problems[0]).toMatchObject({kind: 'not-found', library: 'sub/libdep.so'});
  });
});

d('options', () => {
  testIf(have('ldconfig'), 'needs ldconfig (apt-get install libc-bin)')('cacheFile: a private ld.so.cache built with ldconfig -C answers before the system directories', async () => {
    const base = join(tmp.dir, 'privcache');
    const dep = buildLib({out: join(base, 'L', 'libpc.so.1'), soname: 'libpc.so.1', source: 'int pc(void){return 1;}\n'});
    const top = buildLib({out: join(base, 'libtop.so'), source: 'int pc(void); int t(void){return pc();}\n', link: [dep]});
    write(join(base, 'ld.so.conf'), `${join(base, 'L')}\n`);
    const r = spawnSync('ldconfig', ['-C', join(base, 'ld.so.cache'), '-f', join(base, 'ld.so.conf')], {encoding: 'utf8'});
    expect({status: r.status, stderr: r.stderr}).toEqual({status: 0, stderr: ''});
    expect((await checkLibraries({targets: [top]})).problems[0]).toMatchObject({kind: 'not-found', library: 'libpc.so.1'});
    const report = await checkLibraries({targets: [top], cacheFile: join(base, 'ld.so.cache')});
    expect(report.objects[0].needed[0]).toMatchObject({name: 'libpc.so.1', path: `${join(base, 'L')}/libpc.so.1`, via: 'ld.so.cache'});
    expect(report.objects[0].needed[0].rule).toContain(join(base, 'ld.so.cache'));
  });

  test('directories: every ELF shared object, non-ELF files skipped with a note, --recursive descends', async () => {
    const base = join(tmp.dir, 'dirs');
    buildLib({out: join(base, 'liba.so.1'), soname: 'liba.so.1', source: 'int a(void){return 1;}\n'});
    symlinkSync('liba.so.1', join(base, 'liba.so'));
    write(join(base, 'libc-like.so'), '/* GNU ld script */\nGROUP ( liba.so.1 )\n');
    write(join(base, 'README'), 'hello\n');
    buildLib({out: join(base, 'nested', 'libb.so'), soname: 'libb.so', source: 'int b(void){return 1;}\n'});
    const flat = await checkLibraries({targets: [base]});
    expect(flat.checked).toEqual([join(base, 'liba.so')]);
    expect(flat.skipped).toEqual(expect.arrayContaining([
      {path: join(base, 'libc-like.so'), reason: expect.stringContaining('linker script')},
      {path: join(base, 'README'), reason: 'not an ELF file'},
    ]));
    const deep = await checkLibraries({targets: [base], recursive: true});
    expect(deep.checked).toEqual([join(base, 'liba.so'), join(base, 'nested', 'libb.so')]);
  });
});

d('symbols', () => {
  test('unversioned undefined symbols are notes unless --strict', async () => {
    const base = join(tmp.dir, 'ext');
    const ext = buildLib({out: join(base, 'ext.cpython-311-x86_64-linux-gnu.so'), source: 'extern long PyLong_AsLong(void*); long ext(void*o){return PyLong_AsLong(o);}\n'});
    const report = await agree(ext);
    expect(report.ok).toBe(true);
    expect(report.problems).toEqual([expect.objectContaining({kind: 'unversioned-undefined-symbol', symbol: 'PyLong_AsLong', library: null, version: null})]);
    expect((await checkLibraries({targets: [ext], strict: true})).ok).toBe(false);
  });

  testIf(PYTHON_EXE !== null && HAVE_PYTHON, NEEDS.tool('python3'))('--exe python (the interpreter the tests run) binds Py* symbols; ctypes agrees', async () => {
    const ext = buildLib({out: join(tmp.dir, 'ext-exe', 'ext.cpython-311-x86_64-linux-gnu.so'), source: 'extern long PyLong_AsLong(void*); long ext(void*o){return PyLong_AsLong(o);}\n'});
    const withExe = await checkLibraries({targets: [ext], exe: PYTHON_EXE!, strict: true});
    expect(withExe.problems).toEqual([]);
    expect(withExe.ok).toBe(true);
    expect(ctypesLoad(ext)).toBeNull();
  });

  test('a weak undefined reference never fails', async () => {
    const base = join(tmp.dir, 'weak');
    const lib = buildLib({out: join(base, 'libweak.so'), source: '__attribute__((weak)) int maybe(void); int w(void){return maybe ? maybe() : 0;}\n'});
    const report = await agree(lib);
    expect(report.problems).toEqual([]);
  });
});

d('real libraries on this machine', () => {
  const dirs = ['/usr/local/cuda-13.0/lib', '/usr/local/cuda/lib64'].filter((x) => existsSync(x));
  testIf(dirs.length > 0, NEEDS.devToolkit('/usr/local/cuda-13.0 or /usr/local/cuda'))('CUDA libraries in /usr/local agree with ldd -r, library by library', async () => {
    const all = await checkLibraries({targets: [dirs[0]]});
    expect(all.checked.length).toBeGreaterThan(0);
    for (const lib of all.checked.slice(0, 12)) await agree(lib);
  });

  const sysDir = '/usr/lib/x86_64-linux-gnu';
  testIf(existsSync(sysDir), `needs ${sysDir} (a Debian-style x86-64 system)`)('a sample of /usr/lib/x86_64-linux-gnu agrees with ldd -r, including unversioned symbols', async () => {
    // libstdc++ (gcc) and libz are on every machine the suite runs on; the others where present.
    const sample = ['libstdc++.so.6', 'libz.so.1', 'libcurl.so.4', 'libpython3.11.so.1.0', 'libssl.so.3', 'libxml2.so.2'].map((n) => join(sysDir, n)).filter((p) => existsSync(p));
    expect(sample).toEqual(expect.arrayContaining([join(sysDir, 'libstdc++.so.6'), join(sysDir, 'libz.so.1')]));
    for (const lib of sample) await agree(lib);
  });
});
