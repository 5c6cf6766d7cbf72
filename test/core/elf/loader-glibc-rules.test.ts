import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, truncateSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, type CheckOptions, type CheckReport} from '../../../src/core/elf/index.js';
import {glibcVersionOfFile, parseLoaderDiagnostics, parseLoaderHelp} from '../../../src/core/elf/read/ldcache/host-loader.js';
import {legacySubdirs, loaderPlatform} from '../../../src/core/elf/read/machine/platform.js';
import {readElfSync} from '../../../src/core/elf/read/elf/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {CAN_MOUNT_NAMESPACE, have, NEEDS} from '../../helpers/capabilities.js';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {buildLib, haveCommand, HAVE_GCC, HAVE_LDD, HAVE_M32, HAVE_PYTHON} from './fixtures.js';

/**
 * Issue 12, items 1-4: each class the independent fuzzer found, built for real and asked of
 * the real loader (ld.so in ldd -r's trace mode, and a dlopen through python's ctypes) and of
 * both models (the library as the main object; --exe with the python that dlopens it).
 */
const RTLD = '/lib64/ld-linux-x86-64.so.2';
const usable = process.arch === 'x64' && HAVE_GCC && HAVE_LDD && haveCommand('as') && haveCommand('ld') && existsSync(RTLD);
const PYTHON = HAVE_PYTHON ? spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], {encoding: 'utf8'}).stdout.trim() : '';
const python = PYTHON && existsSync(PYTHON) ? realpathSync.native(PYTHON) : '';

interface Oracle {
  /** ld.so in trace mode with LD_BIND_NOW (what ldd -r runs). */
  trace: string;
  traceAbort: string | null;
  /** ctypes.CDLL: null when it loads, else the message (or the abort). */
  dlopen: string | null;
}

function oracle(target: string, env: Record<string, string> = {}, cwd?: string): Oracle {
  const base: NodeJS.ProcessEnv = {...process.env, ...env};
  if (!env.LD_LIBRARY_PATH) delete base.LD_LIBRARY_PATH;
  const t = spawnSync(RTLD, [target], {encoding: 'utf8', cwd, env: {...base, LD_TRACE_LOADED_OBJECTS: '1', LD_WARN: 'yes', LD_BIND_NOW: 'yes'}});
  const trace = `${t.stdout}${t.stderr}`;
  let dlopen: string | null = null;
  if (python) {
    const d = spawnSync(python, ['-c', 'import ctypes, sys\ntry:\n  ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n  print(e); sys.exit(3)', target], {encoding: 'utf8', cwd, env: base});
    dlopen = d.status === 0 ? null : `${d.stdout}${d.stderr}`.trim();
  }
  return {trace, traceAbort: /Inconsistency detected by ld\.so: [^:]+: \d+: (\w+): Assertion/.exec(trace)?.[1] ?? null, dlopen};
}

/** Both models of one target: as the main object (ldd), and dlopened by python (--exe, strict). */
async function models(target: string, options: Partial<CheckOptions> = {}): Promise<{main: CheckReport; exe: CheckReport | null}> {
  const main = await checkLibraries({targets: [target], ...options});
  const exe = python ? await checkLibraries({targets: [target], exe: python, strict: true, ...options}) : null;
  return {main, exe};
}

const kinds = (r: CheckReport) => r.problems.map((p) => `${p.kind} ${p.library ?? ''} ${p.version ?? ''} ${p.symbol ?? ''}`.trim());
const asm = (names: string[], calls: string[] = []) => '\t.text\n' + names.map((n) => `\t.globl ${n}\n\t.type ${n},@function\n${n}:\n${calls.map((c) => `\tcall ${c}@PLT\n`).join('')}\tret\n`).join('');

function sh(cwd: string, script: string): void {
  const r = spawnSync('sh', ['-ec', script], {cwd, encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`${script}\n${r.stderr}`);
}

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-glibc-rules-');
});
afterAll(() => tmp?.cleanup());

