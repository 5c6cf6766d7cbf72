import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../src/core/elf/index.js';
import {formatProblems} from '../../../src/core/elf/explain/format-report.js';
import {readElfSync} from '../../../src/core/elf/read/elf/index.js';
import {segmentsMisaligned} from '../../../src/core/elf/read/elf/segments.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {hostGlibcAtLeast} from '../../helpers/capabilities.js';
import {buildDlopenDriver, buildLib, HAVE_GCC} from './fixtures.js';

/**
 * "ELF load command address/offset not page-aligned": segments laid out for smaller pages than
 * the kernel's (a 4 KB build on a 64 KB aarch64 kernel; a manylinux library that strip rewrote
 * after patchelf). On this 4 KB machine, libraries linked for 256-byte pages show both of
 * glibc's refusals; the host's loader (2.36) is the oracle, the release images test 2.31 to 2.43.
 */
let tmp: {dir: string; cleanup: () => void};
let driver: string;
const small = ['-Wl,-z,max-page-size=0x100', '-Wl,-z,common-page-size=0x100'];
const PAGE = 4096;

/** The host's glibc: the refusals are 2.35's (older loaders map such files; the release images test 2.31). */
const GLIBC_235 = hostGlibcAtLeast(2, 35);

describeIf(HAVE_GCC && process.platform === 'linux' && process.arch === 'x64' && GLIBC_235,
  'needs gcc on x86-64 Linux with glibc 2.35 or later (older loaders map such files without a word; loader-glibc-releases.test.ts covers 2.31)')('segments and the page size', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-pages-');
    driver = buildDlopenDriver(join(tmp.dir, 'driver'));
  });
  afterAll(() => tmp?.cleanup());

  test.each([['offset', '-Wl,-z,noseparate-code'], ['holes', '-Wl,-z,separate-code']])('%s: refused by the loader, and by the model, as the library and as a dependency', async (name, layout) => {
    const lib = buildLib({out: join(tmp.dir, name, `lib${name}.so`), soname: `lib${name}.so`, source: 'int f(void){return 1;}\n', extra: [...small, layout]});
    expect(spawnSync(driver, [lib], {encoding: 'utf8'}).stdout).toBe(`ERR ${lib}: ELF load command address/offset not page-aligned\n`);
    const report = await checkLibraries({targets: [lib], ldLibraryPath: undefined});
    expect(report.ok).toBe(false);
    expect(report.problems[0].summary).toBe(`the loader cannot map ${lib}: "ELF load command address/offset not page-aligned": it is an ELF file whose segments are laid out for smaller memory pages than this machine's`);
    expect(report.problems[0].fix).toContain(`-Wl,-z,max-page-size=${PAGE}`);
    // The file was found: the human report does not call it "not found".
    expect(formatProblems(report)[0]).toBe(`error: cannot load: ${report.problems[0].summary}`);
    const user = buildLib({out: join(tmp.dir, name, 'libuser.so'), soname: 'libuser.so', source: 'int f(void);\nint u(void){return f();}\n', link: [lib], runpath: join(tmp.dir, name)});
    expect(spawnSync(driver, [user], {encoding: 'utf8'}).stdout).toBe(`ERR lib${name}.so: ELF load command address/offset not page-aligned\n`);
    const ldd = spawnSync('ldd', ['-r', user], {encoding: 'utf8'});
    expect(`${ldd.stdout}${ldd.stderr}`).toContain(`lib${name}.so: ELF load command address/offset not page-aligned`);
    const dep = await checkLibraries({targets: [user], exe: driver, ldLibraryPath: undefined, strict: true});
    expect(dep.problems[0]).toMatchObject({kind: 'not-found', object: user, library: `lib${name}.so`});
    expect(firstProblemLine(dep)).toContain(`the loader stops at ${lib} with "ELF load command address/offset not page-aligned"`);
  });

  test('an ordinary build loads here, and the rule for a 64 KB kernel refuses it (the rule alone: no such kernel here)', () => {
    const lib = buildLib({out: join(tmp.dir, 'plain', 'libplain.so'), soname: 'libplain.so', source: 'int p(void){return 1;}\n', extra: ['-Wl,-z,max-page-size=0x1000', '-Wl,-z,separate-code']});
    expect(spawnSync(driver, [lib], {encoding: 'utf8'}).stdout).toBe('OK\n');
    const info = readElfSync(lib);
    expect(segmentsMisaligned(info, PAGE)).toBe(false);
    expect(segmentsMisaligned(info, 65536)).toBe(true);
    // Built for 64 KB pages, it fits every smaller page size too.
    const big = readElfSync(buildLib({out: join(tmp.dir, 'plain', 'libbig.so'), soname: 'libbig.so', source: 'int b(void){return 1;}\n', extra: ['-Wl,-z,max-page-size=0x10000']}));
    expect([4096, 16384, 65536].map((p) => segmentsMisaligned(big, p))).toEqual([false, false, false]);
  });
});
