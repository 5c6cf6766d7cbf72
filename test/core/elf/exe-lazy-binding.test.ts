import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../src/core/elf/index.js';
import {formatProblems} from '../../../src/core/elf/explain/format-report.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildDlopenDriver, buildLib, HAVE_GCC} from './fixtures.js';

/**
 * With --exe, the objects a program starts with (here an LD_PRELOAD object) are relocated with
 * lazy binding: a GOT or data reference is bound while the program starts, from what it starts
 * with; a PLT slot at its first call, from the global scope of then (the library the program
 * dlopens with RTLD_GLOBAL included). Each case is asked of the real loader: the dlopen driver
 * with the preload, with and without LD_BIND_NOW.
 */
let tmp: {dir: string; cleanup: () => void};
let driver: string;
let target: string;
const pre: Record<string, string> = {};

function run(preload: string, env: Record<string, string> = {}): {status: number | null; out: string} {
  const r = spawnSync(driver, [target], {encoding: 'utf8', env: {PATH: process.env.PATH, LD_PRELOAD: preload, ...env}});
  return {status: r.status, out: `${r.stdout}${r.stderr}`};
}

async function model(preload: string, bindNow = false) {
  return checkLibraries({targets: [target], exe: driver, preload: [preload], ldLibraryPath: undefined, strict: true, bindNow});
}

