import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, realpathSync, symlinkSync, unlinkSync, writeFileSync} from 'node:fs';
import {basename, dirname, join} from 'node:path';
import {checkLibraries} from '../../../src/core/elf/index.js';
import {formatSkipped, formatTree} from '../../../src/core/elf/explain/format-report.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {runCli} from '../../helpers/cli.js';
import {buildLib, HAVE_GCC} from './fixtures.js';

/**
 * Issue 12 item 8: under CUDAENV_SYSROOT, absolute links inside the image (Debian's alternatives:
 * libblas.so.3 -> /etc/alternatives/... -> /usr/lib/.../blas/libblas.so.3) resolve in the image.
 * The oracle is the real loader run in the image with chroot (root only).
 */
const HOST_LIBC = '/lib/x86_64-linux-gnu/libc.so.6';
const HOST_LDSO = '/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2';
const IS_ROOT = process.getuid?.() === 0;
const d = describeIf(HAVE_GCC && process.arch === 'x64', 'needs gcc on x86-64');
const inChroot = testIf(IS_ROOT && existsSync(HOST_LIBC) && existsSync(HOST_LDSO), 'needs root (chroot) and a Debian-layout x86-64 glibc');

// A name no host has under /etc/alternatives: resolving it on the host finds nothing.
const ALT = '/etc/alternatives/libcudaenv-test-blas.so.3-x86_64-linux-gnu';

let tmp: {dir: string; cleanup: () => void};
let img: string;
let app: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-sysroot-');
  img = join(realpathSync(tmp.dir), 'img');
  if (!HAVE_GCC) return;
  const usrlib = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
  // The real library in a subdirectory no search reaches, found only through the two absolute links.
  const real = buildLib({out: join(usrlib, 'blas', 'libblas.so.3'), soname: 'libblas.so.3', source: 'int dgemm_(void){return 0;}\n', extra: ['-nostdlib']});
  mkdirSync(join(img, 'etc', 'alternatives'), {recursive: true});
  symlinkSync('/usr/lib/x86_64-linux-gnu/blas/libblas.so.3', join(img, ALT));
  symlinkSync(ALT, join(usrlib, 'libblas.so.3'));
  app = buildLib({out: join(usrlib, 'libapp.so'), soname: 'libapp.so', link: [real], source: 'int dgemm_(void); int f(void){return dgemm_();}\n', extra: ['-nostdlib']});
  // merged /usr with an absolute link, and the interpreter link Debian ships (absolute too).
  symlinkSync('/usr/lib', join(img, 'lib'));
  mkdirSync(join(img, 'lib64'), {recursive: true});
  symlinkSync('/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2', join(img, 'lib64', 'ld-linux-x86-64.so.2'));
});
afterAll(() => tmp?.cleanup());

/**
 * Libraries of the image that name /opt/vendor/lib (in the image only) by DT_RPATH, DT_RUNPATH and a
 * DT_NEEDED path, and one whose DT_RPATH names a directory only the host has; built once.
 */
