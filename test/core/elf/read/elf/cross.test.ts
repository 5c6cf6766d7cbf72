/**
 * ELF32 and big-endian objects, linked for real by cross binutils (the real GNU ld, version scripts
 * and all), with readelf as the oracle: i386 (ELF32 LE), powerpc (ELF32 BE), s390x (ELF64 BE).
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {readElfHeader} from '../../../../../src/core/elf/read/elf/index.js';
import {makeTempDir} from '../../../../helpers/tmp.js';
import {expectMatchesReadelf} from './compare.js';
import {have} from './oracle.js';
import {testIf} from '../../../../helpers/skip.js';

const TARGETS = [
  {prefix: 'i686-linux-gnu', pkg: 'binutils-i686-linux-gnu', elfClass: 32, littleEndian: true, machine: 3, word: '.long'},
  {prefix: 'powerpc-linux-gnu', pkg: 'binutils-powerpc-linux-gnu', elfClass: 32, littleEndian: false, machine: 20, word: '.long'},
  {prefix: 's390x-linux-gnu', pkg: 'binutils-s390x-linux-gnu', elfClass: 64, littleEndian: false, machine: 22, word: '.quad'},
] as const;

const PROVIDER = `
.text
.globl foo_v1
.type foo_v1,@function
foo_v1: .long 0
.globl foo_v2
.type foo_v2,@function
foo_v2: .long 0
.symver foo_v1, foo@VERS_1
.symver foo_v2, foo@@VERS_2
.globl bar
.type bar,@function
bar: .long 0
.weak weakfn
.type weakfn,@function
weakfn: .long 0
.data
.globl objvar
.type objvar,@object
.size objvar,4
objvar: .long 0
`;
const MAP = 'VERS_1 { global: foo; local: *; };\nVERS_2 { global: bar; weakfn; objvar; } VERS_1;\n';
const user = (word: string): string => `
.data
.globl table
.type table,@object
table:
  ${word} foo
  ${word} bar
  ${word} objvar
.weak maybe
  ${word} maybe
`;

describe('readElf on ELF32 and big-endian objects from cross binutils', () => {
  let dir: string;
  let cleanup: () => void;
  beforeAll(() => {
    ({dir, cleanup} = makeTempDir('cudaenv-elfx-'));
  });
  afterAll(() => cleanup());

  for (const t of TARGETS) {
    const available = have(`${t.prefix}-as`) && have(`${t.prefix}-ld`) && have('readelf');
    const run = testIf(available, `needs ${t.prefix}-as, ${t.prefix}-ld and readelf (apt-get install ${t.pkg} binutils)`);
    run(`${t.prefix}: ELF${t.elfClass} ${t.littleEndian ? 'little' : 'big'}-endian, GNU and SysV hash, verdef, verneed, RUNPATH`, async () => {
      const d = join(dir, t.prefix);
      mkdirSync(d);
      const sh = (tool: string, args: string[]): void => {
        execFileSync(`${t.prefix}-${tool}`, args, {cwd: d, stdio: ['ignore', 'ignore', 'pipe']});
      };
      writeFileSync(join(d, 'v.s'), PROVIDER);
      writeFileSync(join(d, 'v.map'), MAP);
      writeFileSync(join(d, 'u.s'), user(t.word));
      sh('as', ['-o', 'v.o', 'v.s']);
      sh('as', ['-o', 'u.o', 'u.s']);
      sh('ld', ['-shared', '-soname', 'libv.so.1', '--version-script', 'v.map', '--hash-style=gnu', '-o', 'libv.so.1', 'v.o']);
      sh('ld', ['-shared', '-soname', 'libvs.so.1', '--version-script', 'v.map', '--hash-style=sysv', '-o', 'libvs.so.1', 'v.o']);
      sh('ld', ['-shared', '-soname', 'libuser.so', '--enable-new-dtags', '-rpath', '$ORIGIN/lib:/opt/x', '-z', 'nodefaultlib',
        '-o', 'libuser.so', 'u.o', 'libv.so.1']);
      sh('ld', ['-shared', '--disable-new-dtags', '-rpath', '/old/rpath', '--hash-style=both', '-o', 'libuser_rpath.so', 'u.o', 'libv.so.1']);

      for (const lib of ['libv.so.1', 'libvs.so.1', 'libuser.so', 'libuser_rpath.so']) {
        const header = await readElfHeader(join(d, lib));
        expect(header).toMatchObject({elfClass: t.elfClass, littleEndian: t.littleEndian, machine: t.machine, type: 3});
        await expectMatchesReadelf(join(d, lib));
      }
      const gnu = await expectMatchesReadelf(join(d, 'libv.so.1'));
      const sysv = await expectMatchesReadelf(join(d, 'libvs.so.1'));
      expect([gnu.hashTable, sysv.hashTable]).toEqual(['gnu', 'sysv']);
      expect(gnu.symbols.filter((s) => s.name === 'foo').map((s) => `${s.version}${s.hidden ? ' hidden' : ''}`).sort())
        .toEqual(['VERS_1 hidden', 'VERS_2']);
      const u = await expectMatchesReadelf(join(d, 'libuser.so'));
      expect(u).toMatchObject({runpath: '$ORIGIN/lib:/opt/x', rpath: null, needed: ['libv.so.1']});
      expect(u.flags1 & 0x800).toBe(0x800);
      expect(u.versionNeeds).toEqual([{file: 'libv.so.1', versions: [expect.objectContaining({name: 'VERS_2', weak: false})]}]);
      expect(u.symbols.find((s) => s.name === 'bar')).toMatchObject({defined: false, version: 'VERS_2', versionFile: 'libv.so.1'});
      expect(u.symbols.find((s) => s.name === 'maybe')).toMatchObject({defined: false, binding: 2});
      expect((await expectMatchesReadelf(join(d, 'libuser_rpath.so'))).rpath).toBe('/old/rpath');
    });
  }
});
