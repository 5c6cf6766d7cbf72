import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../src/core/elf/index.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildDlopenDriver, buildLib, HAVE_GCC} from './fixtures.js';

/**
 * "cannot allocate memory in static TLS block": a dlopened library whose thread-local variables
 * are accessed with the initial-exec model (libgomp, jemalloc, OpenMP and Fortran runtimes) needs
 * its TLS block in the static block every thread got at the program's start, and only the surplus
 * is left then. Every verdict here is the real loader's: the dlopen driver, run with the same
 * LD_PRELOAD and GLIBC_TUNABLES as the model is asked with.
 */
let tmp: {dir: string; cleanup: () => void};
let driver: string;

/** A library with an initial-exec TLS block of `size` bytes aligned to `align`, named by its size. */
function tlsLib(dir: string, size: number, align = 16, extra: Partial<Parameters<typeof buildLib>[0]> = {}, name = `libtls${size}a${align}`, calls = ''): string {
  return buildLib({
    out: join(tmp.dir, dir, `${name}.so`), soname: `${name}.so`,
    source: `__thread char buf_${name}[${size}] __attribute__((tls_model("initial-exec"), aligned(${align})));\n` +
      `${calls ? `char *${calls}(void);\n` : ''}char *get_${name}(void){${calls ? `${calls}();` : ''}return buf_${name};}\n`,
    ...extra,
  });
}

function real(target: string, env: Record<string, string> = {}): {ok: boolean; out: string} {
  const r = spawnSync(driver, [target], {encoding: 'utf8', env: {PATH: process.env.PATH, ...env}});
  return {ok: r.status === 0 && r.stdout === 'OK\n', out: `${r.stdout}${r.stderr}`};
}

async function model(target: string, options: {preload?: string; tunables?: string} = {}) {
  return checkLibraries({targets: [target], exe: driver, ldLibraryPath: undefined, strict: true,
    preload: options.preload ? [options.preload] : undefined, glibcTunables: options.tunables});
}

