import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, realpathSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {checkLibraries, type CheckOptions} from '../../../src/core/elf/index.js';
import {DOWNLOADED, IS_ROOT, NEEDS} from '../../helpers/capabilities.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {haveCommand, HAVE_GCC} from './fixtures.js';
import {aarch64, generateCase, type FuzzCase} from './fuzz/generate.js';
import {buildRunin, emulatorIn, inImage, makeImage} from './fuzz/images.js';
import {askInImage, disagreementsInImage, probedIn} from './fuzz/image-cases.js';
import {runScript} from './fuzz/run-script.js';
import {modelTrace, parseTrace, type Real, type RealDlopen} from './fuzz/trace.js';

/**
 * The loader model for aarch64 (Grace, GH200, Jetson), against the real aarch64 ld.so of Debian
 * bookworm (glibc 2.36: legacy tls/ and platform subdirectories, no glibc-hwcaps) and trixie (2.41:
 * neither, and the rseq area in the static TLS block), each in its system image (libc6, libc-bin,
 * zlib1g of arm64, unpacked by test/fixtures/fetch-cuda-libs.sh) and run under qemu-user in a
 * chroot. The libraries are built here by the cross compiler; the model is `check` with
 * CUDAENV_SYSROOT set to the image, which never runs anything from it.
 *
 * What aarch64 does differently and the model must follow: the static TLS block lies after a
 * 16-byte TCB at the thread pointer (TLS_DTV_AT_TP), aligned to 32 (from glibc 2.35), so a block
 * aligned to 64 cannot be placed by a dlopen at all; thread-locals are reached through TLS descriptors by default,
 * which take room in the block's optional surplus when they fit; and binutils sets no DF_STATIC_TLS.
 */
const RELEASES = [
  {suite: 'bookworm', glibc: '2.36'},
  {suite: 'trixie', glibc: '2.41'},
] as const;
const QEMU = '/usr/bin/qemu-aarch64-static';
const CC = 'aarch64-linux-gnu-gcc';
const INTERP = '/lib/ld-linux-aarch64.so.1';
const imageOf = (suite: string) => join(DOWNLOADED, `glibc-${suite}-arm64`);
const fetched = RELEASES.every((r) => existsSync(join(imageOf(r.suite), '.unpacked-libc6')) && existsSync(join(imageOf(r.suite), '.unpacked-libc-bin')));
const STATIC_LIBC = '/usr/lib/x86_64-linux-gnu/libc.a';
const reason = !fetched ? 'needs the glibc images: bash test/fixtures/fetch-cuda-libs.sh'
  : !IS_ROOT ? `${NEEDS.root} (the real loader runs in the image with chroot)`
  : !existsSync(QEMU) ? NEEDS.tool('qemu-aarch64-static', 'qemu-user-static')
  : !haveCommand(CC) ? NEEDS.tool(CC, 'gcc-aarch64-linux-gnu')
  : !linksPrograms() ? NEEDS.tool(`${CC} linking a program (its crt files)`, 'libc6-dev-arm64-cross')
  : NEEDS.tool(`gcc and ${STATIC_LIBC}`, 'gcc libc6-dev');
const usable = fetched && IS_ROOT && existsSync(QEMU) && haveCommand(CC) && linksPrograms() && HAVE_GCC && existsSync(STATIC_LIBC);

/** The cross compiler links programs only with libc6-dev-arm64-cross, which it merely recommends. */
function linksPrograms(): boolean {
  return spawnSync('sh', ['-c', `d=$(mktemp -d) && echo 'int main(void){return 0;}' > "$d/m.c" && ${CC} -o "$d/m" "$d/m.c"; s=$?; rm -rf "$d"; exit $s`], {stdio: 'ignore'}).status === 0;
}

interface Image {
  suite: string;
  glibc: string;
  root: string;
  driver: string;
}

let tmp: {dir: string; cleanup: () => void};
let runin: string;
const images: Image[] = [];

