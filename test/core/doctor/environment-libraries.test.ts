import {describe, expect, test} from '@jest/globals';
import {execFileSync, spawnSync} from 'node:child_process';
import {chmodSync, existsSync, linkSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {defaultDeps} from '../../../src/core/doctor/engine.js';
import {runDoctor, renderReport, hasErrors, type DoctorReport} from '../../../src/core/doctor/index.js';
import {runCheckCli} from '../../../src/core/elf/index.js';
import {REPO_ROOT, runCli} from '../../helpers/cli.js';
import {cliForNobody} from '../../helpers/nobody.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {NEEDS} from '../../helpers/capabilities.js';
import type {TempDir} from '../../helpers/tmp.js';
import {buildLib, HAVE_GCC} from '../elf/fixtures.js';
import {HAVE_LDCONFIG, installVersion, setGlobal, withMachine, write, type Machine} from './machine.js';

/**
 * Issue 42: doctor checks what this environment loads (each LD_LIBRARY_PATH entry's and LD_PRELOAD's
 * CUDA libraries, the active toolkit), through the check `cudaenv check` runs, and names the stub
 * libcuda.so.1 by every route. Real CUDA 12.4 libraries from Debian (test/fixtures/fetch-cuda-libs.sh);
 * the stub is built with gcc in the shape of nvidia-cuda-dev's (soname libcuda.so.1, no DT_NEEDED,
 * no symbol versions), as test/core/elf/runtime/runtime-loads.test.ts builds it.
 */
const LIBS = join(REPO_ROOT, 'test', 'fixtures', 'downloaded', 'trixie', 'usr', 'lib', 'x86_64-linux-gnu');
const RUNTIME = join(REPO_ROOT, 'test', 'fixtures', 'downloaded', 'trixie-runtime', 'usr', 'lib', 'x86_64-linux-gnu');
const present = existsSync(join(LIBS, 'libcusparse.so.12')) && existsSync(join(RUNTIME, 'libcudart.so.12'));
const ready = present && HAVE_GCC;
const d = describeIf(ready, present ? 'needs gcc (apt-get install gcc)' : NEEDS.realCudaLibs);

/** A copy of Debian's CUDA 12.4 library directory (hard links: the same files), without `leave`. */
function copyLibs(to: string, leave: string[] = []): string {
  mkdirSync(to, {recursive: true});
  for (const dir of [LIBS, RUNTIME]) {
    for (const name of readdirSync(dir)) {
      if (leave.some((l) => name.startsWith(l)) || existsSync(join(to, name))) continue;
      const src = join(dir, name);
      const link = spawnSync('readlink', [src], {encoding: 'utf8'}).stdout.trim();
      if (link) symlinkSync(link, join(to, name));
      else linkSync(src, join(to, name));
    }
  }
  return to;
}

/** An nvJitLink older than 12.4: version node libnvJitLink.so.12 without the _12_4 entry points. */
function oldJitLink(dir: string): string {
  return buildLib({out: join(dir, 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12', source: 'int __nvJitLinkCreate_12_3(void){return 1;}\n',
    versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkCreate_12_3; local: *; };\n'});
}

function stubIn(dir: string): string {
  return buildLib({out: join(dir, 'libcuda.so.1'), soname: 'libcuda.so.1', extra: ['-nostdlib'], source: 'int cuInit(unsigned f) { return 34; }\nint cuDriverGetVersion(int *v) { return 34; }\n'});
}

/** What the real loader says of a library under an LD_LIBRARY_PATH: `ldd -r` (it relocates, as dlopen with RTLD_NOW). */
function lddR(lib: string, ld: string | undefined): string {
  const r = spawnSync('ldd', ['-r', lib], {encoding: 'utf8', env: ld === undefined ? {} : {LD_LIBRARY_PATH: ld}});
  return `${r.stdout}${r.stderr}`;
}

const errors = (r: DoctorReport) => r.findings.filter((f) => f.severity === 'error');

d('doctor checks the libraries this environment loads (issue 42, 1)', () => {
  let m: Machine;
  let tmp: TempDir;
  withMachine('each', (made, dir) => ([m, tmp] = [made, dir]));

  test('a copy of lib64 lacking a library its others need: the entry\'s libraries fail, as check says, exit 1', async () => {
    // Debian has no libcublas in the fixtures: libcusparse without its libnvJitLink is the same case (a library another needs is missing).
    const entry = copyLibs(join(tmp.dir, 'copy', 'lib64'), ['libnvJitLink']);
    expect(lddR(join(entry, 'libcusparse.so.12'), entry)).toContain('libnvJitLink.so.12 => not found');
    m.env = {...m.env, LD_LIBRARY_PATH: entry};
    const check = await runCheckCli({targets: [entry], ldLibraryPath: entry, storeVersionsDir: m.paths.versions, json: true, env: {}});
    expect(check.exitCode).toBe(1);
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = report.findings.find((x) => x.id === 'env.ld-library-path-libraries-broken');
    expect(f?.severity).toBe('error');
    expect(f!.title).toContain(`LD_LIBRARY_PATH entry ${entry}`);
    const first = check.report.problems.find((p) => p.kind !== 'unversioned-undefined-symbol' && p.impact !== 'feature')!;
    expect(f!.title).toContain(first.summary);
    expect(f!.evidence).toContain(`  why: ${first.explanation}`);
    expect(hasErrors(report)).toBe(true);
    expect(renderReport(report)).not.toContain('No problems found.');
    const cli = runCli(['doctor'], {env: m.env, cwd: m.root});
    expect(cli.status).toBe(1);
    expect(cli.stdout).toMatch(/^ {2}error LD_LIBRARY_PATH entry .*libnvJitLink\.so\.12/m);
  });

  test('an old libnvJitLink.so.12 first on LD_LIBRARY_PATH: the real loader fails on the 12.4 libcusparse, and doctor says so', async () => {
    const old = join(tmp.dir, 'old', 'lib64');
    oldJitLink(old);
    const entry = copyLibs(join(tmp.dir, 'cuda-12.4', 'lib64'));
    const ld = `${old}:${entry}`;
    expect(lddR(join(entry, 'libcusparse.so.12'), ld)).toContain('undefined symbol: __nvJitLinkComplete_12_4');
    expect(lddR(join(entry, 'libcusparse.so.12'), entry)).not.toContain('undefined symbol');
    m.env = {...m.env, LD_LIBRARY_PATH: ld};
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = errors(report).find((x) => x.id === 'env.ld-library-path-libraries-broken' && x.title.includes(entry));
    expect(f?.title).toContain('__nvJitLinkComplete_12_4');
    expect(f!.fix).toContain(old);
  });

  test('the active version holding a library that cannot resolve: toolkit.libraries-broken, exit 1', async () => {
    const dir = installVersion(m, '12.4.1');
    buildLib({out: join(dir, 'lib64', 'libcufft.so.11'), soname: 'libcufft.so.11', source: 'extern int gone(void);\nint cufftPlan1d(void){return gone();}\n',
      link: [buildLib({out: join(tmp.dir, 'elsewhere', 'libgone.so.1'), soname: 'libgone.so.1', source: 'int gone(void){return 0;}\n'})]});
    setGlobal(m, '12.4.1');
    expect(lddR(join(dir, 'lib64', 'libcufft.so.11'), undefined)).toContain('libgone.so.1 => not found');
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = errors(report).find((x) => x.id === 'toolkit.libraries-broken');
    expect(f?.title).toContain('the active toolkit (CUDA 12.4.1)');
    expect(f!.title).toContain('libgone.so.1');
    const cli = runCli(['doctor'], {env: m.env, cwd: m.root});
    expect(cli.status).toBe(1);
    expect(cli.stdout).not.toContain('No problems found.');
  });

  test('a healthy copy of the 12.4 libraries: no error; check\'s warning (no driver here to dlopen) is a warning here too', async () => {
    const entry = copyLibs(join(tmp.dir, 'cuda-12.4', 'lib64'));
    m.env = {...m.env, LD_LIBRARY_PATH: entry};
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.filter((x) => x.id.endsWith('libraries-broken') && x.severity === 'error')).toEqual([]);
    expect(hasErrors(report)).toBe(false);
    expect(report.facts.libraryProblems.filter((p) => p.severity === 'error').map((p) => p.library)).toEqual(
      (await runCheckCli({targets: [entry], ldLibraryPath: entry, storeVersionsDir: m.paths.versions, json: true, env: {}})).report.problems.filter((p) => p.kind !== 'unversioned-undefined-symbol' && p.impact !== 'feature').map((p) => p.library));
  });
});

d('the stub libcuda.so.1 by every route (issue 42, 2)', () => {
  let m: Machine;
  let tmp: TempDir;
  withMachine('each', (made, dir) => ([m, tmp] = [made, dir]));

  const toolkit = (): string => {
    const dir = installVersion(m, '12.4.1');
    // The fake toolkit's libcudart (text) makes way for Debian's real one.
    for (const name of readdirSync(join(dir, 'lib64'))) if (name.startsWith('libcudart')) rmSync(join(dir, 'lib64', name));
    copyLibs(join(dir, 'lib64'));
    setGlobal(m, '12.4.1');
    return dir;
  };
  const stub = (r: DoctorReport) => r.findings.filter((x) => x.id === 'driver.stub-library');

  test('LD_LIBRARY_PATH: named a stub with error 34, never "the loader stops at"', async () => {
    const dir = toolkit();
    const stubs = join(dir, 'lib64', 'stubs');
    stubIn(stubs);
    m.env = {...m.env, LD_LIBRARY_PATH: `${stubs}:${join(dir, 'lib64')}`};
    const report = await runDoctor(m.ctx(), defaultDeps);
    const [f] = stub(report);
    expect(f?.severity).toBe('error');
    expect(f!.title).toContain('CUDA driver is a stub library');
    expect(f!.title).toContain('error 34');
    expect(f!.evidence[0]).toContain(`LD_LIBRARY_PATH entry ${stubs}`);
    expect(report.facts.driver.loadedLibrary).toEqual(expect.objectContaining({path: join(stubs, 'libcuda.so.1'), stub: true}));
    const text = renderReport(report);
    expect(text).not.toContain('the loader stops at');
    expect(text).toMatch(/^Driver .*programs here load .*stubs\/libcuda\.so\.1 \(the CUDA toolkit's stub/m);
  });

  test('LD_PRELOAD: the preloaded stub is what libcudart gets', async () => {
    toolkit();
    const file = stubIn(join(tmp.dir, 'preload'));
    m.env = {...m.env, LD_PRELOAD: file};
    const report = await runDoctor(m.ctx(), defaultDeps);
    const [f] = stub(report);
    expect(f?.severity).toBe('error');
    expect(f!.title).toContain('CUDA driver is a stub library');
    expect(report.facts.driver.loadedLibrary?.stub).toBe(true);
    expect(f!.fix).toContain('LD_PRELOAD');
  });

  test('LD_PRELOAD without any libcudart here: still named, from the loader\'s order', async () => {
    const file = stubIn(join(tmp.dir, 'preload'));
    m.env = {...m.env, LD_PRELOAD: file};
    const report = await runDoctor(m.ctx(), defaultDeps);
    const [f] = stub(report);
    expect(f?.title).toBe(`Programs here load the CUDA toolkit's stub libcuda.so.1, ${file}: every CUDA call fails with error 34, "CUDA driver is a stub library" (cudaErrorStubLibrary)`);
    expect(f!.fix).toBe(`unset LD_PRELOAD (take ${file} out of LD_PRELOAD), so that the driver's libcuda.so.1 is found`);
  });

  testIf(HAVE_LDCONFIG, 'needs ldconfig (apt-get install libc-bin)')('an /etc/ld.so.conf.d file naming the stubs directory: found through the image\'s ld.so.cache, fix names the file', async () => {
    const stubs = join(m.sysroot, 'usr', 'local', 'cuda-12.4', 'lib64', 'stubs');
    stubIn(stubs);
    toolkit();
    write(join(m.sysroot, 'etc/ld.so.conf'), `include ${m.sysroot}/etc/ld.so.conf.d/*.conf\n`);
    write(join(m.sysroot, 'etc/ld.so.conf.d/cuda-stubs.conf'), `${stubs}\n`);
    execFileSync('ldconfig', ['-C', join(m.sysroot, 'etc/ld.so.cache'), '-f', join(m.sysroot, 'etc/ld.so.conf')], {stdio: 'pipe'});
    expect(execFileSync('ldconfig', ['-p', '-C', join(m.sysroot, 'etc/ld.so.cache')], {encoding: 'utf8'})).toContain(`libcuda.so.1 (libc6,x86-64) => ${join(stubs, 'libcuda.so.1')}`);
    const report = await runDoctor(m.ctx(), defaultDeps);
    const [f] = stub(report);
    expect(f?.severity).toBe('error');
    expect(f!.title).toContain('CUDA driver is a stub library');
    // Named as in the image (the sysroot's prefix taken off).
    expect(report.facts.driver.loadedLibrary).toEqual({path: '/usr/local/cuda-12.4/lib64/stubs/libcuda.so.1', rule: expect.stringContaining('ld.so.cache'), stub: true});
    // Without any libcudart: the loader's order still finds the stub in the cache.
    const bare = await runDoctor(m.ctx({env: {...m.env, CUDAENV_VERSION: undefined}}), defaultDeps);
    expect(bare.facts.driver.loadedLibrary?.stub).toBe(true);
  });

  test('DT_RPATH of a library that loads libcudart: the dlopen follows it to the stub', async () => {
    const dir = toolkit();
    const stubs = join(tmp.dir, 'stubs');
    stubIn(stubs);
    buildLib({out: join(dir, 'lib64', 'libcudaapp.so.1'), soname: 'libcudaapp.so.1', source: 'extern int cudaGetDeviceCount(int *);\nint app(void){int n; return cudaGetDeviceCount(&n);}\n',
      link: [join(dir, 'lib64', 'libcudart.so.12')], rpath: `${stubs}:${join(dir, 'lib64')}`});
    expect(execFileSync('readelf', ['-d', join(dir, 'lib64', 'libcudaapp.so.1')], {encoding: 'utf8'})).toMatch(/\(RPATH\)/);
    const report = await runDoctor(m.ctx(), defaultDeps);
    const [f] = stub(report);
    expect(f?.severity).toBe('error');
    expect(f!.evidence.join('\n')).toContain('DT_RPATH');
  });
});

d('bad LD_LIBRARY_PATH entries give a finding with their path (issue 42)', () => {
  let m: Machine;
  let tmp: TempDir;
  withMachine('each', (made, dir) => ([m, tmp] = [made, dir]));

  test('a file and a loop of links: warnings naming them, exit 0, no "No problems found"', () => {
    const file = write(join(tmp.dir, 'afile'), 'x');
    const loop = join(tmp.dir, 'loop');
    symlinkSync(loop, loop);
    m.env = {...m.env, LD_LIBRARY_PATH: `${file}:${loop}`};
    const r = runCli(['doctor', '--json'], {env: m.env, cwd: m.root});
    expect(r.stderr).toBe('');
    const json = JSON.parse(r.stdout) as DoctorReport;
    const bad = json.findings.filter((f) => f.id === 'env.ld-library-path-bad-entry');
    expect(bad.map((f) => f.title)).toEqual([`LD_LIBRARY_PATH entry ${file} is a file, not a directory`, `LD_LIBRARY_PATH entry ${loop} is a loop of symbolic links`]);
    expect(bad.every((f) => f.severity === 'warning')).toBe(true);
    expect(runCli(['doctor'], {env: m.env, cwd: m.root}).stdout).not.toContain('No problems found.');
  });

  testIf(process.getuid?.() === 0, 'needs root (to run doctor as user nobody)')('a directory user nobody may not read: a finding with its path, as nobody', () => {
    const dir = join(tmp.dir, 'secret');
    mkdirSync(dir);
    writeFileSync(join(dir, 'libcudart.so.12'), '');
    chmodSync(dir, 0o311);
    for (const p of [tmp.dir, m.root]) chmodSync(p, 0o755);
    spawnSync('chmod', ['-R', 'a+rwX', m.root]);
    chmodSync(dir, 0o311);
    const env = {...m.env, LD_LIBRARY_PATH: dir};
    // The CLI as nobody can read it (a clone in a 0700 directory, as CI's, is copied: test/helpers/nobody.ts).
    const r = spawnSync(process.execPath, [cliForNobody(), 'doctor', '--json'], {env, cwd: m.root, encoding: 'utf8', uid: 65534, gid: 65534, timeout: 120000});
    expect(r.stderr).toBe('');
    const json = JSON.parse(r.stdout) as DoctorReport;
    const bad = json.findings.find((f) => f.id === 'env.ld-library-path-bad-entry');
    expect(bad?.title).toContain(`LD_LIBRARY_PATH entry ${dir} cannot be listed by this user`);
  });
});

d('property: doctor reports every error check finds in the libraries the environment brings', () => {
  let m: Machine;
  let tmp: TempDir;
  withMachine('all', (made, dir) => ([m, tmp] = [made, dir]));

  test('over generated environments of LD_LIBRARY_PATH orders and LD_PRELOAD', async () => {
    const old = join(tmp.dir, 'old');
    oldJitLink(old);
    const full = copyLibs(join(tmp.dir, 'full'));
    const lacking = copyLibs(join(tmp.dir, 'lacking'), ['libnvJitLink', 'libcudart']);
    const stubs = join(tmp.dir, 'stubs');
    stubIn(stubs);
    const entries = [old, full, lacking, stubs];
    // A fixed pseudo-random sequence: the same environments on every run.
    let seed = 42;
    const next = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    for (let i = 0; i < 8; i++) {
      const order = [...entries].sort(() => next(3) - 1).filter(() => next(4) > 0);
      const preload = next(3) === 0 ? join(stubs, 'libcuda.so.1') : undefined;
      const ld = order.join(':');
      m.env = {...m.env, LD_LIBRARY_PATH: ld, LD_PRELOAD: preload};
      const doctor = await runDoctor(m.ctx(), defaultDeps);
      const targets = order.flatMap((e) => readdirSync(e).filter((n) => /^lib.*\.so/.test(n) && !n.endsWith('.c') && !n.endsWith('.map')).map((n) => join(e, n)));
      if (preload) targets.push(preload);
      if (targets.length === 0) continue;
      const check = await runCheckCli({targets, ldLibraryPath: ld || undefined, storeVersionsDir: m.paths.versions, json: true, env: {LD_PRELOAD: preload}});
      const failing = check.report.problems.filter((p) => p.kind !== 'unversioned-undefined-symbol' && p.impact !== 'feature');
      const errorIds = new Set(errors(doctor).map((f) => f.id));
      for (const p of failing) {
        const got = doctor.facts.libraryProblems.find((x) => x.kind === p.kind && x.object === p.object && x.library === p.library && x.symbol === p.symbol && x.version === p.version);
        expect({env: `LD_LIBRARY_PATH=${ld} LD_PRELOAD=${preload ?? ''}`, problem: p.summary, got: got?.severity}).toEqual({env: `LD_LIBRARY_PATH=${ld} LD_PRELOAD=${preload ?? ''}`, problem: p.summary, got: 'error'});
        expect(errorIds.has(got!.finding)).toBe(true);
      }
      expect(hasErrors(doctor)).toBe(failing.length > 0 || doctor.findings.some((f) => f.severity === 'error'));
      if (!check.report.ok) expect(hasErrors(doctor)).toBe(true);
    }
  });

  test('the line after a switch names the first error check finds, under the same generated environments', async () => {
    const {switchCheck} = await import('../../../src/core/shell/switch-check.js');
    const old = join(tmp.dir, 'sw-old');
    oldJitLink(old);
    const lacking = copyLibs(join(tmp.dir, 'sw-lacking'), ['libnvJitLink', 'libcudart']);
    const stubs = join(tmp.dir, 'sw-stubs');
    stubIn(stubs);
    // The version switched to: Debian's 12.4 libraries as its lib64.
    const version = installVersion(m, '12.4.1');
    rmSync(join(version, 'lib64'), {recursive: true, force: true});
    copyLibs(join(version, 'lib64'));
    let seed = 7;
    const next = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    let failed = 0;
    for (let i = 0; i < 8; i++) {
      const order = [old, lacking, stubs].sort(() => next(3) - 1).filter(() => next(3) > 0);
      const preload = next(3) === 0 ? join(stubs, 'libcuda.so.1') : undefined;
      // What the shell has after the switch: the version's lib64 first, then the shell's entries.
      const ld = [join(version, 'lib64'), ...order].join(':');
      const env = {PATH: '/nonexistent', HOME: tmp.dir, LD_LIBRARY_PATH: ld, ...(preload ? {LD_PRELOAD: preload} : {})};
      const check = await runCheckCli({targets: [join(version, 'lib64')], ldLibraryPath: ld, storeVersionsDir: m.paths.versions, json: false, env});
      const line = (await switchCheck(m.paths, '12.4.1', env)).line;
      const last = check.text!.split('\n').pop()!;
      if (!check.report.ok) {
        failed++;
        expect({ld, preload, line}).toEqual({ld, preload, line: `cudaenv: CUDA 12.4.1: ${last}`});
      }
    }
    // The generated environments include failing ones: the property was exercised.
    expect(failed).toBeGreaterThan(0);
  });
});