let vendorLibs: Record<'vendor' | 'plain' | 'written' | 'viaRpath' | 'viaRunpath' | 'hostRpath' | 'byPath' | 'byName' | 'hostOnly', string> | undefined;
function vendorFixture(): NonNullable<typeof vendorLibs> {
  if (vendorLibs) return vendorLibs;
  const vendor = buildLib({out: join(img, 'opt', 'vendor', 'lib', 'libvendor.so.1'), soname: 'libvendor.so.1', source: 'int v(void){return 0;}\n', extra: ['-nostdlib']});
  const hostOnly = join(realpathSync(tmp.dir), 'hostonly');
  buildLib({out: join(hostOnly, 'libvendor.so.1'), soname: 'libvendor.so.1', source: 'int v(void){return 0;}\n', extra: ['-nostdlib']});
  const usrlib = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
  const src = 'int v(void); int w(void){return v();}\n';
  // DT_NEEDED written as a path of the image: the linker records a library's soname, and a soname may be a path.
  const written = '/opt/vendor/lib/libplain.so';
  const plain = buildLib({out: join(img, written), soname: written, source: 'int v(void){return 0;}\n', extra: ['-nostdlib']});
  vendorLibs = {
    vendor, plain, written, hostOnly,
    // No search path of its own: found through LD_LIBRARY_PATH or not at all.
    byName: buildLib({out: join(usrlib, 'libbyname.so'), soname: 'libbyname.so', link: [vendor], source: src, extra: ['-nostdlib']}),
    viaRpath: buildLib({out: join(usrlib, 'librpath.so'), soname: 'librpath.so', link: [vendor], rpath: '/opt/vendor/lib', source: src, extra: ['-nostdlib']}),
    viaRunpath: buildLib({out: join(usrlib, 'librunpath.so'), soname: 'librunpath.so', link: [vendor], runpath: '/opt/vendor/lib', source: src, extra: ['-nostdlib']}),
    hostRpath: buildLib({out: join(usrlib, 'libhostrpath.so'), soname: 'libhostrpath.so', link: [vendor], rpath: hostOnly, source: src, extra: ['-nostdlib']}),
    byPath: buildLib({out: join(usrlib, 'libbypath.so'), soname: 'libbypath.so', link: [plain], source: src, extra: ['-nostdlib']}),
  };
  return vendorLibs;
}

