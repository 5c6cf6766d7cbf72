import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {checkLibraries} from '../../../src/core/elf/index.js';
import {copyRelocations} from '../../../src/core/elf/read/elf/index.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildLib, HAVE_GCC, lddVerdict} from './fixtures.js';

/**
 * A program that reads a library's variable (`extern int data_sym;`) holds its own copy of it: a
 * copy relocation (R_X86_64_COPY), whose definition ld.so looks up in the libraries while the
 * program starts, skipping the program. The symbol is *defined* in the program's .dynsym, so a
 * model that looks up only undefined symbols says "all libraries resolve" while the program
 * stops with "symbol lookup error" (python3, bash, node and nvcc all have copy relocations).
 */
let tmp: {dir: string; cleanup: () => void};
const programs: Record<string, string> = {};
let target: string;

describeIf(HAVE_GCC && process.platform === 'linux' && process.arch === 'x64', 'needs gcc on x86-64 Linux')('copy relocations of a program', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-copy-reloc-');
    const d = tmp.dir;
    const v = 'V1 { global: data_sym; other; local: *; };\n';
    const newer = buildLib({out: join(d, 'new', 'libd.so'), soname: 'libd.so', source: 'int data_sym = 5;\nint other = 1;\n', versionScript: v});
    // The same version node, without the variable: the version check passes, the lookup does not.
    buildLib({out: join(d, 'old', 'libd.so'), soname: 'libd.so', source: 'int other = 1;\n', versionScript: 'V1 { global: other; local: *; };\n'});
    const source = '#include <dlfcn.h>\n#include <stdio.h>\nextern int data_sym;\n' +
      'int main(int c, char **v) {\n  if (c > 1 && !dlopen(v[1], RTLD_NOW | RTLD_GLOBAL)) { printf("ERR %s\\n", dlerror()); return 3; }\n  printf("OK %d\\n", data_sym);\n  return 0;\n}\n';
    for (const [name, flags] of [['pie', ['-fPIE', '-pie']], ['nopie', ['-fno-pic', '-no-pie']]] as const) {
      programs[name] = buildLib({out: join(d, name, 'prog'), source, executable: true, link: [newer], runpath: join(d, 'old'), extra: [...flags]});
      programs[`${name}-ok`] = buildLib({out: join(d, `${name}-ok`, 'prog'), source, executable: true, link: [newer], runpath: join(d, 'new'), extra: [...flags]});
    }
    target = buildLib({out: join(d, 'libt.so'), soname: 'libt.so', source: 'int t(void){return 1;}\n'});
  });
  afterAll(() => tmp?.cleanup());

  test('the reader finds each copy relocation with the version it asks for', () => {
    for (const name of ['pie', 'nopie']) {
      expect(copyRelocations(programs[name])).toEqual(expect.arrayContaining([
        expect.objectContaining({name: 'data_sym', version: 'V1', versionFile: 'libd.so', weak: false}),
      ]));
    }
    // A library has none.
    expect(copyRelocations(target)).toEqual([]);
  });

  test.each(['pie', 'nopie'])('%s: the program stops at its start, and check says so', async (name) => {
    const prog = programs[name];
    const run = spawnSync(prog, [], {encoding: 'utf8', env: {PATH: process.env.PATH}});
    expect(run.status).toBe(127);
    expect(run.stderr).toContain(`symbol lookup error: ${prog}: undefined symbol: data_sym, version V1`);
    expect(lddVerdict(prog).symbols).toEqual([`data_sym@V1 ${prog}`]);
    // As ldd -r models it: the program checked as the loader starts it.
    const report = await checkLibraries({targets: [prog], ldLibraryPath: undefined});
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => [p.kind, p.object, p.symbol, p.version, p.library])).toEqual([['undefined-symbol', prog, 'data_sym', 'V1', 'libd.so']]);
    expect(report.problems[0].chosen).toBe(`${join(tmp.dir, 'old', 'libd.so')} (DT_RUNPATH entry ${join(tmp.dir, 'old')} of ${prog})`);
    expect(report.problems[0].explanation).toContain('a copy relocation');
    // With --exe: it stops before the dlopen, whatever the dlopened library holds.
    expect(spawnSync(prog, [target], {encoding: 'utf8', env: {PATH: process.env.PATH}}).status).toBe(127);
    const exe = await checkLibraries({targets: [target], exe: prog, ldLibraryPath: undefined, strict: true});
    expect(exe.problems.map((p) => [p.kind, p.object, p.symbol, p.when])).toEqual([['undefined-symbol', prog, 'data_sym', 'start']]);
    expect(exe.problems[0].explanation).toContain('stops there, before it dlopens anything');
  });

  test.each(['pie', 'nopie'])('%s: with the library that defines it, nothing to report', async (name) => {
    const prog = programs[`${name}-ok`];
    expect(spawnSync(prog, [target], {encoding: 'utf8', env: {PATH: process.env.PATH}}).stdout).toBe('OK 5\n');
    expect(lddVerdict(prog).symbols).toEqual([]);
    expect((await checkLibraries({targets: [prog], ldLibraryPath: undefined})).problems).toEqual([]);
    expect((await checkLibraries({targets: [target], exe: prog, ldLibraryPath: undefined, strict: true})).problems).toEqual([]);
  });
});