describeIf(HAVE_GCC && process.platform === 'linux' && process.arch === 'x64', 'needs gcc on x86-64 Linux')('static TLS of dlopened libraries', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-static-tls-');
    driver = buildDlopenDriver(join(tmp.dir, 'driver'));
  });
  afterAll(() => tmp?.cleanup());

  test('around the edge of the surplus, block by block, the model says what dlopen says', async () => {
    const disagree: string[] = [];
    let failed = 0;
    for (const align of [16, 64]) {
      for (let size = 1600; size <= 1840; size += 16) {
        const lib = tlsLib('edge', size, align);
        const r = real(lib);
        const m = await model(lib);
        if (!r.ok) failed++;
        if (r.ok !== m.ok || (!r.ok && (!r.out.includes(`${lib}: cannot allocate memory in static TLS block`) || m.problems[0]?.kind !== 'static-tls'))) {
          disagree.push(`size ${size} align ${align}: loader ${r.out.trim()}; model ${m.problems.map((p) => p.summary).join(' | ') || 'ok'}`);
        }
      }
    }
    expect(disagree).toEqual([]);
    // The sweep crosses the edge: some fit and some do not.
    expect(failed).toBeGreaterThan(0);
    expect(failed).toBeLessThan(32);
  });

  test('a block aligned beyond the static block\'s alignment never fits, however small', async () => {
    const lib = tlsLib('align', 64, 128);
    expect(real(lib).out).toContain('cannot allocate memory in static TLS block');
    const report = await model(lib);
    expect(report.problems.map((p) => p.kind)).toEqual(['static-tls']);
    expect(report.problems[0].summary).toContain('its alignment (128) exceeds the static TLS block\'s (64)');
    // Only preloading helps then.
    expect(report.problems[0].fix).toMatch(/^start the program with it: LD_PRELOAD=\S+libtls64a128\.so driver/);
    expect(report.problems[0].fix).not.toContain('optional_static_tls');
  });

  test('two libraries of one dlopen: the second one relocated is the one that does not fit, and each fix works', async () => {
    const dep = tlsLib('pair', 900, 16, {}, 'libdep');
    // libtop calls into libdep, so that the link keeps its DT_NEEDED (toolchains that default to --as-needed).
    const top = tlsLib('pair', 900, 16, {link: [dep], runpath: join(tmp.dir, 'pair')}, 'libtop', 'get_libdep');
    const r = real(top);
    // Dependencies are relocated first: libdep takes its 900 bytes, then libtop finds too few.
    expect(r.out).toContain(`${top}: cannot allocate memory in static TLS block`);
    const report = await model(top);
    expect(report.problems.map((p) => [p.kind, p.object])).toEqual([['static-tls', top]]);
    const fix = report.problems[0].fix!;
    expect(firstProblemLine(report)).toContain('cannot allocate memory in static TLS block');
    // The fixes the report names, applied to the real run.
    const tunable = /add (glibc\.rtld\.optional_static_tls=\d+) to GLIBC_TUNABLES/.exec(fix)![1];
    expect(real(top, {GLIBC_TUNABLES: tunable})).toEqual({ok: true, out: 'OK\n'});
    expect((await model(top, {tunables: tunable})).ok).toBe(true);
    expect(fix).toContain(`LD_PRELOAD=${top}`);
    expect(real(top, {LD_PRELOAD: top})).toEqual({ok: true, out: 'OK\n'});
    expect((await model(top, {preload: top})).ok).toBe(true);
  });

  test('the surplus follows glibc.rtld.nns and glibc.rtld.optional_static_tls', async () => {
    const lib = tlsLib('tunables', 1200);
    for (const tunables of [undefined, 'glibc.rtld.nns=1', 'glibc.rtld.nns=2', 'glibc.rtld.optional_static_tls=0', 'glibc.rtld.nns=1:glibc.rtld.optional_static_tls=0x300']) {
      const r = real(lib, tunables ? {GLIBC_TUNABLES: tunables} : {});
      expect([tunables, (await model(lib, {tunables})).ok]).toEqual([tunables, r.ok]);
    }
    // With one namespace the surplus is 3 x 144 + 144 bytes smaller: 1200 bytes no longer fit.
    expect(real(lib, {GLIBC_TUNABLES: 'glibc.rtld.nns=1'}).ok).toBe(false);
  });

  test('what the program starts with shapes the block: a preload\'s TLS and its alignment', async () => {
    const pre = tlsLib('pre', 100, 128, {}, 'libpre');
    const disagree: string[] = [];
    let failed = 0;
    for (let size = 1400; size <= 1880; size += 32) {
      const lib = tlsLib('after-pre', size);
      const r = real(lib, {LD_PRELOAD: pre});
      const m = await model(lib, {preload: pre});
      if (!r.ok) failed++;
      if (r.ok !== m.ok) disagree.push(`size ${size}: loader ${r.out.trim()}, model ${m.ok ? 'ok' : m.problems[0]?.summary}`);
    }
    expect(disagree).toEqual([]);
    expect(failed).toBeGreaterThan(0);
    expect(failed).toBeLessThan(16);
  });

  test('a variable of the same name already in the program\'s start binds the reference: nothing to place', async () => {
    // libuse reaches `shared` with the initial-exec model; libbig defines a 2000-byte one, and so
    // does the small preload, which comes first in the lookup.
    const src = (size: number) => `__thread char shared[${size}] __attribute__((tls_model("initial-exec")));\nchar *get(void){return shared;}\n`;
    const big = buildLib({out: join(tmp.dir, 'interpose', 'libbig.so'), soname: 'libbig.so', source: src(2000)});
    const small = buildLib({out: join(tmp.dir, 'interpose', 'libsmall.so'), soname: 'libsmall.so', source: src(64)});
    const use = buildLib({out: join(tmp.dir, 'interpose', 'libuse.so'), soname: 'libuse.so', link: [big], runpath: join(tmp.dir, 'interpose'),
      source: 'extern __thread char shared[] __attribute__((tls_model("initial-exec")));\nchar *get(void);\nchar *use(void){get();return shared;}\n'});
    expect(real(use).out).toContain(`${big}: cannot allocate memory in static TLS block`);
    const alone = await model(use);
    expect(alone.problems.map((p) => [p.kind, p.object])).toEqual([['static-tls', big]]);
    expect(real(use, {LD_PRELOAD: small})).toEqual({ok: true, out: 'OK\n'});
    expect((await model(use, {preload: small})).problems).toEqual([]);
  });

  test('TLS descriptors (-mtls-dialect=gnu2): a block that fits the optional surplus is placed, and a later initial-exec block has less room', async () => {
    const rows: string[] = [];
    for (const desc of [400, 600]) {
      const d = buildLib({out: join(tmp.dir, 'desc', `libdesc${desc}.so`), soname: `libdesc${desc}.so`,
        source: `__thread char gd_${desc}[${desc}];\nchar *get_gd_${desc}(void){return gd_${desc};}\n`, extra: ['-mtls-dialect=gnu2']});
      const relocs = spawnSync('readelf', ['-rW', d], {encoding: 'utf8'}).stdout;
      expect(relocs).toContain('R_X86_64_TLSDESC');
      for (const ie of [1100, 1400]) {
        // It calls into libdesc (a DT_NEEDED --as-needed keeps), which is relocated first.
        const lib = tlsLib('desc', ie, 16, {link: [d], runpath: '$ORIGIN'}, `libie${ie}with${desc}`, `get_gd_${desc}`);
        const r = real(lib);
        const m = await model(lib);
        rows.push(`${desc}+${ie}: loader ${r.ok ? 'OK' : 'fails'}, model ${m.ok ? 'OK' : m.problems[0]?.kind}`);
      }
    }
    // 400 bytes fit the optional part (512 by default): placed, they leave 1100 room but not 1400; 600 go dynamic.
    expect(rows).toEqual([
      '400+1100: loader OK, model OK', '400+1400: loader fails, model static-tls',
      '600+1100: loader OK, model OK', '600+1400: loader OK, model OK',
    ]);
  });

  test('without --exe nothing is dlopened: ldd -r of the library has no such problem', async () => {
    const lib = tlsLib('ldd', 4096);
    expect(spawnSync('ldd', ['-r', lib], {encoding: 'utf8'}).stderr).toBe('');
    expect((await checkLibraries({targets: [lib], ldLibraryPath: undefined, strict: true})).problems).toEqual([]);
  });
});
