import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine, type CheckReport} from '../../../src/core/elf/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {realManifestText} from '../../helpers/real-mirror.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {buildLib, ctypesLoad, HAVE_GCC, HAVE_LDD, HAVE_PYTHON, lddVerdict, write} from './fixtures.js';

/**
 * Issue 12, items 5-7: LD_LIBRARY_PATH split on ';', its empty entry, and junk files on a
 * search path. Each case is built with gcc and asked of the real loader (`ldd -r` and a dlopen
 * through python's ctypes) before checking what `check` says about it and what it tells to do.
 */
const d = describeIf(HAVE_GCC && HAVE_LDD, 'needs gcc and ldd');
const withPython = testIf(HAVE_PYTHON, 'needs python3 for a real dlopen');

let tmp: {dir: string; cleanup: () => void};
let newDir: string;
let oldDir: string;
let app: string;
let plain: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-explain-');
  if (!HAVE_GCC) return;
  // libv.so: V2 (symbol b) only in the new copy; libuses.so needs b@V2 and finds the new one by RUNPATH.
  newDir = join(tmp.dir, 'new');
  oldDir = join(tmp.dir, 'old');
  const fresh = buildLib({out: join(newDir, 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\nint b(void){return 2;}\n',
    versionScript: 'V1 { global: a; local: *; };\nV2 { global: b; } V1;\n'});
  buildLib({out: join(oldDir, 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\n', versionScript: 'V1 { global: a; local: *; };\n'});
  app = buildLib({out: join(tmp.dir, 'app', 'libuses.so'), link: [fresh], runpath: newDir, source: 'int a(void); int b(void); int u(void){return a() + b();}\n'});
  // The same without RUNPATH: only LD_LIBRARY_PATH leads to a libv.so.
  plain = buildLib({out: join(tmp.dir, 'plain', 'libuses.so'), link: [fresh], source: 'int a(void); int b(void); int u(void){return a() + b();}\n'});
});
afterAll(() => tmp?.cleanup());

function bound(report: CheckReport, name: string): string | null | undefined {
  return report.objects[0].needed.find((n) => n.name === name)?.path;
}

d("LD_LIBRARY_PATH split on ';' as well as ':' (glibc fillin_rpath)", () => {
  test("'/old;/x': the entry before ';' shadows, and the fix drops it instead of repeating the value", async () => {
    const ld = `${oldDir};${join(tmp.dir, 'nowhere')}`;
    const real = lddVerdict(app, ld);
    expect(real.libs).toContain(`libv.so => ${oldDir}/libv.so`);
    expect(real.versions).toEqual([`V2 ${app}`]);
    const report = await checkLibraries({targets: [app], ldLibraryPath: ld});
    expect(bound(report, 'libv.so')).toBe(`${oldDir}/libv.so`);
    const p = report.problems.find((x) => x.kind === 'version-not-found')!;
    expect(p.chosen).toContain(`LD_LIBRARY_PATH entry ${oldDir}`);
    expect(p.fix).not.toContain(ld);
    expect(p.fix).toContain(`drop ${oldDir} from LD_LIBRARY_PATH: \`export LD_LIBRARY_PATH=${join(tmp.dir, 'nowhere')}\``);
  });

  test("'/old;/old/': every spelling of the entry goes, so the fix is unset, not the same value", async () => {
    const ld = `${oldDir};${oldDir}/`;
    expect(lddVerdict(app, ld).libs).toContain(`libv.so => ${oldDir}/libv.so`);
    const report = await checkLibraries({targets: [app], ldLibraryPath: ld});
    expect(report.problems.find((x) => x.kind === 'version-not-found')!.fix).toBe(`run \`unset LD_LIBRARY_PATH\` (it only holds ${oldDir})`);
  });

  withPython('a dlopen agrees', () => {
    expect(ctypesLoad(app, `${oldDir};/nonexistent`)).toContain("version `V2' not found");
    expect(ctypesLoad(app, `/nonexistent;${newDir}`)).toBeNull();
  });
});

d('an empty LD_LIBRARY_PATH entry (the current directory)', () => {
  let cwd: string;
  beforeAll(() => {
    cwd = join(tmp.dir, 'cwd');
    mkdirSync(cwd, {recursive: true});
    copyFileSync(join(oldDir, 'libv.so'), join(cwd, 'libv.so'));
  });

  test('named as the empty entry and the current directory; the fix removes it', async () => {
    const ld = `:${join(tmp.dir, 'nowhere')}`;
    const real = lddVerdict(app, ld, cwd);
    // ldd prints a cwd-relative find as written: "libv.so => libv.so".
    expect(real.libs).toContain('libv.so => libv.so');
    expect(real.versions).toEqual([`V2 ${app}`]);
    const report = await checkLibraries({targets: [app], ldLibraryPath: ld, cwd});
    expect(bound(report, 'libv.so')).toBe(`${cwd}/libv.so`);
    const p = report.problems.find((x) => x.kind === 'version-not-found')!;
    expect(p.chosen).toContain(`LD_LIBRARY_PATH entry "" (empty: the current directory, ${cwd})`);
    expect(p.chosen).not.toMatch(/LD_LIBRARY_PATH entry \)/);
    expect(p.fix).toContain('remove the empty entry from LD_LIBRARY_PATH');
    expect(p.fix).toContain(`export LD_LIBRARY_PATH=${join(tmp.dir, 'nowhere')}`);
    expect(p.fix).not.toMatch(/^install a newer/);
    expect(firstProblemLine(report)).toMatch(/^LD_LIBRARY_PATH's empty entry \(the current directory\) makes libuses.so bind/);
  });

  test('nothing better anywhere: still remove the empty entry first, then install a library that defines it', async () => {
    const real = lddVerdict(plain, ':', cwd);
    expect(real.versions).toEqual([`V2 ${plain}`]);
    const report = await checkLibraries({targets: [plain], ldLibraryPath: ':', cwd});
    const p = report.problems.find((x) => x.kind === 'version-not-found')!;
    expect(p.fix).toMatch(/^run `unset LD_LIBRARY_PATH` \(it only holds the empty entry/);
    expect(p.fix).toContain('no other libv.so on the search path defines V2');
  });

  withPython('a dlopen agrees', () => {
    const r = ctypesLoadIn(app, ':', cwd);
    expect(r).toContain("version `V2' not found");
  });
});

/** ctypesLoad with a working directory (fixtures.ts runs it in ours). */
function ctypesLoadIn(path: string, ld: string, cwd: string): string | null {
  const prev = process.cwd();
  process.chdir(cwd);
  try {
    return ctypesLoad(path, ld);
  } finally {
    process.chdir(prev);
  }
}

d('a file the loader cannot load, under the right name, on the search path', () => {
  const cases: Array<[string, (dir: string) => void, string, RegExp]> = [
    ['an empty file', (dir) => writeFileSync(join(dir, 'libv.so'), ''), 'file too short', /an empty file, 0 bytes/],
    ['a short text file', (dir) => writeFileSync(join(dir, 'libv.so'), 'INPUT(libv.so.1)\n'), 'file too short', /linker script/],
    ['a text file', (dir) => writeFileSync(join(dir, 'libv.so'), 'x'.repeat(200)), 'invalid ELF header', /200 bytes without the ELF magic/],
    ['a cut-off ELF file', (dir) => writeFileSync(join(dir, 'libv.so'), readFileSync(join(newDir, 'libv.so')).subarray(0, 100)), 'cannot read file data', /truncated or damaged ELF file of 100 bytes/],
  ];
  for (const [what, make, reason, described] of cases) {
    test(`${what}: the loader stops there ("${reason}"); the headline says so and the fix is to remove it or drop the entry`, async () => {
      const dir = join(tmp.dir, `junk-${what.replace(/\W/g, '-')}`);
      mkdirSync(dir, {recursive: true});
      make(dir);
      const ld = `${dir}:${newDir}`;
      const real = lddVerdict(plain, ld);
      expect(real.raw).toContain(`${dir}/libv.so: ${reason}`);
      if (HAVE_PYTHON) expect(ctypesLoad(plain, ld)).toContain(`${dir}/libv.so: ${reason}`);
      // Without the junk the same search loads the good copy.
      if (HAVE_PYTHON) expect(ctypesLoad(plain, newDir)).toBeNull();

      const report = await checkLibraries({targets: [plain], ldLibraryPath: ld});
      expect(report.ok).toBe(false);
      const p = report.problems[0];
      expect(p).toMatchObject({kind: 'not-found', library: 'libv.so'});
      expect(p.summary).toContain(`the loader stops at ${dir}/libv.so`);
      expect(p.summary).toMatch(described);
      if (reason !== 'cannot read file data') expect(p.summary).toContain(`"${reason}"`);
      expect(p.chosen).toBe(`${dir}/libv.so (LD_LIBRARY_PATH entry ${dir})`);
      expect(p.shadowed).toContain(`${newDir}/libv.so`);
      const line = firstProblemLine(report);
      expect(line).not.toContain('cannot find');
      expect(line).not.toContain('install the package that provides');
      expect(p.fix).toContain(`drop ${dir} from LD_LIBRARY_PATH: \`export LD_LIBRARY_PATH=${newDir}\``);
      expect(p.fix).toContain(`remove or replace ${dir}/libv.so`);
    });
  }

  test('a whole ELF file of the wrong kind (an object file, a PIE program) stops the loader too, and is not called damaged', async () => {
    const rel = join(tmp.dir, 'junk-rel');
    mkdirSync(rel, {recursive: true});
    spawnSync('gcc', ['-c', '-fPIC', '-o', join(rel, 'libv.so'), '-x', 'c', '-'], {input: 'int a(void){return 1;}\n'});
    const pie = join(tmp.dir, 'junk-pie');
    buildLib({out: join(pie, 'libv.so'), executable: true, source: 'int main(void){return 0;}\n', extra: ['-pie', '-fPIE']});
    for (const [dir, reason] of [[rel, 'only ET_DYN and ET_EXEC can be loaded'], [pie, 'cannot dynamically load position-independent executable']] as const) {
      const ld = `${dir}:${newDir}`;
      expect(lddVerdict(plain, ld).raw).toContain(reason);
      if (HAVE_PYTHON) expect(ctypesLoad(plain, ld)).toContain(reason);
      const p = (await checkLibraries({targets: [plain], ldLibraryPath: ld})).problems[0];
      expect(p.summary).toContain(`the loader stops at ${dir}/libv.so with "${reason}": it is an ELF file, but not a shared object the loader can load`);
      expect(p.fix).toContain(`drop ${dir} from LD_LIBRARY_PATH`);
    }
  });

  test('with nothing after it, the fix is to replace the file (no LD_LIBRARY_PATH edit that would not help)', async () => {
    const dir = join(tmp.dir, 'junk-alone');
    write(join(dir, 'libv.so'), '');
    const report = await checkLibraries({targets: [plain], ldLibraryPath: dir});
    expect(report.problems[0].fix).toMatch(/^remove or replace .*libv\.so \(it is an empty file, 0 bytes; if a package installed it, reinstall that package\)$/);
  });

  test('a 0-byte file named to check is an empty file, not a damaged ELF file (exit 2: not a shared object)', async () => {
    const empty = write(join(tmp.dir, 'empty', 'libempty.so'), '');
    await expect(checkLibraries({targets: [empty]})).rejects.toThrow(`${empty} is an empty file (0 bytes), not a shared object`);
    await expect(checkLibraries({targets: [empty]})).rejects.not.toThrow(/damaged/);
    const inDir = await checkLibraries({targets: [join(tmp.dir, 'empty')]});
    expect(inDir.skipped).toEqual([{path: empty, reason: 'an empty file (0 bytes), not a shared object'}]);
    if (HAVE_PYTHON) expect(ctypesLoad(empty)).toContain('file too short');
  });
});

d('output: one block per object and picked library, notes condensed, the headline is what the loader hits first', () => {
  test('eight symbols missing from one shadowing library: one block naming the count, --json keeps each', async () => {
    const base = join(tmp.dir, 'group');
    const names = Array.from({length: 8}, (_, i) => `__nvJitLinkFn${i}_12_4`);
    const script = (syms: string[]) => `libnvJitLink.so.12 { global: ${['__nvJitLinkCreate', ...syms].join('; ')}; local: *; };\n`;
    const fresh = buildLib({out: join(base, 'wheel', 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12', versionScript: script(names),
      source: ['__nvJitLinkCreate', ...names].map((n) => `int ${n}(void){return 0;}`).join('\n')});
    const old = join(base, 'old');
    buildLib({out: join(old, 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12', versionScript: script([]), source: 'int __nvJitLinkCreate(void){return 0;}\n'});
    const user = buildLib({out: join(base, 'cusparse', 'libcusparse.so.12'), soname: 'libcusparse.so.12', link: [fresh], runpath: join(base, 'wheel'),
      source: `${names.map((n) => `int ${n}(void);`).join('\n')}\nint __nvJitLinkCreate(void);\nint f(void){return __nvJitLinkCreate()${names.map((n) => ` + ${n}()`).join('')};}\n`});
    const real = lddVerdict(user, old);
    expect(real.symbols).toHaveLength(8);
    const {runCheckCli} = await import('../../../src/core/elf/check-cli.js');
    const out = await runCheckCli({targets: [user], ldLibraryPath: old, storeVersionsDir: join(base, 'store'), json: false, env: {}});
    expect(out.report.problems.filter((p) => p.kind === 'undefined-symbol')).toHaveLength(8);
    const errors = out.text!.split('\n').filter((l) => l.startsWith('error:'));
    expect(errors).toHaveLength(1);
    // Named in the order the loader meets them; six shown, the rest counted.
    expect(errors[0]).toContain(`bind ${old}/libnvJitLink.so.12, which lacks 8 symbols: `);
    expect(errors[0]).toMatch(/which lacks 8 symbols: (__nvJitLinkFn\d_12_4, ){6}\.\.\. \(2 more\)$/);
    expect(out.text).toContain('8 problems of this object with this file (--json lists each)');
    expect(out.text!.match(/^ {2}fix: /gm)).toHaveLength(1);
  });

  test('--recursive over a tree of plugins: a few note lines, not one per object', async () => {
    const base = join(tmp.dir, 'plugins');
    for (let i = 0; i < 9; i++) buildLib({out: join(base, `sub${i % 3}`, `plugin${i}.so`), source: `extern int host_fn${i}(void); int p${i}(void){return host_fn${i}();}\n`});
    for (let i = 0; i < 4; i++) buildLib({out: join(base, 'bin', `tool${i}`), executable: true, source: 'int main(void){return 0;}\n'});
    const {runCheckCli} = await import('../../../src/core/elf/check-cli.js');
    const out = await runCheckCli({targets: [base], recursive: true, ldLibraryPath: undefined, storeVersionsDir: join(base, 'store'), json: false, env: {}});
    expect(out.report.checked).toHaveLength(9);
    expect(out.report.problems).toHaveLength(9);
    const notes = out.text!.split('\n').filter((l) => l.startsWith('note:'));
    // Five objects by name, one line for the rest, the hint, the executables, the other files (the .c sources).
    expect(notes.filter((l) => /^note: \/.* references 1 unversioned symbol nothing loaded defines: host_fn\d$/.test(l))).toHaveLength(5);
    expect(notes).toHaveLength(9);
    expect(notes).toContainEqual('note: 4 more objects reference 4 unversioned symbols nothing loaded defines (--json lists them)');
    expect(notes.filter((l) => l.includes('executable'))).toHaveLength(1);
    expect(notes.find((l) => l.includes('executable'))).toMatch(/^note: skipped 4 files, each an ELF executable|^note: skipped 4 files, each a position-independent executable/);
  });

  test('the headline names the object the real loader fails on first: dependencies are relocated before their users', async () => {
    const base = join(tmp.dir, 'order');
    const v = (syms: string[]) => `V1 { global: ${syms.join('; ')}; local: *; };\n`;
    const y = buildLib({out: join(base, 'build', 'liby.so'), soname: 'liby.so', source: 'int y(void){return 0;}\n', versionScript: v(['y', 'q'])});
    const x = buildLib({out: join(base, 'build', 'libx.so'), soname: 'libx.so', source: 'int x(void){return 0;}\n', versionScript: v(['x', 'q'])});
    const mid = buildLib({out: join(base, 'lib', 'libmid.so'), soname: 'libmid.so', link: [y], rpath: join(base, 'lib'), source: 'int y(void); int m(void){return y();}\n'});
    const top = buildLib({out: join(base, 'lib', 'libtop.so'), link: [x, mid], rpath: join(base, 'lib'), source: 'int x(void); int m(void); int t(void){return x() + m();}\n'});
    // The copies found at run time define version V1 but lack x and y.
    buildLib({out: join(base, 'lib', 'liby.so'), soname: 'liby.so', source: 'int q(void){return 0;}\n', versionScript: v(['q'])});
    buildLib({out: join(base, 'lib', 'libx.so'), soname: 'libx.so', source: 'int q(void){return 0;}\n', versionScript: v(['q'])});
    expect(lddVerdict(top).symbols).toEqual([`x@V1 ${top}`, `y@V1 ${mid}`]);
    const report = await checkLibraries({targets: [top]});
    expect(report.problems.map((p) => p.object)).toEqual([mid, top]);
    expect(firstProblemLine(report)).toMatch(/^libmid\.so binds .*liby\.so, which lacks y@V1/);
    if (HAVE_PYTHON) expect(ctypesLoad(top)).toContain(`${mid}: undefined symbol: y, version V1`);
  });
});

d('the same cases under --exe (the library dlopened by python3), against ctypes', () => {
  // The interpreter binary itself (python3 on PATH may be a wrapper script, such as a pyenv shim).
  const python = HAVE_PYTHON ? spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], {encoding: 'utf8'}).stdout.trim() : '';
  const t = testIf(HAVE_PYTHON, 'needs python3 for a real dlopen');

  t("';', the empty entry and a junk file: the dlopen model names what ctypes reports", async () => {
    const cwd = join(tmp.dir, 'exe-cwd');
    mkdirSync(cwd, {recursive: true});
    copyFileSync(join(oldDir, 'libv.so'), join(cwd, 'libv.so'));
    const junk = join(tmp.dir, 'exe-junk');
    write(join(junk, 'libv.so'), '');
    const cases: Array<{ld: string; cwd: string; real: string; ours: (r: CheckReport) => void}> = [
      {ld: `${oldDir};/nonexistent`, cwd: tmp.dir, real: "version `V2' not found", ours: (r) => expect(r.problems[0]).toMatchObject({kind: 'version-not-found', chosen: `${oldDir}/libv.so (LD_LIBRARY_PATH entry ${oldDir})`})},
      {ld: ':/nonexistent', cwd, real: "version `V2' not found", ours: (r) => expect(r.problems[0].fix).toContain('remove the empty entry')},
      {ld: `${junk}:${newDir}`, cwd: tmp.dir, real: `${junk}/libv.so: file too short`, ours: (r) => expect(r.problems[0].summary).toContain(`the loader stops at ${junk}/libv.so with "file too short"`)},
    ];
    for (const c of cases) {
      expect(ctypesLoadIn(app, c.ld, c.cwd)).toContain(c.real);
      const report = await checkLibraries({targets: [app], exe: python, ldLibraryPath: c.ld, cwd: c.cwd});
      expect(report.ok).toBe(false);
      c.ours(report);
    }
  });
});

d('a missing CUDA library: the fix names the CUDA release that ships it and the wheel that brings it', () => {
  test('by soname: CUDA 12 wheels are -cu12, CUDA 13 ones unsuffixed (nvidia/cu13/lib), and libcusparse.so.12 is in both', async () => {
    const stubs = join(tmp.dir, 'cuda-stubs');
    const names = ['libnvJitLink.so.13', 'libcublas.so.12', 'libcusparse.so.12', 'libnppc.so.13', 'libcudnn_graph.so.9'];
    const stubLibs = names.map((n) => buildLib({out: join(stubs, n), soname: n, source: 'int stub(void){return 0;}\n'}));
    const user = buildLib({out: join(tmp.dir, 'cuda-user', 'libuser.so'), link: ['-Wl,--no-as-needed', ...stubLibs], source: 'int u(void){return 0;}\n'});
    // A cudaenv store where two versions have libcublas.so.12 (one in lib/, as a pip-assembled tree has it).
    const versions = join(tmp.dir, 'store', 'versions');
    for (const [label, dir] of [['12.4.1', 'lib64'], ['12.10.0', 'lib'], ['11.8.0', 'lib64']]) {
      mkdirSync(join(versions, label, dir), {recursive: true});
      if (label !== '11.8.0') copyFileSync(stubLibs[1], join(versions, label, dir, 'libcublas.so.12'));
    }
    spawnSync('rm', ['-rf', stubs]);
    // The premise, from the real loader: none of them is on this machine's search path (a machine with
    // a full CUDA 12 and 13 in ld.so.cache fails here, saying so).
    for (const n of names) expect(lddVerdict(user).libs).toContain(`${n} => not found`);
    const report = await checkLibraries({targets: [user], ldLibraryPath: undefined});
    const fix = (n: string) => report.problems.find((p) => p.kind === 'not-found' && p.library === n)?.fix;
    expect(fix('libnvJitLink.so.13')).toBe("libnvJitLink.so.13 belongs to CUDA 13: `cudaenv install 13` then `cudaenv use 13`, or `pip install 'nvidia-nvjitlink==13.*'` in a Python environment");
    expect(fix('libcublas.so.12')).toBe('libcublas.so.12 belongs to CUDA 12: `cudaenv install 12` then `cudaenv use 12`, or `pip install nvidia-cublas-cu12` in a Python environment');
    expect(fix('libcusparse.so.12')).toBe('libcusparse.so.12 belongs to CUDA 12 and 13: `cudaenv install 12` then `cudaenv use 12` (or 13), or in a Python environment `pip install nvidia-cusparse-cu12` (CUDA 13: `pip install nvidia-cusparse`)');
    expect(fix('libnppc.so.13')).toContain("`pip install 'nvidia-npp==13.*'`");
    // Already in the store: switching to it is the fix, newest first.
    const withStore = await checkLibraries({targets: [user], ldLibraryPath: undefined, storeVersionsDir: versions});
    expect(withStore.problems.find((p) => p.library === 'libcublas.so.12')?.fix)
      .toBe('CUDA 12.10.0, 12.4.1 in the cudaenv store have libcublas.so.12: `cudaenv use 12.10.0 --ld-library-path prepend` puts its libraries on LD_LIBRARY_PATH');
    expect(withStore.problems.find((p) => p.library === 'libcusparse.so.12')?.fix).toContain('belongs to CUDA 12 and 13');
    // cuDNN's soname major is cuDNN's own, not CUDA's.
    expect(fix('libcudnn_graph.so.9')).toBe("libcudnn_graph.so.9 is cuDNN 9: `cudaenv install VERSION --cudnn 9` for the CUDA version you use, or `pip install 'nvidia-cudnn-cu12==9.*'` in a Python environment (nvidia-cudnn-cu13 for CUDA 13, cu11 for CUDA 11)");
  });

  test("NVIDIA's real manifests agree: these components' majors are the release's, except cuSPARSE in 13 (12.x)", () => {
    for (const label of ['11.8.0', '12.4.1', '13.0.2']) {
      const m = JSON.parse(realManifestText('cuda', label)) as Record<string, {version?: string}>;
      const major = (c: string) => m[c]!.version!.split('.')[0];
      const cuda = label.split('.')[0];
      for (const c of ['cuda_cudart', 'cuda_cupti', 'libcublas', 'cuda_nvrtc', 'libnpp', ...(cuda === '11' ? [] : ['libnvjitlink'])]) expect([label, c, major(c)]).toEqual([label, c, cuda]);
      expect([label, major('libcusparse')]).toEqual([label, cuda === '13' ? '12' : cuda]);
    }
  });
});