/** An aarch64 shared object (or, with `program`, a program) built from C source. */
function cc64(out: string, source: string, args: string[] = [], program = false): string {
  mkdirSync(dirname(out), {recursive: true});
  writeFileSync(`${out}.c`, source);
  // --no-as-needed: Debian's cross compiler links --as-needed, which drops a library nothing calls.
  const r = spawnSync(CC, [...(program ? [] : ['-shared', '-fPIC']), '-o', out, `${out}.c`, '-Wl,--no-as-needed', ...args], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`${CC} ${out} failed:\n${r.stderr}`);
  return out;
}

/** An aarch64 program that dlopens its argument (RTLD_NOW | RTLD_GLOBAL): `OK`, or `prefix` and dlerror(). */
function dlopenDriver(out: string, prefix = ''): string {
  return cc64(out, `#include <dlfcn.h>\n#include <stdio.h>\nint main(int c, char **v) {\n  if (!dlopen(v[1], RTLD_NOW | RTLD_GLOBAL)) { printf("${prefix}%s\\n", dlerror()); return 3; }\n  printf("OK\\n");\n  return 0;\n}\n`, [], true);
}

/** Runs an aarch64 program of the image in it, under qemu-user (`-p BYTES`: the page size its kernel reports): its output and exit status. */
function runIn(image: Image, argv: string[], env: string[] = [], cwd = '/', pageSize?: number): {out: string; status: number | null} {
  const emulator = [emulatorIn(image.root, QEMU), ...(pageSize ? ['-p', String(pageSize)] : [])];
  const r = spawnSync(runin, [image.root, cwd, ...env, '--', ...emulator, ...argv], {encoding: 'utf8'});
  return {out: `${r.stdout}${r.stderr}`, status: r.status};
}

/** The image's dlopen(RTLD_NOW | RTLD_GLOBAL) of a library: null when it loads, else dlerror(). */
function dlopenIn(image: Image, lib: string, env: string[] = [], pageSize?: number): string | null {
  const {out} = runIn(image, [image.driver, lib], env, '/', pageSize);
  return out.trim() === 'OK' ? null : out.trim();
}

async function model(image: Image, target: string, options: Partial<CheckOptions> = {}) {
  return checkLibraries({targets: [target], sysroot: image.root, ldLibraryPath: undefined, strict: true, glibcTunables: undefined, ...options});
}

/** A library whose thread-local block of `size` bytes, aligned to `align`, is reached with the initial-exec model. */
function ieLib(dir: string, size: number, align = 8, extra: string[] = [], name = `libie${size}a${align}`): string {
  return cc64(join(dir, `${name}.so`),
    `__thread char ie_${size}[${size}] __attribute__((tls_model("initial-exec"), aligned(${align})));\nchar *get_ie_${size}(void){return ie_${size};}\n`,
    [`-Wl,-soname,${name}.so`, ...extra]);
}