describeIf(HAVE_GCC && process.platform === 'linux', 'needs gcc on Linux')('--exe: lazy and immediate binding of the program\'s own objects', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-exe-lazy-');
    const d = tmp.dir;
    // The dlopened library defines h; nothing defines nowhere.
    target = buildLib({out: join(d, 'libt.so'), soname: 'libt.so', source: 'int h(void){return 7;}\nint t(void){return h();}\n'});
    // Address taken: a GLOB_DAT relocation, bound while the program starts.
    pre.got = buildLib({out: join(d, 'got', 'libpre.so'), soname: 'libpre.so', source: 'extern int h(void);\nvoid *p(void){return (void *)&h;}\n'});
    // Called: a PLT slot, bound at its first call.
    pre.plt = buildLib({out: join(d, 'plt', 'libpre.so'), soname: 'libpre.so', source: 'extern int h(void);\nint p(void){return h();}\n'});
    pre.nowhere = buildLib({out: join(d, 'nowhere', 'libpre.so'), soname: 'libpre.so', source: 'extern int nowhere(void);\nint p(void){return nowhere();}\n'});
    pre.now = buildLib({out: join(d, 'now', 'libpre.so'), soname: 'libpre.so', source: 'extern int nowhere(void);\nint p(void){return nowhere();}\n', extra: ['-Wl,-z,now']});
    driver = buildDlopenDriver(join(d, 'driver'));
  });
  afterAll(() => tmp?.cleanup());

  test('a GOT reference only the dlopened library defines stops the program at its start', async () => {
    const real = run(pre.got);
    expect(real.status).toBe(127);
    expect(real.out).toContain(`symbol lookup error: ${pre.got}: undefined symbol: h`);
    const report = await model(pre.got);
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => [p.kind, p.object, p.symbol, p.when])).toEqual([['unversioned-undefined-symbol', pre.got, 'h', 'start']]);
    expect(report.problems[0].explanation).toContain('binds h while driver starts (a GOT or data relocation names it');
  });

  test('a PLT slot the dlopened library binds is no problem: the program calls it after the dlopen', async () => {
    const real = run(pre.plt);
    expect(real).toEqual({status: 0, out: 'OK\n'});
    const report = await model(pre.plt);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
  });

  test('a PLT slot nothing binds fails only at its first call, after everything else', async () => {
    // The driver never calls it: it starts and dlopens the library.
    expect(run(pre.nowhere)).toEqual({status: 0, out: 'OK\n'});
    const report = await model(pre.nowhere);
    expect(report.problems.map((p) => [p.kind, p.object, p.symbol, p.when])).toEqual([['unversioned-undefined-symbol', pre.nowhere, 'nowhere', 'first-call']]);
    expect(report.problems[0].summary).toMatch(/\(bound at its first call\)$/);
    expect(report.problems[0].explanation).toContain('driver starts and dlopens libt.so, and stops with "symbol lookup error" only if it calls nowhere');
    expect(firstProblemLine(report)).toContain('bound at its first call');
  });

  test('LD_BIND_NOW and -z now bind the same slot while the program starts', async () => {
    const real = run(pre.nowhere, {LD_BIND_NOW: '1'});
    expect(real.status).toBe(127);
    expect(real.out).toContain(`symbol lookup error: ${pre.nowhere}: undefined symbol: nowhere`);
    const bound = await model(pre.nowhere, true);
    expect(bound.problems.map((p) => [p.symbol, p.when])).toEqual([['nowhere', 'start']]);
    expect(bound.problems[0].explanation).toContain('(LD_BIND_NOW is set)');
    // ld.so reads an empty LD_BIND_NOW as unset.
    expect(run(pre.nowhere, {LD_BIND_NOW: ''})).toEqual({status: 0, out: 'OK\n'});

    const linked = run(pre.now);
    expect(linked.status).toBe(127);
    expect(linked.out).toContain(`symbol lookup error: ${pre.now}: undefined symbol: nowhere`);
    const nowReport = await model(pre.now);
    expect(nowReport.problems.map((p) => [p.symbol, p.when])).toEqual([['nowhere', 'start']]);
    expect(nowReport.problems[0].explanation).toContain('(it is linked with -z now)');
  });

  test('what the program binds at its start comes before the dlopen\'s problems, a first-call slot after them', async () => {
    const d = tmp.dir;
    const gone = buildLib({out: join(d, 'gone', 'libgone.so'), soname: 'libgone.so', source: 'int g(void){return 0;}\n'});
    const broken = buildLib({out: join(d, 'broken', 'libb.so'), soname: 'libb.so', source: 'int g(void);\nint b(void){return g();}\n', link: [gone]});
    spawnSync('rm', ['-rf', join(d, 'gone')]);
    const ask = (preload: string, bindNow = false) => checkLibraries({targets: [broken], exe: driver, preload: [preload], ldLibraryPath: undefined, strict: true, bindNow});
    // Eager: the start fails first, as the real run does.
    const real = spawnSync(driver, [broken], {encoding: 'utf8', env: {PATH: process.env.PATH, LD_PRELOAD: pre.nowhere, LD_BIND_NOW: '1'}});
    expect(real.stderr).toContain('undefined symbol: nowhere');
    expect((await ask(pre.nowhere, true)).problems.map((p) => p.kind)).toEqual(['unversioned-undefined-symbol', 'not-found', 'unversioned-undefined-symbol']);
    // Lazy: the dlopen's missing library is what the run meets.
    const lazyReal = spawnSync(driver, [broken], {encoding: 'utf8', env: {PATH: process.env.PATH, LD_PRELOAD: pre.nowhere}});
    expect(lazyReal.stdout).toContain('libgone.so: cannot open shared object file');
    const lazy = await ask(pre.nowhere);
    expect(lazy.problems.map((p) => [p.kind, p.when ?? null])).toEqual([
      ['not-found', null], ['unversioned-undefined-symbol', null], ['unversioned-undefined-symbol', 'first-call'],
    ]);
    expect(firstProblemLine(lazy)).toContain('libgone.so');
    // The human report says when it fails.
    expect(formatProblems(lazy, {strict: true}).join('\n')).toContain(`${pre.nowhere} references 1 unversioned symbol nothing loaded defines: nowhere (bound at their first call: the program fails only if it calls them)`);
  });

  test('without --exe no problem carries a binding time (ldd -r binds everything at once)', async () => {
    const lib = buildLib({out: join(tmp.dir, 'ldd', 'liba.so'), soname: 'liba.so', source: 'extern int nowhere(void);\nint a(void){return nowhere();}\n'});
    const report = await checkLibraries({targets: [lib], ldLibraryPath: undefined, strict: true});
    expect(report.problems.map((p) => [p.symbol, p.when])).toEqual([['nowhere', undefined]]);
  });
});
