import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync} from 'node:child_process';
import {existsSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {readElf, readElfHeader} from '../../../../../src/core/elf/read/elf/index.js';
import {makeTempDir} from '../../../../helpers/tmp.js';
import {expectMatchesReadelf} from './compare.js';
import {gcc, have} from './oracle.js';
import {describeIf, testIf} from '../../../../helpers/skip.js';

const tools = have('gcc') && have('readelf');
const describeTools = describeIf(tools, 'needs gcc and readelf (apt-get install gcc binutils)');

/** A library with two versions of foo (foo@VERS_1 hidden, foo@@VERS_2), a weak, a TLS, a protected symbol. */
const LIBV = `
#include <stdio.h>
int foo_v1(void) { return 1; }
int foo_v2(void) { return 2; }
__asm__(".symver foo_v1, foo@VERS_1");
__asm__(".symver foo_v2, foo@@VERS_2");
int bar(void) { puts("bar"); return 3; }
__attribute__((weak)) int weakfn(void) { return 4; }
__thread int tlsvar = 5;
int objvar = 6;
__attribute__((visibility("protected"))) int prot(void) { return 7; }
`;
const LIBV_MAP = 'VERS_1 { global: foo; local: *; };\nVERS_2 { global: bar; weakfn; tlsvar; objvar; prot; } VERS_1;\n';
const USER = `
extern int foo(void); extern int bar(void);
extern int missing_weak(void) __attribute__((weak));
int use(void) { return foo() + bar() + (missing_weak ? missing_weak() : 0); }
`;

describeTools('readElf against readelf on gcc-built libraries', () => {
  let dir: string;
  let cleanup: () => void;
  beforeAll(() => {
    ({dir, cleanup} = makeTempDir('cudaenv-elf-'));
    writeFileSync(join(dir, 'libv.map'), LIBV_MAP);
    gcc(dir, 'libv.so.1', LIBV, ['-shared', '-fPIC', '-Wl,-soname,libv.so.1', '-Wl,--version-script,libv.map']);
    gcc(dir, 'libuser_rpath.so', USER, ['-shared', '-fPIC', '-L.', '-l:libv.so.1',
      '-Wl,--disable-new-dtags', '-Wl,-rpath,/opt/a:$ORIGIN/../lib', '-Wl,-soname,libuser.so']);
    gcc(dir, 'libuser_runpath.so', USER, ['-shared', '-fPIC', '-L.', '-l:libv.so.1',
      '-Wl,--enable-new-dtags', '-Wl,-rpath,$ORIGIN:$ORIGIN/../../nvjitlink/lib', '-Wl,-z,nodefaultlib', '-Wl,-z,now']);
    gcc(dir, 'libsysv.so', LIBV, ['-shared', '-fPIC', '-Wl,--hash-style=sysv', '-Wl,--version-script,libv.map']);
    gcc(dir, 'libboth.so', LIBV, ['-shared', '-fPIC', '-Wl,--hash-style=both', '-Wl,--version-script,libv.map']);
    gcc(dir, 'libplain.so', 'int plain(void) { return 0; }\n', ['-shared', '-fPIC']);
    gcc(dir, 'app', 'extern int foo(void);\nint main(void) { return foo(); }\n', ['-L.', '-l:libv.so.1', '-Wl,-rpath,$ORIGIN']);
  });
  afterAll(() => cleanup());

  test('versioned library: soname, verdef with parents, both versions of foo, symbol kinds', async () => {
    const info = await expectMatchesReadelf(join(dir, 'libv.so.1'));
    expect(info.soname).toBe('libv.so.1');
    expect(info.versionDefinitions.map((d) => d.name)).toEqual(['libv.so.1', 'VERS_1', 'VERS_2']);
    expect(info.versionDefinitions[2].parents).toEqual(['VERS_1']);
    const foo = info.symbols.filter((s) => s.name === 'foo').map((s) => [s.version, s.hidden]);
    expect(foo.sort()).toEqual([['VERS_1', true], ['VERS_2', false]]);
    expect(info.symbols.find((s) => s.name === 'tlsvar')?.type).toBe(6);
    expect(info.symbols.find((s) => s.name === 'weakfn')?.binding).toBe(2);
    expect(info.symbols.find((s) => s.name === 'prot')?.visibility).toBe(3);
    expect(info.symbols.find((s) => s.name === 'puts')).toMatchObject({defined: false, version: 'GLIBC_2.2.5', versionFile: 'libc.so.6'});
    expect(info.hashTable).toBe('gnu');
    expect(info.hasVersym).toBe(true);
    expect(info).toMatchObject({elfClass: 64, littleEndian: true, machine: 62, type: 3});
  });

  test('DT_RPATH (--disable-new-dtags) and a verneed on a gcc-built provider', async () => {
    const info = await expectMatchesReadelf(join(dir, 'libuser_rpath.so'));
    expect(info.rpath).toBe('/opt/a:$ORIGIN/../lib');
    expect(info.runpath).toBeNull();
    expect(info.needed).toContain('libv.so.1');
    const need = info.versionNeeds.find((n) => n.file === 'libv.so.1');
    expect(need?.versions.map((v) => v.name).sort()).toEqual(['VERS_2']); // foo binds to its default, foo@@VERS_2
    expect(info.symbols.find((s) => s.name === 'bar')).toMatchObject({defined: false, version: 'VERS_2', versionFile: 'libv.so.1'});
    expect(info.symbols.find((s) => s.name === 'missing_weak')).toMatchObject({defined: false, binding: 2, version: null});
  });

  test('DT_RUNPATH (--enable-new-dtags), -z nodeflib, -z now', async () => {
    const info = await expectMatchesReadelf(join(dir, 'libuser_runpath.so'));
    expect(info.runpath).toBe('$ORIGIN:$ORIGIN/../../nvjitlink/lib');
    expect(info.rpath).toBeNull();
    expect(info.flags1 & 0x800).toBe(0x800);
    expect(info.bindNow).toBe(true);
    expect(info.soname).toBeNull();
  });

  test('both DT_RPATH and DT_RUNPATH are reported raw (the loader model drops the RPATH, as ld.so does)', async () => {
    // Turn the DT_RELACOUNT hint (0x6ffffff9; only an optimisation) into a DT_RPATH naming the RUNPATH string.
    const buf = readFileSync(join(dir, 'libuser_runpath.so'));
    const info = await readElf(join(dir, 'libuser_runpath.so'));
    let runpathValue: bigint | null = null;
    let patched = false;
    const phoff = Number(buf.readBigUInt64LE(32));
    let dynOff = 0;
    let dynSize = 0;
    for (let i = 0; i < buf.readUInt16LE(56); i++) {
      const p = phoff + i * 56;
      if (buf.readUInt32LE(p) === 2) [dynOff, dynSize] = [Number(buf.readBigUInt64LE(p + 8)), Number(buf.readBigUInt64LE(p + 32))];
    }
    for (let o = dynOff; o < dynOff + dynSize; o += 16) if (buf.readBigInt64LE(o) === 29n) runpathValue = buf.readBigUInt64LE(o + 8);
    for (let o = dynOff; o < dynOff + dynSize && runpathValue !== null; o += 16) {
      if (buf.readBigInt64LE(o) === 0x6ffffff9n) {
        buf.writeBigInt64LE(15n, o);
        buf.writeBigUInt64LE(runpathValue, o + 8);
        patched = true;
        break;
      }
    }
    // gcc's crtbeginS.o always brings R_X86_64_RELATIVE relocations, so GNU ld writes a DT_RELACOUNT.
    expect({patched, why: 'the linker emitted no DT_RELACOUNT to repurpose'}).toMatchObject({patched: true});
    writeFileSync(join(dir, 'libboth_paths.so'), buf);
    const both = await expectMatchesReadelf(join(dir, 'libboth_paths.so'));
    expect({rpath: both.rpath, runpath: both.runpath}).toEqual({rpath: info.runpath, runpath: info.runpath});
  });

  test('SysV-only and dual hash tables give the same symbols', async () => {
    const sysv = await expectMatchesReadelf(join(dir, 'libsysv.so'));
    const both = await expectMatchesReadelf(join(dir, 'libboth.so'));
    expect(sysv.hashTable).toBe('sysv');
    expect(both.hashTable).toBe('gnu');
    expect(sysv.symbols.every((s) => s.hashed)).toBe(true);
    const names = (i: typeof sysv) => i.symbols.filter((s) => s.defined).map((s) => `${s.name}@${s.version}`).sort();
    expect(names(sysv)).toEqual(names(both));
  });

  test('an unversioned library and an executable with PT_INTERP', async () => {
    const plain = await expectMatchesReadelf(join(dir, 'libplain.so'));
    expect(plain.versionDefinitions).toEqual([]);
    expect(plain.symbols.find((s) => s.name === 'plain')).toMatchObject({defined: true, version: null, versionIndex: plain.hasVersym ? 1 : 0});
    const app = await expectMatchesReadelf(join(dir, 'app'));
    expect(app.interp).toMatch(/ld-linux/);
    expect(app.runpath ?? app.rpath).toBe('$ORIGIN');
  });

  test('without {symbols} only the count is computed, and it agrees', async () => {
    const lean = await readElf(join(dir, 'libv.so.1'));
    const full = await readElf(join(dir, 'libv.so.1'), {symbols: true});
    expect(lean.symbols).toEqual([]);
    expect(lean.symbolCount).toBe(full.symbolCount);
    expect({...lean, symbols: []}).toEqual({...full, symbols: []});
  });

  test('PT_GNU_STACK flags as readelf shows them; none for an object linked from assembler without .note.GNU-stack', async () => {
    gcc(dir, 'libexecstack.so', 'int e(void) { return 0; }\n', ['-shared', '-fPIC', '-Wl,-z,execstack']);
    writeFileSync(join(dir, 'nonote.s'), '\t.text\n\t.globl f\n\t.type f,@function\nf:\n\tret\n');
    execFileSync('sh', ['-c', 'as -o nonote.o nonote.s && ld -shared -o libnonote.so nonote.o'], {cwd: dir});
    const flagsOf = (file: string): number | null => {
      const m = /GNU_STACK(?:\s+0x[0-9a-f]+){5}\s+(R?)\s*(W?)\s*(E?)\s/.exec(execFileSync('readelf', ['-lW', join(dir, file)], {encoding: 'utf8'}));
      return m ? (m[1] ? 4 : 0) | (m[2] ? 2 : 0) | (m[3] ? 1 : 0) : null;
    };
    for (const file of ['libplain.so', 'libexecstack.so', 'libnonote.so']) expect((await readElf(join(dir, file))).stackFlags).toBe(flagsOf(file));
    expect((await readElf(join(dir, 'libplain.so'))).stackFlags).toBe(6);
    expect((await readElf(join(dir, 'libexecstack.so'))).stackFlags).toBe(7);
    expect((await readElf(join(dir, 'libnonote.so'))).stackFlags).toBeNull();
  });

  test('readElfHeader reads just the header', async () => {
    expect(await readElfHeader(join(dir, 'libv.so.1'))).toEqual({
      path: join(dir, 'libv.so.1'), elfClass: 64, littleEndian: true, machine: 62, type: 3, osabi: 0,
    });
    expect((await readElfHeader(join(dir, 'app'))).type).toBe(3); // PIE executables are ET_DYN
  });
});

const SYSTEM_LIBS = ['/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib/x86_64-linux-gnu/libstdc++.so.6', '/lib/x86_64-linux-gnu/libm.so.6'];
describeTools('readElf against readelf on the system libraries', () => {
  for (const lib of SYSTEM_LIBS) {
    testIf(existsSync(lib), `needs ${lib} (a Debian-style x86-64 system)`)(lib, async () => {
      const info = await expectMatchesReadelf(lib);
      expect(info.symbols.length).toBe(info.symbolCount - 1);
    });
  }
});

/** gcc -m32 needs gcc's multilib package; the cross-binutils test covers ELF32 without it. */
function canCompile32(): boolean {
  if (!tools) return false;
  const {dir, cleanup} = makeTempDir('cudaenv-m32-');
  try {
    gcc(dir, 'probe32.so', 'int x(void) { return 1; }\n', ['-m32', '-shared', '-fPIC']);
    return true;
  } catch {
    return false;
  } finally {
    cleanup();
  }
}
const m32 = canCompile32();
describeIf(m32, 'needs gcc -m32 (apt-get install gcc-12-multilib, or the multilib package of your gcc)')('readElf on a gcc -m32 library', () => {
  test('ELF32 i386 with versions agrees with readelf', async () => {
    const {dir, cleanup} = makeTempDir('cudaenv-m32-');
    try {
      writeFileSync(join(dir, 'libv.map'), LIBV_MAP);
      gcc(dir, 'libv32.so.1', LIBV, ['-m32', '-shared', '-fPIC', '-Wl,-soname,libv32.so.1', '-Wl,--version-script,libv.map']);
      const info = await expectMatchesReadelf(join(dir, 'libv32.so.1'));
      expect(info).toMatchObject({elfClass: 32, machine: 3, soname: 'libv32.so.1'});
    } finally {
      cleanup();
    }
  });
});