describeIf(usable, reason)('the loader model against the real aarch64 ld.so (qemu-user)', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-aarch64-');
    const base = realpathSync(tmp.dir);
    runin = buildRunin(join(base, 'runin'));
    for (const r of RELEASES) {
      const root = join(base, r.suite);
      makeImage(imageOf(r.suite), root, runin, QEMU);
      const driver = dlopenDriver(join(root, 'cases', 'dlopen-driver'));
      images.push({suite: r.suite, glibc: r.glibc, root, driver});
    }
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  test.each(RELEASES.map((r) => [r.suite, r.glibc]))('%s (glibc %s): the image\'s aarch64 loader is the one asked', (suite, glibc) => {
    const image = images.find((i) => i.suite === suite)!;
    const v = runIn(image, ['/lib/aarch64-linux-gnu/libc.so.6']);
    expect(v.out).toContain(`release version ${glibc}.`);
  });

  test.each(RELEASES.map((r) => [r.suite, r.glibc]))('%s (glibc %s): static TLS of a dlopened library, block by block around the edge, as dlopen says', async (suite) => {
    const image = images.find((i) => i.suite === suite)!;
    const dir = join(image.root, 'cases', 'tls-edge');
    const disagree: string[] = [];
    let failed = 0;
    const sizes = [...Array.from({length: 21}, (_, i) => 1600 + i * 4), 1700, 1712];
    for (const [size, align] of [...sizes.map((s) => [s, 8]), [1600, 16], [1632, 32], [64, 64], [1536, 64]] as const) {
      const lib = ieLib(dir, size, align);
      const real = dlopenIn(image, lib);
      const report = await model(image, lib, {exe: image.driver});
      if (real !== null) failed++;
      const agrees = real === null ? report.ok
        : real.includes(`${lib}: cannot allocate memory in static TLS block`) && report.problems[0]?.kind === 'static-tls';
      if (!agrees) disagree.push(`${size} bytes aligned ${align}: loader ${real ?? 'OK'}; model ${report.problems.map((p) => p.summary).join(' | ') || 'ok'}`);
    }
    expect(disagree).toEqual([]);
    // Both verdicts occur: the sweep crosses the edge (and 64-byte alignment never fits).
    expect(failed).toBeGreaterThan(2);
    expect(failed).toBeLessThan(sizes.length);
  });

  test.each(RELEASES.map((r) => [r.suite, r.glibc]))('%s (glibc %s): a TLS descriptor that fits takes room a later initial-exec block needed', async (suite) => {
    const image = images.find((i) => i.suite === suite)!;
    const dir = join(image.root, 'cases', 'tlsdesc');
    const rows: string[] = [];
    for (const desc of [400, 600]) {
      // Reached the default way (-fPIC, no tls_model): a TLS descriptor on aarch64, R_AARCH64_TLSDESC.
      const d = cc64(join(dir, `libdesc${desc}.so`), `__thread char gd_${desc}[${desc}];\nchar *get_gd_${desc}(void){return gd_${desc};}\n`, [`-Wl,-soname,libdesc${desc}.so`]);
      for (const ie of [1200, 1400]) {
        // Its dependency is relocated first: the descriptor is resolved before the initial-exec relocation.
        const lib = ieLib(dir, ie, 8, [d, '-Wl,-rpath,$ORIGIN'], `libie${ie}with${desc}`);
        const real = dlopenIn(image, lib);
        const report = await model(image, lib, {exe: image.driver});
        rows.push(`${desc}+${ie}: loader ${real === null ? 'OK' : 'fails'}, model ${report.ok ? 'OK' : report.problems[0]?.kind}`);
        if (real !== null) expect(real).toContain('cannot allocate memory in static TLS block');
      }
    }
    // 400 bytes fit the optional part (512 by default) and are placed statically; 600 do not and go dynamic.
    expect(rows).toEqual([
      '400+1200: loader OK, model OK', '400+1400: loader fails, model static-tls',
      '600+1200: loader OK, model OK', '600+1400: loader OK, model OK',
    ]);
  });

  test.each(RELEASES.map((r) => [r.suite, r.glibc]))('%s (glibc %s): the fix the model names works: a preload, or glibc.rtld.optional_static_tls', async (suite) => {
    const image = images.find((i) => i.suite === suite)!;
    const lib = ieLib(join(image.root, 'cases', 'tls-fix'), 3000);
    expect(dlopenIn(image, lib)).toContain('cannot allocate memory in static TLS block');
    const report = await model(image, lib, {exe: image.driver});
    const fix = report.problems[0]!.fix!;
    expect(fix).toContain(`LD_PRELOAD=${lib}`);
    const tunable = /glibc\.rtld\.optional_static_tls=(\d+)/.exec(fix)![0];
    expect(dlopenIn(image, lib, [`LD_PRELOAD=${lib}`])).toBeNull();
    expect(dlopenIn(image, lib, [`GLIBC_TUNABLES=${tunable}`])).toBeNull();
    expect((await model(image, lib, {exe: image.driver, glibcTunables: tunable})).ok).toBe(true);
    expect((await model(image, lib, {exe: image.driver, preload: [lib]})).ok).toBe(true);
    // One byte less than it names is not enough, for the loader and the model alike.
    const less = `glibc.rtld.optional_static_tls=${Number(tunable.split('=')[1]) - 1}`;
    expect(dlopenIn(image, lib, [`GLIBC_TUNABLES=${less}`])).toContain('cannot allocate memory in static TLS block');
    expect((await model(image, lib, {exe: image.driver, glibcTunables: less})).ok).toBe(false);
  });

  test.each(RELEASES.map((r) => [r.suite, r.glibc]))('%s (glibc %s): executable stacks: an object without PT_GNU_STACK does not ask for one on aarch64; one with PF_X does', async (suite) => {
    const image = images.find((i) => i.suite === suite)!;
    const dir = join(image.root, 'cases', 'stack');
    mkdirSync(dir, {recursive: true});
    writeFileSync(join(dir, 'f.s'), '\t.text\n\t.globl f\nf:\n\tret\n');
    const as = spawnSync('aarch64-linux-gnu-as', ['-o', join(dir, 'f.o'), join(dir, 'f.s')], {encoding: 'utf8'});
    expect(as.status).toBe(0);
    const link = (out: string, args: string[]) => {
      const r = spawnSync('aarch64-linux-gnu-ld', ['-shared', '-o', out, join(dir, 'f.o'), ...args], {encoding: 'utf8'});
      expect(r.status).toBe(0);
      return out;
    };
    const none = link(join(dir, 'libnone.so'), []);
    const exec = link(join(dir, 'libexec.so'), ['-z', 'execstack']);
    expect(spawnSync('readelf', ['-lW', none], {encoding: 'utf8'}).stdout).not.toContain('GNU_STACK');
    // glibc 2.41 refuses a dlopen that needs an executable stack; 2.36 makes the stack executable.
    const refuses = image.glibc === '2.41';
    expect(dlopenIn(image, none)).toBeNull();
    expect((await model(image, none, {exe: image.driver})).ok).toBe(true);
    const real = dlopenIn(image, exec);
    if (refuses) expect(real).toBe(`${exec}: cannot enable executable stack as shared object requires: Invalid argument`);
    else expect(real).toBeNull();
    expect((await model(image, exec, {exe: image.driver})).problems.map((p) => p.kind)).toEqual(refuses ? ['executable-stack'] : []);
  });

  test.each(RELEASES.map((r) => [r.suite, r.glibc]))('%s (glibc %s): search, legacy subdirectories, $PLATFORM, $LIB, versions and symbols, as `ldd -r` traces them', async (suite) => {
    const image = images.find((i) => i.suite === suite)!;
    const dir = join(image.root, 'cases', 'search');
    // libdep.so.1 twice: in lib/tls/ (searched by 2.36 before lib/, gone in 2.37) and in lib/.
    const tlsDep = cc64(join(dir, 'lib', 'tls', 'libdep.so.1'), 'int dep(void){return 1;}\n', ['-Wl,-soname,libdep.so.1']);
    cc64(join(dir, 'lib', 'libdep.so.1'), 'int dep(void){return 2;}\nint dep_only_here(void){return 2;}\n', ['-Wl,-soname,libdep.so.1']);
    // libplat.so in the $PLATFORM directory, liblibdir.so in the $LIB one (Debian: lib/aarch64-linux-gnu); libv.so.1 defines V1 only.
    const plat = cc64(join(dir, 'aarch64', 'libplat.so'), 'int plat(void){return 3;}\n', ['-Wl,-soname,libplat.so']);
    const libdir = cc64(join(dir, 'lib', 'aarch64-linux-gnu', 'liblibdir.so'), 'int libdir(void){return 4;}\n', ['-Wl,-soname,liblibdir.so']);
    writeFileSync(join(dir, 'v1.map'), 'V1 { global: v1; local: *; };\n');
    writeFileSync(join(dir, 'v2.map'), 'V1 { global: v1; local: *; };\nV2 { global: v2; } V1;\n');
    cc64(join(dir, 'build', 'libv.so.1'), 'int v1(void){return 1;}\nint v2(void){return 2;}\n', ['-Wl,-soname,libv.so.1', `-Wl,--version-script,${join(dir, 'v2.map')}`]);
    cc64(join(dir, 'lib', 'libv.so.1'), 'int v1(void){return 1;}\n', ['-Wl,-soname,libv.so.1', `-Wl,--version-script,${join(dir, 'v1.map')}`]);
    const top = cc64(join(dir, 'libtop.so'),
      'int dep(void); int dep_only_here(void); int plat(void); int libdir(void); int v2(void);\nint top(void){return dep() + dep_only_here() + plat() + libdir() + v2();}\n',
      [tlsDep, plat, libdir, join(dir, 'build', 'libv.so.1'), '-Wl,--enable-new-dtags', '-Wl,-rpath,$ORIGIN/lib:$ORIGIN/$PLATFORM:$ORIGIN/$LIB']);
    const traced = runIn(image, [INTERP, top], ['LD_TRACE_LOADED_OBJECTS=1', 'LD_WARN=yes', 'LD_BIND_NOW=yes'], dir);
    const real = parseTrace(dir, traced.out, inImage(image.root));
    const report = await model(image, top, {strict: false, cwd: dir});
    const ours = modelTrace(report, dir, inImage(image.root));
    const sorted = (s: Set<string>) => [...s].sort();
    expect({libs: sorted(ours.libs), versions: sorted(ours.versions), symbols: sorted(ours.symbols)})
      .toEqual({libs: sorted(real.libs), versions: sorted(real.versions), symbols: sorted(real.symbols)});
    // The premise, from the real loader: 2.36 binds lib/tls/'s copy (which lacks dep_only_here), 2.41 lib/'s.
    const legacy = image.glibc === '2.36';
    expect(real.libs.has(realpathSync(join(dir, 'lib', legacy ? 'tls' : '', 'libdep.so.1')))).toBe(true);
    expect(real.symbols.has(`dep_only_here ${realpathSync(top)}`)).toBe(legacy);
    expect(real.versions.has(`V2 ${realpathSync(top)}`)).toBe(true);
    expect(real.libs.has(realpathSync(plat))).toBe(true);
    expect(real.libs.has(realpathSync(libdir))).toBe(true);
  });
});