d('CUDAENV_SYSROOT: absolute links inside the image', () => {
  test('the premise: on the host the link leads nowhere', () => {
    expect(existsSync(ALT)).toBe(false);
    expect(existsSync(join(img, 'usr/lib/x86_64-linux-gnu/libblas.so.3'))).toBe(false);
  });

  test('preloads the loader drops are reported as such, each with where it was read (LD_PRELOAD, the image\'s /etc/ld.so.preload)', async () => {
    // rtld.c: "object '%s' from %s cannot be preloaded (%s): ignored.", %s being LD_PRELOAD or /etc/ld.so.preload.
    const file = join(img, 'etc', 'ld.so.preload');
    writeFileSync(file, '# preloaded into every program\n/opt/gone/libhook.so\n');
    try {
      const report = await checkLibraries({targets: [app], sysroot: img, preload: ['/opt/also-gone/libenv.so']});
      expect(report.problems).toEqual([]);
      expect(report.skipped).toEqual([
        {path: '/opt/also-gone/libenv.so: cannot open shared object file', reason: 'LD_PRELOAD entry cannot be preloaded: ignored (as ld.so does)'},
        {path: '/opt/gone/libhook.so: cannot open shared object file', reason: '/etc/ld.so.preload entry cannot be preloaded: ignored (as ld.so does)'},
      ]);
    } finally {
      unlinkSync(file);
    }
  });

  test('a preload the loader stops at in the image names the entry once, as the image names it (issue 37, 2f)', async () => {
    // Before: "note: skipped /usr/lib/x86_64-linux-gnu: <img>/usr/lib/x86_64-linux-gnu: cannot read file data: Is a directory".
    const report = await checkLibraries({targets: [app], sysroot: img, preload: ['/usr/lib/x86_64-linux-gnu']});
    expect(report.problems).toEqual([]);
    expect(report.skipped).toEqual([
      {path: '/usr/lib/x86_64-linux-gnu: cannot read file data: Is a directory', reason: 'LD_PRELOAD entry cannot be preloaded: ignored (as ld.so does)'},
    ]);
    expect(formatSkipped(report).join('\n')).not.toContain(img);
  });

  test('`check` with a relative CUDAENV_SYSROOT: the image of the working directory, as doctor takes it (an LD_PRELOAD of the image was \'cannot open\' before)', () => {
    const preload = '/usr/lib/x86_64-linux-gnu/libblas.so.3';
    const asked = (sysroot: string) => {
      const r = runCli(['check', '--json', app], {cwd: dirname(img), env: {PATH: process.env.PATH, HOME: tmp.dir, CUDAENV_DIR: join(tmp.dir, 'store'), CUDAENV_SYSROOT: sysroot, LD_PRELOAD: preload}});
      const report = JSON.parse(r.stdout) as {ok: boolean; skipped: unknown[]; objects: Array<{path: string}>};
      return {ok: report.ok, skipped: report.skipped, objects: report.objects.map((o) => o.path)};
    };
    const absolute = asked(img);
    expect(absolute.skipped).toEqual([]);
    expect(absolute.objects).toContain(`${img}${preload}`);
    expect(asked(basename(img))).toEqual(absolute);
  });

  test('a DT_NEEDED found in a system directory through /etc/alternatives resolves in the image', async () => {
    const report = await checkLibraries({targets: [app], sysroot: img});
    expect(report.problems).toEqual([]);
    // /lib (an absolute link to /usr/lib in the image) is the first system directory that has it.
    expect(report.objects[0].needed).toEqual([expect.objectContaining({name: 'libblas.so.3', path: `${img}/lib/x86_64-linux-gnu/libblas.so.3`, via: 'default'})]);
    // Issue 37, 2f: that path leads nowhere on the host (img/lib -> /usr/lib, the host's): the report adds the
    // file it names in the image, the path a person can open. The image's own files get no such addition.
    const blas = report.objects.find((o) => o.path === `${img}/lib/x86_64-linux-gnu/libblas.so.3`)!;
    expect(existsSync(blas.path)).toBe(false);
    expect(blas.file).toBe(`${img}/usr/lib/x86_64-linux-gnu/blas/libblas.so.3`);
    expect(report.objects.find((o) => o.path === app)!.file).toBeUndefined();
    expect(formatTree(report)).toContain(`└── libblas.so.3 => ${blas.path} -> ${blas.file} [default: system directory ${img}/lib/x86_64-linux-gnu]`);
    // Without the sysroot the same links point at the host, where there is nothing.
    const host = await checkLibraries({targets: [app]});
    expect(host.problems[0]).toMatchObject({kind: 'not-found', library: 'libblas.so.3'});
  });

  test('a target named through such a link, and a directory target holding it, are read in the image', async () => {
    // Without the sysroot this target is a dangling link: a usage error.
    await expect(checkLibraries({targets: [join(img, 'usr/lib/x86_64-linux-gnu/libblas.so.3')]})).rejects.toThrow('no such file or directory');
    const viaLink = await checkLibraries({targets: [join(img, 'usr/lib/x86_64-linux-gnu/libblas.so.3')], sysroot: img});
    expect(viaLink.checked).toEqual([join(img, 'usr/lib/x86_64-linux-gnu/libblas.so.3')]);
    const dir = await checkLibraries({targets: [join(img, 'lib/x86_64-linux-gnu')], sysroot: img});
    expect(dir.ok).toBe(true);
    expect(dir.checked.length).toBeGreaterThanOrEqual(2);
  });

  test('absolute DT_RPATH, DT_RUNPATH and DT_NEEDED paths name the image\'s files, not the host\'s', async () => {
    const {vendor, plain, written, viaRpath, viaRunpath, hostRpath, byPath, byName, hostOnly} = vendorFixture();
    const needed = (report: Awaited<ReturnType<typeof checkLibraries>>) => report.objects[0].needed.map((e) => [e.name, e.path, e.via]);
    const rpath = await checkLibraries({targets: [viaRpath], sysroot: img});
    expect(rpath.problems).toEqual([]);
    expect(needed(rpath)).toEqual([['libvendor.so.1', vendor, 'rpath']]);
    expect(rpath.objects[0].needed[0].rule).toBe(`DT_RPATH entry /opt/vendor/lib of ${viaRpath}`);
    const runpath = await checkLibraries({targets: [viaRunpath], sysroot: img});
    expect(needed(runpath)).toEqual([['libvendor.so.1', vendor, 'runpath']]);
    // A directory only the host has is not searched in the image: not found there, as on that system.
    const host = await checkLibraries({targets: [hostRpath], sysroot: img});
    expect(host.problems.map((p) => [p.kind, p.library ?? p.symbol])).toEqual([['not-found', 'libvendor.so.1'], ['unversioned-undefined-symbol', 'v']]);
    const path = await checkLibraries({targets: [byPath], sysroot: img});
    expect(needed(path)).toEqual([[written, plain, 'default']]);
    // Without the sysroot the same files are read on the host: the host-only directory is found.
    expect((await checkLibraries({targets: [hostRpath]})).problems).toEqual([]);
    // LD_LIBRARY_PATH is the image's program's too; a host path under the image's root is that file.
    const env = await checkLibraries({targets: [byName], sysroot: img, ldLibraryPath: '/opt/vendor/lib'});
    expect(needed(env)).toEqual([['libvendor.so.1', vendor, 'ld_library_path']]);
    const hostEnv = await checkLibraries({targets: [byName], sysroot: img, ldLibraryPath: hostOnly});
    expect(hostEnv.problems.map((p) => [p.kind, p.library ?? p.symbol])).toEqual([['not-found', 'libvendor.so.1'], ['unversioned-undefined-symbol', 'v']]);
    const underRoot = await checkLibraries({targets: [byName], sysroot: img, ldLibraryPath: join(img, 'opt/vendor/lib')});
    expect(needed(underRoot)).toEqual([['libvendor.so.1', vendor, 'ld_library_path']]);
  });

  inChroot('the real loader, run in the image, binds the same file', async () => {
    const libdir = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
    copyFileSync(HOST_LIBC, join(libdir, 'libc.so.6'));
    copyFileSync(HOST_LDSO, join(libdir, 'ld-linux-x86-64.so.2'));
    const r = spawnSync('chroot', [img, '/lib64/ld-linux-x86-64.so.2', '--list', '/usr/lib/x86_64-linux-gnu/libapp.so'], {encoding: 'utf8'});
    expect(r.stderr).toBe('');
    const m = /^\tlibblas\.so\.3 => (\S+) \(0x/m.exec(r.stdout);
    expect(m).not.toBeNull();
    const report = await checkLibraries({targets: [app], sysroot: img});
    expect(report.objects[0].needed[0].path).toBe(`${img}${m![1]}`);
  });

  inChroot('the real loader, run in the image, agrees on absolute DT_RPATH, DT_RUNPATH and DT_NEEDED paths', async () => {
    const {vendor, plain, written, viaRpath, viaRunpath, hostRpath, byPath} = vendorFixture();
    const libdir = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
    copyFileSync(HOST_LIBC, join(libdir, 'libc.so.6'));
    copyFileSync(HOST_LDSO, join(libdir, 'ld-linux-x86-64.so.2'));
    const list = (lib: string): string => {
      const r = spawnSync('chroot', [img, '/lib64/ld-linux-x86-64.so.2', '--list', lib.slice(img.length)], {encoding: 'utf8'});
      return r.stdout + r.stderr;
    };
    expect(list(viaRpath)).toMatch(new RegExp(`^\\tlibvendor\\.so\\.1 => ${vendor.slice(img.length)} \\(0x`, 'm'));
    expect(list(viaRunpath)).toMatch(new RegExp(`^\\tlibvendor\\.so\\.1 => ${vendor.slice(img.length)} \\(0x`, 'm'));
    // --list stops at a library it cannot find (ldd's trace mode would list it as not found).
    expect(list(hostRpath)).toContain('libvendor.so.1: cannot open shared object file');
    expect(list(byPath)).toMatch(new RegExp(`^\\t${written} \\(0x`, 'm'));
    expect(plain).toBe(join(img, written));
    // And the model says the same of each.
    for (const [lib, found] of [[viaRpath, true], [viaRunpath, true], [hostRpath, false], [byPath, true]] as const) {
      const report = await checkLibraries({targets: [lib], sysroot: img});
      expect([lib, report.ok]).toEqual([lib, found]);
    }
  });
});
