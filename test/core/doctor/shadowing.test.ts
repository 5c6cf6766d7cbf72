import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {defaultDeps} from '../../../src/core/doctor/engine.js';
import {renderReport, runDoctor} from '../../../src/core/doctor/index.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {makeTempDir, type TempDir} from '../../helpers/tmp.js';
import {HAVE_GCC, buildLib, fakePython, installVersion, seedFailure, torchVersionPy, type Machine, makeMachine, withMachine} from './machine.js';
import {describeIf} from '../../helpers/skip.js';
import {NEEDS, PYTHON_EXE} from '../../helpers/capabilities.js';

const maybe = describeIf(HAVE_GCC, 'needs gcc (apt-get install gcc)');

/** What the real loader says about a library under an LD_LIBRARY_PATH (the oracle). */
function lddR(lib: string, ld: string | undefined): string {
  const env: NodeJS.ProcessEnv = {...process.env};
  if (ld === undefined) delete env.LD_LIBRARY_PATH;
  else env.LD_LIBRARY_PATH = ld;
  const r = spawnSync('ldd', ['-r', lib], {env, encoding: 'utf8'});
  return `${r.stdout}${r.stderr}`;
}

maybe('LD_LIBRARY_PATH entries against the pip CUDA wheels, decided by the check engine', () => {
  let tmp: {dir: string; cleanup: () => void};
  let m: Machine;
  let oldLib: string;
  let sitePackages: string;
  let cusparse: string;
  beforeAll(() => {
    tmp = makeTempDir();
    m = makeMachine(tmp.dir);
    const old = installVersion(m, '12.3.2');
    ({oldLib, sitePackages} = seedFailure(m, old));
    cusparse = join(sitePackages, 'nvidia/cusparse/lib/libcusparse.so.12');
    torchVersionPy(sitePackages, '2.5.0+cu124', '12.4');
    fakePython(m, [sitePackages]);
  });
  afterAll(() => tmp.cleanup());

  test('the seed failure: an older toolkit on LD_LIBRARY_PATH is an error with the symbol, the entry and the fix', async () => {
    // The premise, from the real loader.
    expect(lddR(cusparse, oldLib)).toContain('undefined symbol: __nvJitLinkComplete_12_4');
    expect(lddR(cusparse, undefined)).not.toContain('undefined symbol');

    m.env = {...m.env, LD_LIBRARY_PATH: oldLib};
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = report.findings.find((x) => x.id === 'env.ld-library-path-breaks-python');
    expect(f).toBeDefined();
    expect(f!.severity).toBe('error');
    expect(f!.title).toContain(`LD_LIBRARY_PATH entry ${oldLib}`);
    expect(f!.title).toContain('nvidia/cusparse/lib/libcusparse.so.12');
    expect(f!.title).toContain(join(oldLib, 'libnvJitLink.so.12'));
    expect(f!.title).toContain('__nvJitLinkComplete_12_4@libnvJitLink.so.12');
    expect(f!.evidence.join('\n')).toContain('CUDA 12.3.2');
    expect(f!.fix).toContain('cudaenv use 12.3.2 --ld-library-path none');
    expect(f!.fix).toContain('unset LD_LIBRARY_PATH');
    expect(report.facts.ldLibraryPath).toEqual([expect.objectContaining({entry: oldLib, toolkitVersion: '12.3.2', breaks: 1, shadows: 1})]);
    expect(report.facts.python.cudaLibraryDirs).toEqual([join(sitePackages, 'nvidia/cusparse/lib'), join(sitePackages, 'nvidia/nvjitlink/lib')]);
    expect(report.facts.python.torch?.cuda).toBe('12.4');
  });

  test('LD_PRELOAD of the old library breaks the wheel as the loader says, with or without LD_LIBRARY_PATH', async () => {
    const old = join(oldLib, 'libnvJitLink.so.12');
    const env: NodeJS.ProcessEnv = {...process.env, LD_PRELOAD: old};
    delete env.LD_LIBRARY_PATH;
    const real = spawnSync('ldd', ['-r', cusparse], {env, encoding: 'utf8'});
    expect(`${real.stdout}${real.stderr}`).toContain('undefined symbol: __nvJitLinkComplete_12_4');
    const saved = m.env;
    m.env = {...saved, LD_PRELOAD: old};
    delete m.env.LD_LIBRARY_PATH;
    try {
      const report = await runDoctor(m.ctx(), defaultDeps);
      const f = report.findings.find((x) => x.id === 'pytorch.libraries-broken');
      expect(f?.severity).toBe('error');
      expect(f!.evidence.join('\n')).toContain('__nvJitLinkComplete_12_4');
      // Issue 37, 2f: the entry is the path itself, said once ("picks X by the LD_PRELOAD entry X" before).
      expect(f!.evidence.join('\n')).toContain(`${old} is an entry of LD_PRELOAD, loaded before anything else; that file lacks __nvJitLinkComplete_12_4`);
      expect(f!.fix).toBe(`take ${old} out of LD_PRELOAD (\`unset LD_PRELOAD\` if it is the only entry), or preload a libnvJitLink.so.12 from CUDA 12.4 or newer`);
    } finally {
      m.env = saved;
    }
  });

  test('without that entry nothing is reported about LD_LIBRARY_PATH', async () => {
    const other = join(tmp.dir, 'plain-libs');
    buildLib({out: join(other, 'libz-like.so.1'), soname: 'libz-like.so.1', source: 'int f(void){return 0;}\n'});
    m.env = {...m.env, LD_LIBRARY_PATH: other};
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.filter((x) => x.id.startsWith('env.ld-library-path'))).toEqual([]);
    expect(report.findings.filter((x) => x.id === 'pytorch.libraries-broken')).toEqual([]);
    expect(report.facts.ldLibraryPath).toEqual([]);
  });

  test('the wheels\' own directories on LD_LIBRARY_PATH bind the same files: no shadow', async () => {
    const own = join(sitePackages, 'nvidia/nvjitlink/lib');
    m.env = {...m.env, LD_LIBRARY_PATH: own};
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.filter((x) => x.id.startsWith('env.ld-library-path'))).toEqual([]);
    expect(report.facts.ldLibraryPath).toEqual([expect.objectContaining({entry: own, shadows: 0, breaks: 0})]);
  });

  test('an entry that redirects a wheel\'s dependency without breaking it is a warning; outside the store the fix is by hand', async () => {
    const newer = makeFakeToolkit(join(tmp.dir, 'opt/cuda-12.6'), {version: '12.6.3'});
    buildLib({
      out: join(newer, 'lib64', 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12',
      source: 'int __nvJitLinkCreate_12_3(void){return 1;}\nint __nvJitLinkComplete_12_4(void){return 2;}\nint __nvJitLinkComplete_12_6(void){return 3;}\n',
      versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkCreate_12_3; __nvJitLinkComplete_12_4; __nvJitLinkComplete_12_6; local: *; };\n',
    });
    const entry = join(newer, 'lib64');
    expect(lddR(cusparse, entry)).not.toContain('undefined symbol');
    m.env = {...m.env, LD_LIBRARY_PATH: `${entry}:/nonexistent`};
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = report.findings.find((x) => x.id.startsWith('env.ld-library-path'));
    expect(f).toMatchObject({id: 'env.ld-library-path-shadows-python', severity: 'warning'});
    expect(f!.title).toContain('libnvJitLink.so.12');
    expect(f!.evidence[0]).toContain(`instead of ${join(sitePackages, 'nvidia/nvjitlink/lib')}`);
    expect(f!.fix).toBe(`export LD_LIBRARY_PATH=/nonexistent (drop ${entry}; pip wheels bring their own CUDA libraries)`);
  });
});

