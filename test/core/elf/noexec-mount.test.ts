import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../src/core/elf/index.js';
import {noexecMountOf} from '../../../src/core/elf/read/machine/mounts.js';
import {CAN_MOUNT_TMPFS, NEEDS} from '../../helpers/capabilities.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildDlopenDriver, buildLib, HAVE_GCC} from './fixtures.js';

/**
 * Libraries on a file system mounted noexec (HPC scratch, /tmp, /dev/shm, some home
 * directories): the kernel refuses to map their code, and ld.so stops with "failed to map
 * segment from shared object". A tmpfs is mounted noexec for these tests (root only), and the
 * real loader is asked every question the model answers.
 */
let tmp: {dir: string; cleanup: () => void};
let noexec: string;
let mounted = false;
let driver: string;
let lib: string;
let needs: string;

const env = (extra: Record<string, string> = {}) => ({PATH: process.env.PATH, ...extra});

describeIf(HAVE_GCC && CAN_MOUNT_TMPFS, HAVE_GCC ? NEEDS.tmpfs : NEEDS.tool('gcc'))('libraries on a noexec file system', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-noexec-');
    noexec = join(tmp.dir, 'scratch');
    mkdirSync(noexec);
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'noexec,size=16m', 'tmpfs', noexec], {encoding: 'utf8'});
    if (m.status !== 0) throw new Error(`cannot mount a tmpfs noexec at ${noexec}: ${m.stderr}`);
    mounted = true;
    const good = buildLib({out: join(tmp.dir, 'good', 'libd.so'), soname: 'libd.so', source: 'int d(void){return 1;}\n'});
    lib = join(noexec, 'libd.so');
    copyFileSync(good, lib);
    // Found through its RUNPATH on the noexec mount.
    needs = buildLib({out: join(tmp.dir, 'libneeds.so'), soname: 'libneeds.so', source: 'int d(void);\nint n(void){return d();}\n', link: [good], runpath: noexec});
    driver = buildDlopenDriver(join(tmp.dir, 'driver'));
  });
  afterAll(() => {
    if (mounted) spawnSync('umount', ['-l', noexec]);
    tmp?.cleanup();
  });

  test('the mount is read from /proc/self/mountinfo', () => {
    expect(noexecMountOf(lib)).toBe(noexec);
    expect(noexecMountOf(needs)).toBeNull();
  });

  test('a dependency there stops the load, where ldd -r and a dlopen stop', async () => {
    const ldd = spawnSync('ldd', ['-r', needs], {encoding: 'utf8', env: env()});
    expect(`${ldd.stdout}${ldd.stderr}`).toContain('libd.so: failed to map segment from shared object');
    expect(`${ldd.stdout}${ldd.stderr}`).not.toContain('undefined symbol');
    expect(spawnSync(driver, [needs], {encoding: 'utf8', env: env()}).stdout).toBe('ERR libd.so: failed to map segment from shared object\n');
    const report = await checkLibraries({targets: [needs], ldLibraryPath: undefined});
    expect(report.ok).toBe(false);
    // The stop ends the load (in trace mode too): no reference it would have bound is reported.
    expect(report.problems.map((p) => [p.kind, p.object, p.library])).toEqual([['noexec-mount', needs, 'libd.so']]);
    expect(report.problems[0].chosen).toBe(`${lib} (DT_RUNPATH entry ${noexec} of ${needs})`);
    expect(firstProblemLine(report)).toContain(`the loader cannot map ${lib}: "failed to map segment from shared object" (${noexec} is mounted noexec)`);
    expect(report.problems[0].fix).toContain(`sudo mount -o remount,exec ${noexec}`);
    const exe = await checkLibraries({targets: [needs], exe: driver, ldLibraryPath: undefined, strict: true});
    expect(exe.problems.map((p) => p.kind)).toEqual(['noexec-mount']);
  });

  test('an LD_LIBRARY_PATH entry on the mount shadows a good copy: dropping the entry is the fix', async () => {
    const other = buildLib({out: join(tmp.dir, 'other', 'libneeds2.so'), soname: 'libneeds2.so', source: 'int d(void);\nint n(void){return d();}\n',
      link: [join(tmp.dir, 'good', 'libd.so')], runpath: join(tmp.dir, 'good')});
    expect(spawnSync(driver, [other], {encoding: 'utf8', env: env({LD_LIBRARY_PATH: noexec})}).stdout).toContain('failed to map segment from shared object');
    expect(spawnSync(driver, [other], {encoding: 'utf8', env: env()}).stdout).toBe('OK\n');
    const report = await checkLibraries({targets: [other], ldLibraryPath: noexec});
    expect(report.problems.map((p) => p.kind)).toEqual(['noexec-mount']);
    expect(report.problems[0].shadowed).toBe(`${join(tmp.dir, 'good', 'libd.so')} (DT_RUNPATH entry ${join(tmp.dir, 'good')} of ${other}), which the loader never reaches`);
    expect(report.problems[0].fix).toMatch(/^(unset LD_LIBRARY_PATH|.*LD_LIBRARY_PATH)/);
    expect((await checkLibraries({targets: [other], ldLibraryPath: undefined})).ok).toBe(true);
  });

  test('the library itself there: ld.so cannot map it; a program there does not start', async () => {
    const traced = spawnSync('/lib64/ld-linux-x86-64.so.2', [lib], {encoding: 'utf8', env: env({LD_TRACE_LOADED_OBJECTS: '1'})});
    expect(traced.stderr).toContain(`${lib}: failed to map segment from shared object`);
    const report = await checkLibraries({targets: [lib], ldLibraryPath: undefined});
    expect(report.problems.map((p) => [p.kind, p.object])).toEqual([['noexec-mount', lib]]);
    expect(report.problems[0].summary).toBe(`the loader cannot map ${lib}: "failed to map segment from shared object" (${noexec} is mounted noexec)`);
    const prog = join(noexec, 'driver');
    copyFileSync(driver, prog);
    spawnSync('chmod', ['755', prog]);
    const started = spawnSync(prog, [needs], {encoding: 'utf8', env: env()});
    expect(started.error && (started.error as NodeJS.ErrnoException).code).toBe('EACCES');
    const exe = await checkLibraries({targets: [needs], exe: prog, ldLibraryPath: undefined, strict: true});
    expect(exe.problems.map((p) => [p.kind, p.object])).toEqual([['noexec-mount', prog]]);
    expect(exe.problems[0].summary).toContain('the kernel refuses to start it ("Permission denied")');
  });

  test('a preload there is dropped with ld.so\'s warning, and the program goes on', async () => {
    const good = join(tmp.dir, 'good', 'libd.so');
    const run = spawnSync(driver, [good], {encoding: 'utf8', env: env({LD_PRELOAD: lib})});
    expect(run.stderr).toContain(`object '${lib}' from LD_PRELOAD cannot be preloaded (failed to map segment from shared object): ignored`);
    expect(run.stdout).toBe('OK\n');
    const report = await checkLibraries({targets: [good], exe: driver, preload: [lib], ldLibraryPath: undefined, strict: true});
    expect([report.ok, report.problems]).toEqual([true, []]);
    expect(report.skipped).toEqual([{path: `${lib}: failed to map segment from shared object`, reason: 'LD_PRELOAD entry cannot be preloaded: ignored (as ld.so does)'}]);
  });

  test('under CUDAENV_SYSROOT the mounts are not the image\'s: not looked at', async () => {
    const report = await checkLibraries({targets: [needs], ldLibraryPath: undefined, sysroot: join(tmp.dir, 'image')});
    expect(report.problems.map((p) => p.kind)).not.toContain('noexec-mount');
  });
});
