import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {rmSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../src/core/elf/index.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildDlopenDriver, buildLib, HAVE_GCC} from './fixtures.js';

/**
 * With --exe the program starts before it dlopens anything: what stops its start (here an
 * LD_PRELOAD object whose version requirement its library lacks) is what a run reports, even
 * when the dlopened library would fail at an earlier stage (a missing DT_NEEDED). The model
 * used to sort every problem by stage alone, and named the dlopen's missing library first
 * (found by the fuzzer with LD_PRELOAD, seed 110657).
 */
let tmp: {dir: string; cleanup: () => void};
let driver: string;
let pre: string;
let target: string;

describeIf(HAVE_GCC && process.platform === 'linux', 'needs gcc on Linux')('--exe: the program\'s start before its dlopen', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-exe-startup-');
    const d = tmp.dir;
    const v1 = 'V1 { global: f1; local: *; };\n';
    const v2 = 'V1 { global: f1; local: *; };\nV2 { global: f2; } V1;\n';
    buildLib({out: join(d, 'old', 'libv.so'), soname: 'libv.so', source: 'int f1(void){return 1;}\n', versionScript: v1});
    const newer = buildLib({out: join(d, 'new', 'libv.so'), soname: 'libv.so', source: 'int f1(void){return 1;}\nint f2(void){return 2;}\n', versionScript: v2});
    // Linked against the newer libv (needs V2), run where only the older one is found.
    pre = buildLib({out: join(d, 'libpre.so'), soname: 'libpre.so', source: 'int f2(void);\nint pre(void){return f2();}\n', link: [newer], runpath: join(d, 'old')});
    const stub = buildLib({out: join(d, 'gone', 'libgone.so'), soname: 'libgone.so', source: 'int g(void){return 0;}\n'});
    target = buildLib({out: join(d, 'libt.so'), soname: 'libt.so', source: 'int g(void);\nint t(void){return g();}\n', link: [stub]});
    rmSync(join(d, 'gone'), {recursive: true});
    driver = buildDlopenDriver(join(d, 'driver'));
  });
  afterAll(() => tmp?.cleanup());

  test('the real run stops at the preload\'s version, and so does the model\'s first problem', async () => {
    const run = spawnSync(driver, [target], {encoding: 'utf8', env: {PATH: process.env.PATH, LD_PRELOAD: pre}});
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`version \`V2' not found (required by ${pre})`);
    const report = await checkLibraries({targets: [target], exe: driver, preload: [pre], ldLibraryPath: undefined, strict: true});
    // Then the dlopen's missing library, the target's g, and last the preload's f2@V2: a PLT slot
    // (the preload calls it), bound only at its first call (./exe-lazy-binding.test.ts).
    expect(report.problems.map((p) => [p.kind, p.object, p.library, p.when ?? null])).toEqual([
      ['version-not-found', pre, 'libv.so', null],
      ['not-found', target, 'libgone.so', null],
      ['unversioned-undefined-symbol', target, null, null],
      ['undefined-symbol', pre, 'libv.so', 'first-call'],
    ]);
    expect(firstProblemLine(report)).toContain('V2');
    // Without the preload the dlopen's missing library is the first (and only) problem.
    const alone = await checkLibraries({targets: [target], exe: driver, ldLibraryPath: undefined, strict: true});
    expect(alone.problems.map((p) => p.kind)).toEqual(['not-found', 'unversioned-undefined-symbol']);
    expect(spawnSync(driver, [target], {encoding: 'utf8', env: {PATH: process.env.PATH}}).stdout).toContain('libgone.so: cannot open shared object file');
  });
});