maybe('an LD_LIBRARY_PATH entry that supplies what nothing else has', () => {
  test('is not a shadow: without it the wheel\'s dependency is not found, so dropping it is no fix', async () => {
    const tmp = makeTempDir();
    try {
      const m = makeMachine(tmp.dir);
      const sp = join(tmp.dir, 'venv/lib/python3.11/site-packages');
      // A toolkit's lib64 (doctor weighs the CUDA entries of LD_LIBRARY_PATH), with a library no wheel brings.
      const entry = join(makeFakeToolkit(join(tmp.dir, 'opt/cuda-12.6'), {version: '12.6.3'}), 'lib64');
      const only = buildLib({out: join(entry, 'libvendoronly.so.1'), soname: 'libvendoronly.so.1', source: 'int vendor_fn(void){return 0;}\n'});
      const wheel = buildLib({
        out: join(sp, 'nvidia/extra/lib/libextra.so.1'), soname: 'libextra.so.1', source: 'int vendor_fn(void);\nint extra_fn(void){return vendor_fn();}\n',
        link: [only], rpath: '$ORIGIN', runpath: true,
      });
      fakePython(m, [sp]);
      // The premise, from the real loader: found only through the entry.
      expect(lddR(wheel, entry)).toContain(`libvendoronly.so.1 => ${only}`);
      expect(lddR(wheel, undefined)).toContain('libvendoronly.so.1 => not found');
      m.env = {...m.env, LD_LIBRARY_PATH: entry};
      const report = await runDoctor(m.ctx(), defaultDeps);
      expect(report.findings.filter((x) => x.severity !== 'info' && (x.id.startsWith('env.ld-library-path') || x.id.startsWith('pytorch.libraries')))).toEqual([]);
      expect(report.findings.filter((x) => x.id === 'env.ld-library-path-supplies-python')).toEqual([{
        id: 'env.ld-library-path-supplies-python', severity: 'info', fix: null,
        title: `LD_LIBRARY_PATH entry ${entry} provides libvendoronly.so.1, which the Python environment's CUDA libraries find nowhere else: keep it`,
        evidence: [`nvidia/extra/lib/libextra.so.1 needs libvendoronly.so.1: ${only}; not found without this entry`],
      }]);
      expect(report.facts.ldLibraryPath).toEqual([expect.objectContaining({entry, shadows: 0, breaks: 0, supplies: 1})]);
      // The section's summary says the same (it said "no effect on the pip wheels").
      expect(renderReport(report)).toContain(`LD_LIBRARY_PATH has CUDA libraries in ${entry} (CUDA 12.6.3; provides libraries the pip wheels need)`);
    } finally {
      tmp.cleanup();
    }
  });
});