describe('what the host loader says it searches (item 1)', () => {
  const help236 = [
    'Subdirectories of glibc-hwcaps directories, in priority order:',
    '  x86-64-v4',
    '  x86-64-v3 (supported, searched)',
    '  x86-64-v2 (supported, searched)',
    '',
    'Legacy HWCAP subdirectories under library search path directories:',
    '  haswell (AT_PLATFORM; supported, searched)',
    '  tls (supported, searched)',
    '  avx512_1',
    '  x86_64 (supported, searched)',
  ].join('\n');

  test('ld.so --help: the searched glibc-hwcaps levels in priority order, whatever /proc/cpuinfo says', () => {
    const facts = parseLoaderHelp(help236, 'dl_hwcap=0x2\ndl_hwcap_important=0x6\ndl_platform="haswell"\ndl_string_platform=0x32\n')!;
    expect(facts.hwcaps).toEqual(['x86-64-v3', 'x86-64-v2']);
    expect(facts.hwcapsKnown).toEqual(['x86-64-v4', 'x86-64-v3', 'x86-64-v2']);
    expect(facts.legacy).toEqual(['x86_64']);
    expect(facts.platform).toBe('haswell');
    expect(facts.hwcapImportant).toBe(0x2n);
    expect(facts.platformBit).toBe(1n << 0x32n);
    // glibc >= 2.37 prints no legacy section; an old loader without glibc-hwcaps says nothing usable.
    expect(parseLoaderHelp(help236.split('\n\n')[0], null)!.legacy).toEqual([]);
    expect(parseLoaderHelp('Usage: ld.so [OPTION]... EXECUTABLE-FILE\n', null)).toBeNull();
  });

  const haveDiagnostics = existsSync(RTLD) && spawnSync(RTLD, ['--list-diagnostics'], {stdio: 'ignore'}).status === 0;
  testIf(haveDiagnostics, `needs ${RTLD} of glibc 2.34 or later (--list-diagnostics)`)('--list-diagnostics alone (what a check asks) says what --help says, on this machine', () => {
    const help = spawnSync(RTLD, ['--help'], {encoding: 'utf8'}).stdout;
    const diagnostics = spawnSync(RTLD, ['--list-diagnostics'], {encoding: 'utf8'}).stdout;
    const fromHelp = parseLoaderHelp(help, diagnostics);
    const fromDiagnostics = parseLoaderDiagnostics(diagnostics);
    expect(fromHelp).not.toBeNull();
    expect(fromDiagnostics).toEqual(fromHelp);
  });

  test('legacy subdirectories in _dl_important_hwcaps order (observed on 2.36)', () => {
    expect(legacySubdirs(['x86_64'], 'x86_64')).toEqual(['tls/x86_64/x86_64', 'tls/x86_64', 'tls', 'x86_64/x86_64', 'x86_64']);
    expect(legacySubdirs(['x86_64'], 'haswell')).toEqual(['tls/haswell/x86_64', 'tls/haswell', 'tls/x86_64', 'tls', 'haswell/x86_64', 'haswell', 'x86_64']);
  });

  testIf(existsSync(RTLD), `needs ${RTLD}`)('the glibc release is read from the loader file itself', () => {
    const v = glibcVersionOfFile(RTLD);
    const printed = /release version (\d+)\.(\d+)/.exec(spawnSync(RTLD, ['--version'], {encoding: 'utf8'}).stdout);
    expect(v).toEqual([Number(printed![1]), Number(printed![2])]);
  });

  test('a sysroot\'s loader before 2.33 (an absolute link, no release string) is dated by its libc.so.6, inside the image', () => {
    // Debian bullseye's layout: /lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-2.31.so,
    // whose bytes name no release (ld.so --version came in 2.33); libc.so.6 does, as in every glibc.
    // loader-glibc-releases.test.ts runs the real bullseye loader; this is the layout alone.
    const tmp = makeTempDir('cudaenv-old-glibc-');
    try {
      const root = join(realpathSync(tmp.dir), 'img');
      const lib = join(root, 'lib', 'x86_64-linux-gnu');
      mkdirSync(lib, {recursive: true});
      mkdirSync(join(root, 'lib64'));
      writeFileSync(join(lib, 'ld-2.31.so'), '\x7fELF ... no release string here\0');
      writeFileSync(join(lib, 'libc-2.31.so'), '\0GNU C Library (Debian GLIBC 2.31-13+deb11u11) stable release version 2.31.\n\0');
      symlinkSync('libc-2.31.so', join(lib, 'libc.so.6'));
      symlinkSync('/lib/x86_64-linux-gnu/ld-2.31.so', join(root, 'lib64', 'ld-linux-x86-64.so.2'));
      const p = loaderPlatform(64, 62, root)!;
      expect(p.glibc).toEqual([2, 31]);
      expect(p.hwcapsSubdirs.filter((s) => s.startsWith('glibc-hwcaps/'))).toEqual([]);
      expect(p.hwcapsSubdirs).toContain('tls');
      expect(p.dsoSort.default).toBe('original');
    } finally {
      tmp.cleanup();
    }
  });
});