describeIf(usable, reason)('64 KB pages on aarch64 (Grace, GH200, RHEL on arm64), qemu-user reporting them', () => {
  let t: {dir: string; cleanup: () => void};
  let image: Image;
  beforeAll(() => {
    t = makeTempDir('cudaenv-aarch64-pages-');
    const base = realpathSync(t.dir);
    runin = buildRunin(join(base, 'runin'));
    const root = join(base, 'bookworm');
    makeImage(imageOf('bookworm'), root, runin, QEMU);
    const driver = dlopenDriver(join(root, 'cases', 'dlopen-driver'));
    image = {suite: 'bookworm', glibc: '2.36', root, driver};
  }, 60_000);
  afterAll(() => t?.cleanup());

  test('a library linked for 4 KB pages: the 64 KB kernel\'s loader refuses it, and so does the model with --page-size 64k', async () => {
    const dir = join(image.root, 'cases', 'pages');
    const small = cc64(join(dir, 'libsmall.so'), 'int s(void){return 1;}\n', ['-Wl,-soname,libsmall.so', '-Wl,-z,max-page-size=4096']);
    const big = cc64(join(dir, 'libbig.so'), 'int b(void){return 1;}\n', ['-Wl,-soname,libbig.so', '-Wl,-z,max-page-size=65536']);
    // It is a dependency too: the program that needs it stops there.
    const user = cc64(join(dir, 'libuser.so'), 'int s(void);\nint u(void){return s();}\n', ['-Wl,-soname,libuser.so', small, '-Wl,-rpath,$ORIGIN', '-Wl,-z,max-page-size=65536']);
    const refusal = 'ELF load command address/offset not page-aligned';
    expect(dlopenIn(image, small, [], 65536)).toMatch(new RegExp(`libsmall\\.so: ${refusal}$`));
    expect(dlopenIn(image, user, [], 65536)).toMatch(new RegExp(`libsmall\\.so: ${refusal}$`));
    expect(dlopenIn(image, big, [], 65536)).toBeNull();
    expect(dlopenIn(image, small, [], 4096)).toBeNull();
    for (const lib of [small, user]) {
      const report = await model(image, lib, {exe: image.driver, pageSize: 65536});
      expect(report.problems[0]).toMatchObject({kind: 'not-found', library: lib === small ? small : 'libsmall.so'});
      expect(report.problems[0]!.explanation).toContain(`${small}: ${refusal}`);
      expect(report.problems[0]!.explanation).toContain("The kernel's pages are 65536 bytes (--page-size)");
      expect(report.problems[0]!.fix).toContain('-Wl,-z,max-page-size=65536');
      // This machine's pages (4 KB): it loads, as the 4 KB kernel's loader says.
      expect((await model(image, lib, {exe: image.driver})).ok).toBe(true);
    }
    expect((await model(image, big, {exe: image.driver, pageSize: 65536})).ok).toBe(true);
  });
});