maybe('the Python environment\'s own CUDA libraries', () => {
  test('a wheel library whose dependency is missing everywhere is an error of its own, not blamed on LD_LIBRARY_PATH', async () => {
    const tmp = makeTempDir();
    try {
      const m = makeMachine(tmp.dir);
      const sp = join(tmp.dir, 'venv/lib/python3.11/site-packages');
      const cupti = buildLib({out: join(tmp.dir, 'build/libcupti.so.12'), soname: 'libcupti.so.12', source: 'int cuptiGet(void){return 0;}\n'});
      buildLib({
        out: join(sp, 'torch/lib/libtorch_cuda.so'), soname: 'libtorch_cuda.so', source: 'extern int cuptiGet(void);\nint t(void){return cuptiGet();}\n',
        link: [cupti], rpath: '$ORIGIN/../../nvidia/cuda_cupti/lib', runpath: true,
      });
      fakePython(m, [sp]);
      expect(lddR(join(sp, 'torch/lib/libtorch_cuda.so'), undefined)).toContain('libcupti.so.12 => not found');
      const report = await runDoctor(m.ctx(), defaultDeps);
      const f = report.findings.find((x) => x.id === 'pytorch.libraries-broken');
      expect(f?.severity).toBe('error');
      expect(f!.evidence[0]).toContain('libcupti.so.12 not found');
      expect(report.findings.filter((x) => x.id.startsWith('env.ld-library-path'))).toEqual([]);
    } finally {
      tmp.cleanup();
    }
  });
});