describeIf(usable, `needs x86-64 with gcc, as, ld, ldd and ${RTLD}`)('differential: each class of issue 12 against the real loader', () => {
  test('item 1: a copy in every glibc-hwcaps level and legacy subdirectory: the same one as ld.so, on any CPU', async () => {
    const base = join(tmp.dir, 'hwcaps');
    mkdirSync(base, {recursive: true});
    writeFileSync(join(base, 'f.s'), asm(['f']));
    const subs = ['glibc-hwcaps/x86-64-v4', 'glibc-hwcaps/x86-64-v3', 'glibc-hwcaps/x86-64-v2', 'tls', 'x86_64', 'haswell', 'tls/x86_64', ''];
    // Removing the best copy each round walks down the whole priority list.
    sh(base, `as -o f.o f.s\n${subs.map((s) => `mkdir -p lib/${s} && ld -shared -soname libb.so.1 -o lib/${s}/libb.so.1 f.o`).join('\n')}\n` +
      "ld -shared -soname liba.so -o liba.so f.o --no-as-needed lib/libb.so.1 -rpath '$ORIGIN/lib'");
    const target = join(base, 'liba.so');
    const seen: string[] = [];
    for (;;) {
      const real = oracle(target);
      const m = /libb\.so\.1 => (\S+)/.exec(real.trace)!;
      const {main, exe} = await models(target);
      const ours = main.objects[0].needed[0].path;
      if (m[1] === 'not') {
        expect(ours).toBeNull();
        break;
      }
      expect(ours && realpathSync.native(ours)).toBe(realpathSync.native(m[1]));
      if (exe) expect(exe.ok).toBe(real.dlopen === null);
      seen.push(m[1].replace(/^.*\/lib\//, ''));
      // The copy the loader took goes: the next round shows the next in its priority list.
      sh(base, `rm -f '${m[1]}'`);
    }
    expect(seen.length).toBeGreaterThan(3);
  });

  test('item 1: $PLATFORM expands to what ld.so says, not a guess from CPU flags', async () => {
    const base = join(tmp.dir, 'platform');
    mkdirSync(base, {recursive: true});
    writeFileSync(join(base, 'f.s'), asm(['f']));
    const platforms = ['x86_64', 'haswell', 'xeon_phi', 'i686'];
    sh(base, `as -o f.o f.s\n${platforms.map((p) => `mkdir -p p/${p} && ld -shared -soname libp.so.1 -o p/${p}/libp.so.1 f.o`).join('\n')}\n` +
      "ld -shared -soname liba.so -o liba.so f.o --no-as-needed p/x86_64/libp.so.1 --enable-new-dtags -rpath '$ORIGIN/p/$PLATFORM'");
    const real = oracle(join(base, 'liba.so'));
    const {main} = await models(join(base, 'liba.so'));
    expect(main.objects[0].needed[0].path).toBe(/libp\.so\.1 => (\S+)/.exec(real.trace)![1]);
  });

  test('item 2: a versioned reference reaching its library rebuilt without versions: ld.so < 2.41 aborts in check_match', async () => {
    const base = join(tmp.dir, 'unversioned');
    const v = buildLib({out: join(base, 'v', 'libb.so.1'), soname: 'libb.so.1', source: 'int foo(void){return 1;}\n', versionScript: 'VB_1 { global: foo; local: *; };\n'});
    buildLib({out: join(base, 'u', 'libb.so.1'), soname: 'libb.so.1', source: 'int foo(void){return 1;}\n'});
    const lib = buildLib({out: join(base, 'liba.so'), source: 'int foo(void); int a(void){return foo();}\n', link: [v], runpath: '$ORIGIN/u'});
    const real = oracle(lib);
    const glibc = glibcVersionOfFile(RTLD)!;
    const {main, exe} = await models(lib);
    if (glibc[0] === 2 && glibc[1] < 41) {
      expect(real.traceAbort).toBe('check_match');
      if (python) expect(real.dlopen).toContain('check_match');
      expect(kinds(main)).toContain('loader-abort libb.so.1 VB_1 foo');
      expect(main.ok).toBe(false);
      if (exe) expect(kinds(exe)).toContain('loader-abort libb.so.1 VB_1 foo');
    } else {
      expect(real.traceAbort).toBeNull();
      expect(main.ok).toBe(true);
    }
    // Another object first in the scope defines it: the lookup never reaches libb, no abort.
    const first = buildLib({out: join(base, 'first', 'libfirst.so'), soname: 'libfirst.so', source: 'int foo(void){return 2;}\n', versionScript: 'VB_1 { global: foo; local: *; };\n'});
    const lib2 = buildLib({out: join(base, 'liba2.so'), source: 'int foo(void); int a(void){return foo();}\n', link: [first, v], runpath: '$ORIGIN/first:$ORIGIN/u', extra: ['-Wl,--no-as-needed']});
    expect(oracle(lib2).traceAbort).toBeNull();
    expect(kinds((await models(lib2)).main).filter((k) => k.startsWith('loader-abort'))).toEqual([]);
  });

  test('item 2: the target glibc decides: a sysroot whose loader is 2.41 accepts it, one of 2.36 aborts; legacy dirs end at 2.37', async () => {
    const base = join(tmp.dir, 'unversioned');
    const lib = join(base, 'liba.so');
    const sysroot = (version: string) => {
      const root = join(tmp.dir, `sysroot-${version}`);
      mkdirSync(join(root, 'lib64'), {recursive: true});
      mkdirSync(join(root, 'etc'), {recursive: true});
      // Only its bytes are read (never run): the release string as glibc's ld.so carries it.
      writeFileSync(join(root, 'lib64', 'ld-linux-x86-64.so.2'), `\0ld.so (GNU libc) stable release version ${version}.\0`);
      return root;
    };
    expect(kinds(await checkLibraries({targets: [lib], sysroot: sysroot('2.41')})).filter((k) => k.startsWith('loader-abort'))).toEqual([]);
    expect(kinds(await checkLibraries({targets: [lib], sysroot: sysroot('2.36')}))).toContain('loader-abort libb.so.1 VB_1 foo');
    // tls/ is searched by 2.36 and not by 2.37.
    const t = join(tmp.dir, 'legacy');
    const b = buildLib({out: join(t, 'lib', 'tls', 'libt.so.1'), soname: 'libt.so.1', source: 'int t(void){return 1;}\n'});
    const top = buildLib({out: join(t, 'libtop.so'), source: 'int t(void); int u(void){return t();}\n', link: [b], runpath: '$ORIGIN/lib'});
    expect((await checkLibraries({targets: [top], sysroot: sysroot('2.36')})).objects[0].needed[0].path).toBe(b);
    expect((await checkLibraries({targets: [top], sysroot: sysroot('2.37')})).objects[0].needed[0].path).toBeNull();
  });

  test('item 2: DT_NEEDED $ORIGIN/libb.so.1 with a versioned reference into it: ld.so aborts in _dl_check_map_versions', async () => {
    const base = join(tmp.dir, 'origin-needed');
    mkdirSync(join(base, '$ORIGIN'), {recursive: true});
    writeFileSync(join(base, 'b.c'), 'int foo(void){return 1;}\n');
    writeFileSync(join(base, 'b.map'), 'VB_1 { global: foo; local: *; };\n');
    writeFileSync(join(base, 'a.c'), 'int foo(void); int a(void){return foo();}\n');
    sh(base, "gcc -shared -fPIC -o '$ORIGIN/libb.so.1' -Wl,--version-script,b.map b.c\ngcc -shared -fPIC -o liba.so a.c '$ORIGIN/libb.so.1'\ncp '$ORIGIN/libb.so.1' libb.so.1\n" +
      "gcc -shared -fPIC -o '$ORIGIN/libc2.so' b.c\ngcc -shared -fPIC -o liba2.so a.c '$ORIGIN/libc2.so'\ncp '$ORIGIN/libc2.so' libc2.so");
    const real = oracle(join(base, 'liba.so'));
    expect(real.traceAbort).toBe('_dl_check_map_versions');
    if (python) expect(real.dlopen).toContain('needed != NULL');
    const {main, exe} = await models(join(base, 'liba.so'));
    expect(kinds(main)).toEqual(['loader-abort $ORIGIN/libb.so.1 VB_1']);
    if (exe) expect(kinds(exe)).toEqual(['loader-abort $ORIGIN/libb.so.1 VB_1']);
    // Without versions there is nothing to check: it loads.
    expect(oracle(join(base, 'liba2.so')).traceAbort).toBeNull();
    expect((await models(join(base, 'liba2.so'))).main.ok).toBe(true);
  });

  test('item 3: `..` after a symlinked directory, in a DT_NEEDED and in the checked path, is the kernel\'s', async () => {
    const base = join(tmp.dir, 'dotdot');
    mkdirSync(base, {recursive: true});
    writeFileSync(join(base, 'f.s'), asm(['f']));
    // lnsub -> real/deep: lnsub/.. is real/, not base/.
    sh(base, 'as -o f.o f.s\nmkdir -p real/deep real/x x \'build/$ORIGIN\'\nln -s real/deep lnsub\n' +
      'ld -shared -soname libb.so.1 -o real/x/libb.so.1 f.o\n' +
      // a decoy where the textual normalisation would look
      'ld -shared -soname libb.so.1 -o x/libb.so.1 f.o\nmkdir -p build/x && ld -shared -o build/x/libb.so.1 f.o\n' +
      "(cd build && ld -shared -soname liba.so -o ../lnsub/liba.so ../f.o --no-as-needed '$ORIGIN/../x/libb.so.1')\n" +
      "ld -shared -soname libc.so -o real/x/libc1.so f.o --no-as-needed real/x/libb.so.1 -rpath '$ORIGIN'\n" +
      'rm x/libb.so.1');
    const viaNeeded = join(base, 'lnsub', 'liba.so');
    const real = oracle(viaNeeded);
    expect(real.trace).toContain('lnsub/../x/libb.so.1');
    const {main, exe} = await models(viaNeeded);
    expect(main.ok).toBe(true);
    expect(realpathSync.native(main.objects[0].needed[0].path!)).toBe(realpathSync.native(join(base, 'real', 'x', 'libb.so.1')));
    if (exe) expect(exe.ok).toBe(real.dlopen === null);
    // A checked path through the symlink: its $ORIGIN is lnsub/../x, i.e. real/x.
    const checked = `${base}/lnsub/../x/libc1.so`;
    const r2 = oracle(checked);
    expect(r2.trace).toMatch(/libb\.so\.1 => \S+real\/x\/libb\.so\.1|libb\.so\.1 => \S*lnsub\/\.\.\/x\/libb\.so\.1/);
    const m2 = await models(checked);
    expect(m2.main.ok).toBe(true);
    expect(realpathSync.native(m2.main.checked[0])).toBe(realpathSync.native(join(base, 'real', 'x', 'libc1.so')));
  });

  test('item 4: undefined .dynsym entries no relocation names are not required; the version need still is', async () => {
    const base = join(tmp.dir, 'unreferenced');
    // A newer libstd with V_31 and V_32 (an init symbol only -u pulls in, as GCC 13's
    // _ZSt21ios_base_library_initv@GLIBCXX_3.4.32), an older one with V_31 only.
    const script = 'V_31 { global: used; local: *; };\nV_32 { global: init; PyExc_FutureWarning; } V_31;\n';
    const fresh = buildLib({out: join(base, 'new', 'libstd.so.6'), soname: 'libstd.so.6', source: 'int used(void){return 1;}\nint init(void){return 2;}\nint PyExc_FutureWarning;\n', versionScript: script});
    buildLib({out: join(base, 'old', 'libstd.so.6'), soname: 'libstd.so.6', source: 'int used(void){return 1;}\n', versionScript: 'V_31 { global: used; local: *; };\n'});
    const lib = buildLib({out: join(base, 'libuser.so'), source: 'int used(void); int u(void){return used();}\n', link: [fresh], runpath: join(base, 'new'),
      extra: ['-Wl,-u,init', '-Wl,-u,PyExc_FutureWarning']});
    const dyn = readElfSync(lib, {symbols: 'undefined', relocations: true}).symbols;
    expect(dyn.find((s) => s.name === 'init')).toMatchObject({unreferenced: true, version: 'V_32'});
    expect(dyn.find((s) => s.name === 'used')?.unreferenced).toBeUndefined();

    const good = oracle(lib);
    expect(good.trace).not.toContain('undefined symbol');
    expect((await models(lib)).main.problems).toEqual([]);

    const env = {LD_LIBRARY_PATH: join(base, 'old')};
    const real = oracle(lib, env);
    expect(real.trace).toContain("version `V_32' not found");
    expect(real.trace).not.toMatch(/undefined symbol: (init|PyExc)/);
    const {main, exe} = await models(lib, {ldLibraryPath: join(base, 'old')});
    expect(kinds(main)).toEqual(['version-not-found libstd.so.6 V_32']);
    if (exe) {
      expect(real.dlopen).toContain("version `V_32' not found");
      expect(kinds(exe)).toEqual(['version-not-found libstd.so.6 V_32']);
    }
    // Referenced after all (a relocation): then it is required.
    const lib2 = buildLib({out: join(base, 'libuser2.so'), source: 'int used(void); int init(void); int u(void){return used() + init();}\n', link: [fresh], runpath: join(base, 'new')});
    buildLib({out: join(base, 'nov32', 'libstd.so.6'), soname: 'libstd.so.6', source: 'int used(void){return 1;}\n', versionScript: 'V_31 { global: used; local: *; };\nV_32 { global: other; } V_31;\n', extra: []});
    const r2 = oracle(lib2, {LD_LIBRARY_PATH: join(base, 'nov32')});
    expect(r2.trace).toContain('undefined symbol: init, version V_32');
    expect(kinds((await models(lib2, {ldLibraryPath: join(base, 'nov32')})).main)).toEqual(['undefined-symbol libstd.so.6 V_32 init']);
  });

  testIf(HAVE_M32, 'needs gcc -m32')('item 4: ELF32 REL relocations are read too', () => {
    const base = join(tmp.dir, 'rel32');
    const dep = buildLib({out: join(base, 'libd.so'), soname: 'libd.so', source: 'int used(void){return 1;}\nint extra(void){return 2;}\n', m32: true});
    const lib = buildLib({out: join(base, 'libu.so'), source: 'int used(void); int u(void){return used();}\n', link: [dep], m32: true, extra: ['-Wl,-u,extra']});
    const syms = readElfSync(lib, {symbols: 'undefined', relocations: true}).symbols;
    expect(syms.find((s) => s.name === 'extra')?.unreferenced).toBe(true);
    expect(syms.find((s) => s.name === 'used')?.unreferenced).toBeUndefined();
  });
});

/** The real loader's run of `target` with signals kept: a library cut short kills it with SIGBUS. */
function loaderRun(target: string): {trace: {status: number | null; signal: NodeJS.Signals | null}; dlopen: {status: number | null; signal: NodeJS.Signals | null} | null} {
  const env: NodeJS.ProcessEnv = {...process.env, LD_TRACE_LOADED_OBJECTS: '1', LD_WARN: 'yes', LD_BIND_NOW: 'yes'};
  delete env.LD_LIBRARY_PATH;
  const t = spawnSync(RTLD, [target], {encoding: 'utf8', env});
  const d = python ? spawnSync(python, ['-c', 'import ctypes, sys\nctypes.CDLL(sys.argv[1])', target], {encoding: 'utf8'}) : null;
  return {trace: {status: t.status, signal: t.signal}, dlopen: d && {status: d.status, signal: d.signal}};
}

describeIf(usable, `needs x86-64 with gcc, as, ld, ldd and ${RTLD}`)('differential: what issue 12 left unmodelled', () => {
  test('a library cut off after its headers: ld.so maps it anyway and dies of SIGBUS; the check calls it damaged, as the target and as a dependency', async () => {
    const base = join(tmp.dir, 'cut');
    // 400 KB of initialised data after the dynamic section: the cut lands in the RW segment.
    const full = buildLib({out: join(base, 'full', 'libcut.so'), soname: 'libcut.so', source: 'int arr[100000] = {1};\nint g(void){return arr[5];}\n'});
    const lib = join(base, 'lib', 'libcut.so');
    const user = buildLib({out: join(base, 'libuser.so'), source: 'int g(void); int u(void){return g();}\n', link: [full], runpath: '$ORIGIN/lib'});
    const intact = () => {
      mkdirSync(join(base, 'lib'), {recursive: true});
      writeFileSync(lib, readFileSync(full));
    };
    intact();
    expect(loaderRun(user).trace).toEqual({status: 0, signal: null});
    expect((await checkLibraries({targets: [user]})).ok).toBe(true);

    const segments = spawnSync('readelf', ['-lW', full], {encoding: 'utf8'}).stdout;
    const rw = /LOAD\s+0x([0-9a-f]+)\s+\S+\s+\S+\s+0x([0-9a-f]+)\s+\S+\s+RW/.exec(segments)!;
    const rwEnd = parseInt(rw[1], 16) + parseInt(rw[2], 16);
    for (const size of [16384, 300000]) {
      truncateSync(lib, size);
      const real = loaderRun(lib);
      expect(real.trace.signal).toBe('SIGBUS');
      if (real.dlopen) expect(real.dlopen.signal).toBe('SIGBUS');
      await expect(checkLibraries({targets: [lib]})).rejects.toThrow(/damaged ELF file: loadable segment \d+ \(PT_LOAD.*SIGBUS/);
      // As a dependency: the loader picks it (its ELF header is fine) and crashes; the check fails on that edge and says why.
      const asDep = loaderRun(user);
      expect(asDep.trace.signal).toBe('SIGBUS');
      const report = await checkLibraries({targets: [user]});
      expect(report.ok).toBe(false);
      // (g, which only libcut.so defines, is also listed as unbound: a note, as for any library not found.)
      expect(report.problems.filter((p) => p.kind !== 'unversioned-undefined-symbol').map((p) => [p.kind, p.library])).toEqual([['not-found', 'libcut.so']]);
      expect(report.problems[0].summary).toContain('SIGBUS');
      expect(report.problems[0].fix).toContain(`remove or replace ${lib}`);
      intact();
    }
    // Cut inside the segment's last page: nothing is past a page end, the loader reads zeros and
    // loads it. The data is lost all the same: the check still calls the file damaged.
    truncateSync(lib, rwEnd - 100);
    expect(loaderRun(lib).trace).toEqual({status: 0, signal: null});
    await expect(checkLibraries({targets: [lib]})).rejects.toThrow(/ends 100 bytes past the end of the file .*reads the missing bytes as zeros/);
    // Cut after the loadable segments (section headers, .symtab): nothing the loader maps is missing.
    intact();
    const lastLoadEnd = Math.max(...[...segments.matchAll(/LOAD\s+0x([0-9a-f]+)\s+\S+\s+\S+\s+0x([0-9a-f]+)/g)].map((m) => parseInt(m[1], 16) + parseInt(m[2], 16)));
    truncateSync(lib, lastLoadEnd);
    expect(loaderRun(user).trace).toEqual({status: 0, signal: null});
    expect((await checkLibraries({targets: [user]})).ok).toBe(true);
  });

  testIf(haveCommand('objcopy'), NEEDS.tool('objcopy', 'binutils'))('a separate debug-info file (objcopy --only-keep-debug) under a library\'s name: ld.so refuses it, and the check says what it is', async () => {
    const base = join(tmp.dir, 'debuginfo');
    const full = buildLib({out: join(base, 'build', 'libdbg.so.1'), soname: 'libdbg.so.1', source: 'int g(void){return 7;}\n'});
    const lib = join(base, 'lib', 'libdbg.so.1');
    mkdirSync(join(base, 'lib'), {recursive: true});
    sh(base, `objcopy --only-keep-debug '${full}' '${lib}'`);
    const user = buildLib({out: join(base, 'libuser.so'), source: 'int g(void); int u(void){return g();}\n', link: [full], runpath: '$ORIGIN/lib'});
    const real = oracle(user);
    expect(real.trace).toContain('libdbg.so.1: object file has no dynamic section');
    if (python) expect(real.dlopen).toContain('object file has no dynamic section');
    const {main, exe} = await models(user);
    expect(main.problems.filter((p) => p.kind !== 'unversioned-undefined-symbol').map((p) => [p.kind, p.library])).toEqual([['not-found', 'libdbg.so.1']]);
    expect(main.problems[0].summary).toContain('"object file has no dynamic section": it is a separate debug-info file (objcopy --only-keep-debug)');
    if (exe) expect(exe.ok).toBe(false);
    // Named on the command line it is bad usage; in a directory (as under /usr/lib/debug) a skip, not "damaged".
    await expect(checkLibraries({targets: [lib]})).rejects.toThrow(/is a separate debug-info file/);
    const dir = await checkLibraries({targets: [join(base, 'lib')]});
    expect(dir.skipped).toEqual([{path: lib, reason: expect.stringMatching(/^a separate debug-info file/)}]);
    expect(dir.skipped[0].reason).not.toContain('damaged');
  });

  test('x86 ISA level marks (GNU_PROPERTY_X86_ISA_1_NEEDED): a level the CPU lacks stops a real run, and the check agrees on this CPU, whatever it is', async () => {
    const base = join(tmp.dir, 'isa');
    mkdirSync(base, {recursive: true});
    // v2..v4 as `ld -z x86-64-vN` marks them; 0x10, a bit beyond v4, is one no CPU has (a failing case on any machine).
    const note = (bits: number) => '\t.section .note.gnu.property,"a"\n\t.p2align 3\n\t.long 4\n\t.long 16\n\t.long 5\n\t.asciz "GNU"\n' +
      `\t.long 0xc0008002\n\t.long 4\n\t.long ${bits}\n\t.p2align 3\n`;
    writeFileSync(join(base, 'f.s'), asm(['f']));
    writeFileSync(join(base, 'weird.s'), note(0x10) + asm(['f']));
    writeFileSync(join(base, 'main.c'), 'int main(void){return 0;}\n');
    const kinds = ['v2', 'v3', 'v4', 'weird'];
    sh(base, 'as -o f.o f.s && as -o weird.o weird.s\n' +
      ['v2', 'v3', 'v4'].map((v) => `mkdir -p ${v} && ld -shared -z x86-64-${v} -soname libisa.so -o ${v}/libisa.so f.o`).join('\n') +
      '\nmkdir -p weird && ld -shared -soname libisa.so -o weird/libisa.so weird.o\n' +
      kinds.map((k) => `ld -shared -soname libuser.so -o ${k}/libuser.so f.o --no-as-needed ${k}/libisa.so -rpath '$ORIGIN' && ` +
        `gcc -o ${k}/main main.c -Wl,--no-as-needed ${k}/libuser.so -Wl,-rpath,'$ORIGIN'`).join('\n'));
    expect(readElfSync(join(base, 'v3', 'libisa.so')).x86IsaNeeded).toBe(4);
    expect(readElfSync(join(base, 'weird', 'libisa.so')).x86IsaNeeded).toBe(0x10);
    const failures: boolean[] = [];
    const store = join(base, 'store');
    for (const tunables of [undefined, 'glibc.cpu.hwcaps=-AVX2']) {
      // GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2 takes v3 and v4 off the glibc-hwcaps search, but not off the
      // ISA check (isa_1 is computed before tunables apply): the check must not confuse the two.
      const env: NodeJS.ProcessEnv = {...cliEnv(store), ...(tunables ? {GLIBC_TUNABLES: tunables} : {})};
      for (const k of kinds) {
        const run = spawnSync(join(base, k, 'main'), [], {encoding: 'utf8', env});
        const refused = /CPU ISA level is lower than required/.test(run.stderr);
        expect(run.status === 0).toBe(!refused);
        const dl = python ? spawnSync(python, ['-c', 'import ctypes, sys\nctypes.CDLL(sys.argv[1])', join(base, k, 'libuser.so')], {encoding: 'utf8', env}) : null;
        if (dl) expect(/CPU ISA level is lower than required/.test(dl.stderr)).toBe(refused);
        // The library (ldd's model) and the program (a real start) in one run.
        const r = runCli(['check', '--json', join(base, k, 'libuser.so'), join(base, k, 'main')], {env});
        const report = JSON.parse(r.stdout) as CheckReport;
        const isa = report.problems.filter((p) => p.kind === 'cpu-isa-level');
        expect({k, tunables, isa: isa.map((p) => p.object)}).toEqual({k, tunables, isa: refused ? [join(base, k, 'libisa.so')] : []});
        expect(r.status).toBe(refused ? 1 : 0);
        failures.push(refused);
      }
    }
    // Two objects with the same mark are one block in the human output, naming both.
    sh(base, "mkdir -p two && ld -shared -soname libisa.so -o two/libisa.so weird.o && ld -shared -soname libisa2.so -o two/libisa2.so weird.o && " +
      "ld -shared -soname libuser.so -o two/libuser.so f.o --no-as-needed two/libisa.so two/libisa2.so -rpath '$ORIGIN'");
    const human = runCli(['check', join(base, 'two', 'libuser.so')], {env: cliEnv(store)});
    expect(human.status).toBe(1);
    expect(human.stdout.match(/^error: CPU ISA level: /gm)).toHaveLength(1);
    expect(human.stdout).toMatch(/^error: CPU ISA level: 2 objects are built for ISA level bits 0x10 .*: the loader stops at the first with "CPU ISA level is lower than required"$/m);
    expect(human.stdout).toContain(`objects:  ${join(base, 'two', 'libisa2.so')}, ${join(base, 'two', 'libisa.so')}`);
    expect(human.stdout).toMatch(/fix: +reinstall or rebuild them: their marks name ISA bits no glibc knows, so no CPU can load them$/m);
    // The first named is the one the loader stops at (it checks in relocation order).
    if (python) expect(spawnSync(python, ['-c', 'import ctypes, sys\nctypes.CDLL(sys.argv[1])', join(base, 'two', 'libuser.so')], {encoding: 'utf8'}).stderr).toContain('libisa2.so: CPU ISA level is lower than required');
    // Whatever this CPU is, the unknown bit fails and, without AVX2, v3 and v4 fail: both outcomes were compared.
    expect(failures).toContain(true);
    expect(failures).toContain(false);
  });

  const LDCONFIG = ['/usr/sbin/ldconfig', '/sbin/ldconfig'].find((p) => existsSync(p)) ?? (have('ldconfig') ? 'ldconfig' : null);
  testIf(CAN_MOUNT_NAMESPACE && LDCONFIG !== null, LDCONFIG === null ? NEEDS.tool('ldconfig', 'libc-bin') : NEEDS.mountNamespace)(
    'a real ld.so.cache with legacy hwcap entries (ldconfig <= 2.36 writes them for tls/, x86_64/, haswell/...): the entry the loader takes, round after round', async () => {
      const base = join(tmp.dir, 'legacy-cache');
      mkdirSync(base, {recursive: true});
      writeFileSync(join(base, 'f.s'), asm(['f']));
      const subs = ['', 'tls', 'x86_64', 'haswell', 'tls/x86_64', 'haswell/x86_64', 'xeon_phi', 'i686', 'avx512_1', 'glibc-hwcaps/x86-64-v3', 'glibc-hwcaps/x86-64-v2'];
      sh(base, `as -o f.o f.s\n${subs.map((d) => `mkdir -p L/${d} && ld -shared -soname libq.so.1 -o L/${d}/libq.so.1 f.o`).join('\n')}\n` +
        // No RPATH: libq.so.1 can only come from the cache (or the system directories, where it is not).
        'ld -shared -soname liba.so -o liba.so f.o --no-as-needed L/libq.so.1');
      writeFileSync(join(base, 'ld.so.conf'), `${join(base, 'L')}\n`);
      const cache = join(base, 'ld.so.cache');
      const rebuild = () => sh(base, `${LDCONFIG} -X -C '${cache}' -f '${join(base, 'ld.so.conf')}'`);
      rebuild();
      const legacyEntries = spawnSync(LDCONFIG!, ['-p', '-C', cache], {encoding: 'utf8'}).stdout.split('\n').filter((l) => l.includes('libq.so.1') && /hwcap: 0x/.test(l));
      const glibc = glibcVersionOfFile(RTLD)!;
      // glibc 2.37 dropped them from ldconfig and ld.so alike; before, they are there to be judged.
      if (glibc[0] === 2 && glibc[1] <= 36) expect(legacyEntries.length).toBeGreaterThan(3);
      const target = join(base, 'liba.so');
      const seen: string[] = [];
      for (;;) {
        // Only the loader traces: set for mount, the variable would make mount print its libraries instead.
        const run = spawnSync('unshare', ['-m', 'sh', '-c', 'mount --bind "$1" /etc/ld.so.cache && shift && LD_TRACE_LOADED_OBJECTS=1 exec "$@"', 'sh', cache, RTLD, target],
          {encoding: 'utf8', env: {PATH: process.env.PATH}});
        expect(run.stderr).toBe('');
        const real = /libq\.so\.1 => (\S+)/.exec(run.stdout)![1];
        const ours = (await checkLibraries({targets: [target], cacheFile: cache})).objects[0].needed[0].path;
        expect(ours ?? 'not').toBe(real);
        if (real === 'not') break;
        seen.push(real.slice(join(base, 'L').length + 1));
        rmSync(real);
        rebuild();
      }
      expect(seen.length).toBeGreaterThanOrEqual(2);
    });
});