/**
 * The seeded fuzz cases of loader-fuzz.test.ts, built for aarch64 by the cross binutils: search
 * paths, RPATH/RUNPATH, slash names, versions, shadowed copies, legacy subdirectories, NODEFLIB,
 * preloads, executable stacks, initial-exec TLS; each asked of the image's aarch64 ld.so in `ldd -r`'s
 * trace mode and of a dlopen(RTLD_NOW | RTLD_GLOBAL), against `check` and `check --exe`.
 */
const BASE_SEED = Number(process.env.CUDAENV_FUZZ_SEED ?? 61_000);
const CASES = Number(process.env.CUDAENV_FUZZ_CASES ?? 40);
/** The coverage of what differs on aarch64 is asserted on the default seeds (a replay or a wider run may miss it or be slower). */
const DEFAULT_SEEDS = process.env.CUDAENV_FUZZ_SEED === undefined && process.env.CUDAENV_FUZZ_CASES === undefined;

describeIf(usable, reason)('seeded fuzz cases against the real aarch64 ld.so', () => {
  let t: {dir: string; cleanup: () => void};
  const fuzzed: Array<{image: Image; cases: FuzzCase[]; real: Map<number, Real>; dlopen: Map<number, RealDlopen>; files: Map<number, string>}> = [];
  beforeAll(async () => {
    t = makeTempDir('cudaenv-aarch64-fuzz-');
    const base = realpathSync(t.dir);
    const helper = buildRunin(join(base, 'runin'));
    for (const r of RELEASES) {
      const root = join(base, r.suite);
      makeImage(imageOf(r.suite), root, helper, QEMU);
      const driver = dlopenDriver(join(root, 'fz', 'dlopen-driver'), 'ERR ');
      const image: Image = {suite: r.suite, glibc: r.glibc, root, driver};
      const machine = aarch64(join(root, 'lib', 'aarch64-linux-gnu', 'libz.so.1'));
      const cases: FuzzCase[] = [];
      const scripts: string[] = [];
      const places: Array<() => void> = [];
      // The same cases in both images: assembled once, in the first; the second copies its objects
      // (they name no path) and links its own, since the links name the image's case directories.
      const first = fuzzed[0]?.image;
      if (first) {
        const copied = spawnSync('cp', ['-a', ...Array.from({length: CASES}, (_, i) => join(first.root, 'fz', `c${BASE_SEED + i}`)), join(root, 'fz')], {encoding: 'utf8'});
        if (copied.status !== 0) throw new Error(`copying the cases' objects from the ${first.suite} image failed: ${copied.stderr}`);
      }
      for (let seed = BASE_SEED; seed < BASE_SEED + CASES; seed++) {
        const {fuzz, script, place} = generateCase(seed, join(root, 'fz', `c${seed}`), machine, {assembled: first !== undefined});
        cases.push(fuzz);
        scripts.push(script);
        places.push(place);
      }
      const built = await runScript(t.dir, `set -e\n${scripts.join('\n')}`);
      if (built.code !== 0) throw new Error(`building the aarch64 cases in the ${r.suite} image failed:\n${built.out.slice(-3000)}`);
      for (const place of places) place();
      const {real, dlopen, files} = await askInImage({runin: helper, root, interp: INTERP, driver, emulator: emulatorIn(root, QEMU), scratch: t.dir}, cases);
      fuzzed.push({image, cases, real, dlopen, files});
    }
  }, 300_000);
  afterAll(() => t?.cleanup());

  test.each(RELEASES.map((r) => [r.suite, r.glibc]))('%s (glibc %s): every case agrees with the aarch64 loader', async (suite) => {
    const {image, cases, real, dlopen, files} = fuzzed.find((f) => f.image.suite === suite)!;
    const failures = await disagreementsInImage(image, cases, real, dlopen, files);
    expect(cases.length).toBe(CASES);
    if (failures.length > 0) throw new Error(`${failures.length} of ${cases.length} cases disagree under aarch64 glibc ${image.glibc}:\n\n${failures.slice(0, 6).join('\n\n')}`);
  }, 240_000);

  const coverage = testIf(DEFAULT_SEEDS, 'coverage is asserted on the default seeds only (CUDAENV_FUZZ_SEED or CUDAENV_FUZZ_CASES is set)');
  coverage('the cases reach the legacy tls/ and aarch64/ subdirectories, which 2.36 searches and 2.41 does not', () => {
    const probed = RELEASES.map((r) => {
      const {image, cases, real} = fuzzed.find((f) => f.image.suite === r.suite)!;
      return probedIn(image.root, cases, real, /\/(tls|aarch64)\/libfz/).length > 0;
    });
    expect(probed).toEqual([true, false]);
  });

  coverage('the cases reach aarch64\'s static TLS block: some dlopen fails there', () => {
    const hits = fuzzed.flatMap(({image, cases, dlopen}) => cases.filter((c) => /static TLS/.test(dlopen.get(c.seed)!.message)).map((c) => `${image.suite}:${c.seed}`));
    expect(hits.length).toBeGreaterThan(0);
  });
});

// The images' self links (makeImage) make host paths valid inside them: a check that this holds
// here, so a failure above is the model's and not the harness's.
describeIf(usable, reason)('the aarch64 harness', () => {
  test('a host path under the image names the same file inside it', () => {
    const t = makeTempDir('cudaenv-aarch64-harness-');
    try {
      const base = realpathSync(t.dir);
      const helper = buildRunin(join(base, 'runin'));
      const root = join(base, 'img');
      makeImage(imageOf('bookworm'), root, helper, QEMU);
      mkdirSync(join(root, 'x'), {recursive: true});
      writeFileSync(join(root, 'x', 'probe'), 'here\n');
      symlinkSync('probe', join(root, 'x', 'link'));
      const r = spawnSync(helper, [root, join(root, 'x'), '--', emulatorIn(root, QEMU), '/lib/aarch64-linux-gnu/libc.so.6'], {encoding: 'utf8'});
      expect(r.stdout).toContain('GNU C Library');
      expect(existsSync(join(root, root, 'x', 'probe'))).toBe(true);
    } finally {
      t.cleanup();
    }
  });
});