maybe('issue 12: LD_LIBRARY_PATH written with \';\', and shadowing below the wheels\' own libraries', () => {
  let tmp: TempDir;
  let m: Machine;
  withMachine('all', (made, dir) => ([m, tmp] = [made, dir]));

  test("'/old;/x': the entry before ';' is the one that breaks the wheel, not the wheel itself", async () => {
    const old = installVersion(m, '12.3.2');
    const {oldLib, sitePackages} = seedFailure(m, old);
    fakePython(m, [sitePackages]);
    const ld = `${oldLib};/nonexistent`;
    // The real loader splits on ';' too.
    expect(lddR(join(sitePackages, 'nvidia/cusparse/lib/libcusparse.so.12'), ld)).toContain('undefined symbol: __nvJitLinkComplete_12_4');
    m.env = {...m.env, LD_LIBRARY_PATH: ld};
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.map((f) => f.id)).not.toContain('pytorch.libraries-broken');
    const f = report.findings.find((x) => x.id === 'env.ld-library-path-breaks-python');
    expect(f!.title).toContain(`LD_LIBRARY_PATH entry ${oldLib}`);
    expect(f!.fix).toContain('export LD_LIBRARY_PATH=/nonexistent');
    expect(f!.fix).not.toContain(ld);
    expect(report.facts.ldLibraryPath).toEqual([expect.objectContaining({entry: oldLib, index: 0, breaks: 1})]);
  });

  test('torch/lib/libtorch.so -> a library outside Python -> libcurand.so.10, redirected by LD_LIBRARY_PATH, is a shadow', async () => {
    const sp = join(tmp.dir, 'venv2/lib/python3.11/site-packages');
    const sys = join(tmp.dir, 'usr-lib');
    const curand = buildLib({out: join(sys, 'cuda', 'libcurand.so.10'), soname: 'libcurand.so.10', source: 'int curandCreateGenerator(void){return 0;}\n'});
    const middle = buildLib({out: join(sys, 'libsys.so.1'), soname: 'libsys.so.1', source: 'extern int curandCreateGenerator(void);\nint s(void){return curandCreateGenerator();}\n',
      link: [curand], rpath: join(sys, 'cuda'), runpath: true});
    const torch = buildLib({out: join(sp, 'torch/lib/libtorch.so'), soname: 'libtorch.so', source: 'extern int s(void);\nint t(void){return s();}\n',
      link: [middle], rpath: sys, runpath: true});
    const tk = installVersion(m, '11.8.0');
    buildLib({out: join(tk, 'lib64', 'libcurand.so.10'), soname: 'libcurand.so.10', source: 'int curandCreateGenerator(void){return 1;}\n'});
    const entry = join(tk, 'lib64');
    // The premise, from the real loader: the entry redirects the system library's libcurand, and nothing breaks.
    const real = lddR(torch, entry);
    expect(real).toContain(`libcurand.so.10 => ${entry}/libcurand.so.10`);
    expect(real).not.toContain('undefined symbol');
    expect(lddR(torch, undefined)).toContain(`libcurand.so.10 => ${sys}/cuda/libcurand.so.10`);
    fakePython(m, [sp]);
    m.env = {...m.env, LD_LIBRARY_PATH: entry};
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = report.findings.find((x) => x.id === 'env.ld-library-path-shadows-python');
    expect(f).toMatchObject({severity: 'warning'});
    expect(f!.title).toContain('libcurand.so.10');
    expect(f!.evidence[0]).toBe(`${middle} (loaded for torch/lib/libtorch.so) needs libcurand.so.10: ${entry}/libcurand.so.10 instead of ${sys}/cuda/libcurand.so.10`);
    expect(f!.fix).toContain('cudaenv use 11.8.0 --ld-library-path none');
    expect(report.facts.ldLibraryPath).toEqual([expect.objectContaining({entry, shadows: 1, breaks: 0})]);
  });

  test('several symbols one shadowing library lacks are one evidence entry, with their count', async () => {
    const mm = makeMachine(join(tmp.dir, 'many'));
    const sp = join(mm.root, 'venv/lib/python3.11/site-packages');
    const names = ['barA', 'barB', 'barC', 'barD', 'barE'];
    const script = (syms: string[]) => `libbar.so.1 { global: ${['barInit', ...syms].join('; ')}; local: *; };\n`;
    const bar = buildLib({out: join(sp, 'nvidia/bar/lib/libbar.so.1'), soname: 'libbar.so.1', versionScript: script(names),
      source: ['barInit', ...names].map((n) => `int ${n}(void){return 0;}`).join('\n')});
    const foo = buildLib({out: join(sp, 'nvidia/foo/lib/libfoo.so.1'), soname: 'libfoo.so.1', link: [bar], rpath: '$ORIGIN/../../bar/lib', runpath: true,
      source: `${names.map((n) => `int ${n}(void);`).join(' ')}\nint f(void){return ${names.map((n) => `${n}()`).join(' + ')};}\n`});
    const tk = installVersion(mm, '12.1.1');
    buildLib({out: join(tk, 'lib64/libbar.so.1'), soname: 'libbar.so.1', versionScript: script([]), source: 'int barInit(void){return 0;}\n'});
    const entry = join(tk, 'lib64');
    expect(lddR(foo, entry).match(/undefined symbol: bar[A-E], version libbar\.so\.1/g)).toHaveLength(5);
    fakePython(mm, [sp]);
    mm.env = {...mm.env, LD_LIBRARY_PATH: entry};
    const report = await runDoctor(mm.ctx(), defaultDeps);
    const f = report.findings.find((x) => x.id === 'env.ld-library-path-breaks-python')!;
    const lines = f.evidence.filter((l) => l.startsWith(foo));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^${foo.replace(/[.]/g, '\\.')}: 5 undefined symbols \\((bar[A-E], ){4}\\.\\.\\. 1 more\\) in libbar\\.so\\.1$`));
    expect(f.evidence.filter((l) => l.startsWith('  loader picks:'))).toHaveLength(1);
  });

  test('a wheel library cut to 0 bytes (an interrupted pip install): the loader stops at it, and doctor says so', async () => {
    const mm = makeMachine(join(tmp.dir, 'empty-wheel'));
    const sp = join(mm.root, 'venv/lib/python3.11/site-packages');
    const cupti = buildLib({out: join(mm.root, 'build/libcupti.so.12'), soname: 'libcupti.so.12', source: 'int cuptiGet(void){return 0;}\n'});
    const torch = buildLib({out: join(sp, 'torch/lib/libtorch_cuda.so'), soname: 'libtorch_cuda.so', source: 'extern int cuptiGet(void);\nint t(void){return cuptiGet();}\n',
      link: [cupti], rpath: '$ORIGIN/../../nvidia/cuda_cupti/lib', runpath: true});
    const empty = join(sp, 'nvidia/cuda_cupti/lib/libcupti.so.12');
    mkdirSync(join(sp, 'nvidia/cuda_cupti/lib'), {recursive: true});
    writeFileSync(empty, '');
    // As ld.so names it: the $ORIGIN path, not normalised.
    const asLoaded = join(sp, 'torch/lib') + '/../../nvidia/cuda_cupti/lib/libcupti.so.12';
    expect(lddR(torch, undefined)).toContain(`${asLoaded}: file too short`);
    fakePython(mm, [sp]);
    const report = await runDoctor(mm.ctx(), defaultDeps);
    const f = report.findings.find((x) => x.id === 'pytorch.libraries-broken')!;
    expect(f.evidence[0]).toBe(`${torch}: libcupti.so.12: the loader stops at ${asLoaded} (DT_RUNPATH entry $ORIGIN/../../nvidia/cuda_cupti/lib of ${torch})`);
    expect(f.fix).toContain(`remove or replace ${asLoaded} (it is an empty file, 0 bytes; if a package installed it, reinstall that package)`);
  });
});

describeIf(HAVE_GCC && PYTHON_EXE !== null && process.platform === 'linux' && process.arch === 'x64', `${NEEDS.tool('python3')}; gcc on x86-64 Linux`)(
  'the wheels checked as the interpreter loads them (check --exe)', () => {
    test('a wheel library whose initial-exec TLS block does not fit: import fails in Python, ldd -r sees nothing, doctor says so', async () => {
      const tmp = makeTempDir();
      try {
        const m = makeMachine(tmp.dir);
        const sp = join(tmp.dir, 'venv/lib/python3.11/site-packages');
        // libgomp, jemalloc and the OpenMP runtimes access their thread-locals this way; 64 KB is past any surplus.
        const lib = buildLib({out: join(sp, 'nvidia/tlsheavy/lib/libtlsheavy.so.1'), soname: 'libtlsheavy.so.1',
          source: '__thread char big[65536] __attribute__((tls_model("initial-exec")));\nchar *get_big(void){return big;}\n'});
        // The premise, from the real loaders: ldd maps it at start-up (room is made then); Python's dlopen fails.
        expect(lddR(lib, undefined)).not.toMatch(/error|undefined symbol/);
        const py = spawnSync(PYTHON_EXE!, ['-c', 'import ctypes, sys; ctypes.CDLL(sys.argv[1])', lib], {encoding: 'utf8'});
        expect(py.stderr).toContain(`${lib}: cannot allocate memory in static TLS block`);

        // A python3 that says which binary it is: the libraries are checked as that binary dlopens them.
        fakePython(m, [sp], 'python3', PYTHON_EXE!);
        const report = await runDoctor(m.ctx(), defaultDeps);
        expect(report.facts.python.program).toBe(PYTHON_EXE);
        expect(renderReport(report)).toContain(`1 pip CUDA library dir(s) (checked as ${PYTHON_EXE} loads them)`);
        const f = report.findings.find((x) => x.id === 'pytorch.libraries-broken')!;
        expect(f.severity).toBe('error');
        expect(f.evidence[0]).toContain(lib);
        expect(f.evidence.join('\n')).toContain('static TLS');
        expect(f.evidence.at(-1)).toBe(`checked as ${PYTHON_EXE} loads them (cudaenv check --exe ${PYTHON_EXE} ${join(sp, 'nvidia/tlsheavy/lib')})`);

        // A wrapper script no process starts as (sys.executable unknown): checked as ldd loads them, which cannot see it.
        fakePython(m, [sp]);
        const plain = await runDoctor(m.ctx(), defaultDeps);
        expect(plain.facts.python.program).toBeNull();
        expect(plain.findings.map((x) => x.id)).not.toContain('pytorch.libraries-broken');
      } finally {
        tmp.cleanup();
      }
    });
  });
