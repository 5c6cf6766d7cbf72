/**
 * `readElf(path, {symbols: 'undefined'})` (what `cudaenv check` reads) against `{symbols: true}`:
 * the same undefined symbols, the same definitions found by name through the hash table, the same
 * answers from the loader model's `defines`, and the same error for every corrupt file but one kind:
 * a GNU hash chain word that does not match its symbol's name, which ld.so never checks (it then
 * cannot find that symbol) and the compact read does not either (its lookup walks the chain as
 * ld.so does: the real loader is the oracle below).
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync} from 'node:child_process';
import {existsSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {defines} from '../../../../../src/core/elf/bind/symbols.js';
import {readElf} from '../../../../../src/core/elf/read/elf/index.js';
import type {ElfInfo, ElfSymbol} from '../../../../../src/core/elf/read/elf/types.js';
import {makeTempDir} from '../../../../helpers/tmp.js';
import {gcc, have} from './oracle.js';
import {describeIf, testIf} from '../../../../helpers/skip.js';
import {NEEDS} from '../../../../helpers/capabilities.js';

const tools = have('gcc') && have('readelf');
const describeTools = describeIf(tools, 'needs gcc and readelf (apt-get install gcc binutils)');

const LIB = `
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
__attribute__((visibility("hidden"))) int hid(void) { return 8; }
int caf\\u00e9(void) { return 9; }
extern int needs_elsewhere(void);
extern int weak_elsewhere(void) __attribute__((weak));
int use(void) { return needs_elsewhere() + (weak_elsewhere ? weak_elsewhere() : 0); }
`;
const MAP = 'VERS_1 { global: foo; local: *; };\nVERS_2 { global: bar; weakfn; tlsvar; objvar; prot; hid; caf*; use; } VERS_1;\n';

/** An independent dl_new_hash over a name's UTF-8 bytes. */
function gnuHash(name: string): number {
  let h = 5381;
  for (const b of Buffer.from(name, 'utf8')) h = (Math.imul(h, 33) + b) >>> 0;
  return h;
}

function withoutHash(s: ElfSymbol): ElfSymbol {
  const {nameHash, ...rest} = s;
  expect(nameHash).toBe(gnuHash(s.name));
  return rest;
}

/** Every observable of the compact read equals the full read. */
async function expectSameAsFull(path: string): Promise<{full: ElfInfo; compact: ElfInfo}> {
  const full = await readElf(path, {symbols: true});
  const compact = await readElf(path, {symbols: 'undefined'});
  const {symbols: fullSymbols, ...fullRest} = full;
  const {symbols: compactSymbols, lookup, ...compactRest} = compact;
  expect(compactRest).toEqual(fullRest);
  expect(lookup).toBeDefined();
  expect(compactSymbols.map(withoutHash)).toEqual(fullSymbols.filter((s) => !s.defined));
  // Every name: the lookup reaches exactly the symbols ld.so's hash table holds under it.
  const names = new Set(fullSymbols.map((s) => s.name));
  for (const name of names) {
    const expected = full.hashTable === 'none' ? [] : fullSymbols.filter((s) => s.name === name && s.hashed);
    expect([name, [...lookup!.find(name)]]).toEqual([name, expected]);
    expect([name, [...lookup!.find(name, gnuHash(name))]]).toEqual([name, expected]);
  }
  expect(lookup!.find('no_such_symbol_anywhere_42')).toEqual([]);
  // The loader model's verdict for every symbol used as a reference, versioned or not, hidden or not.
  for (const s of fullSymbols) {
    for (const ref of [s, {...s, version: null, hidden: false}, {...s, hidden: !s.hidden}]) {
      expect([s.name, s.version, defines(compact, ref)]).toEqual([s.name, s.version, defines(full, ref)]);
    }
  }
  return {full, compact};
}

describeTools('readElf {symbols: \'undefined\'} on gcc-built libraries', () => {
  let dir: string;
  let cleanup: () => void;
  beforeAll(() => {
    ({dir, cleanup} = makeTempDir('cudaenv-elf-undef-'));
    writeFileSync(join(dir, 'lib.map'), MAP);
    for (const [name, style] of [['libgnu.so', 'gnu'], ['libsysv.so', 'sysv'], ['libboth.so', 'both']]) {
      gcc(dir, name, LIB, ['-shared', '-fPIC', `-Wl,--hash-style=${style}`, '-Wl,--version-script,lib.map', '-Wl,--allow-shlib-undefined']);
    }
    gcc(dir, 'libplain.so', 'extern int ext(void);\nint plain(void) { return ext(); }\n', ['-shared', '-fPIC']);
    gcc(dir, 'app', 'int main(void) { return 0; }\n', ['-static']);
  });
  afterAll(() => cleanup());

  test('GNU, SysV and dual hash tables: same symbols, lookups and verdicts as the full read', async () => {
    const {compact: gnu} = await expectSameAsFull(join(dir, 'libgnu.so'));
    const {compact: sysv} = await expectSameAsFull(join(dir, 'libsysv.so'));
    await expectSameAsFull(join(dir, 'libboth.so'));
    expect(gnu.hashTable).toBe('gnu');
    expect(sysv.hashTable).toBe('sysv');
    // Sanity of the fixture: the cases the lookup must get right are really there.
    expect(gnu.lookup!.find('foo').map((s) => `${s.version}${s.hidden ? ' hidden' : ''}`).sort()).toEqual(['VERS_1 hidden', 'VERS_2']);
    expect(gnu.lookup!.find('café')).toHaveLength(1);
    expect(gnu.symbols.map((s) => s.name)).toEqual(expect.arrayContaining(['needs_elsewhere', 'weak_elsewhere', 'puts']));
    expect(gnu.symbols.every((s) => !s.defined)).toBe(true);
    expect(defines(gnu, {name: 'foo', version: 'VERS_2', versionFile: null, hidden: false})).toBe(true);
    expect(defines(gnu, {name: 'hid', version: null, versionFile: null, hidden: false})).toBe(false);
    expect(defines(gnu, {name: 'café', version: 'VERS_2', versionFile: null, hidden: false})).toBe(true);
  });

  test('an unversioned library and a static program (no symbol table: nothing defined)', async () => {
    await expectSameAsFull(join(dir, 'libplain.so'));
    const {compact} = await expectSameAsFull(join(dir, 'app'));
    expect(compact.lookup!.find('main')).toEqual([]);
  });

  test('a corrupt file fails the same way in both modes', async () => {
    const good = readFileSync(join(dir, 'libgnu.so'));
    const sections = new Map<string, [number, number]>();
    const text = execFileSync('readelf', ['-SW', join(dir, 'libgnu.so')], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}});
    for (const line of text.split('\n')) {
      const m = /\]\s+(\.\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(line);
      if (m) sections.set(m[1], [parseInt(m[2], 16), parseInt(m[2], 16) + parseInt(m[3], 16)]);
    }
    const regions = ['.dynsym', '.dynstr', '.gnu.hash', '.gnu.version', '.gnu.version_d', '.gnu.version_r', '.dynamic'].map((s) => sections.get(s)!);
    let seed = 4242;
    const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const path = join(dir, 'libfuzz.so');
    const outcome = async (symbols: true | 'undefined'): Promise<string> => {
      try {
        const info = await readElf(path, {symbols});
        return `ok ${info.symbols.filter((s) => !s.defined).map((s) => `${s.name}@${s.version}`).join(',')}`;
      } catch (error) {
        return `error ${(error as Error).message}`;
      }
    };
    let failures = 0;
    let chainOnly = 0;
    for (let i = 0; i < 140; i++) {
      const buf = Buffer.from(good);
      const [lo, hi] = regions[i % regions.length];
      for (let k = 0; k < 3; k++) buf[lo + Math.floor(rand() * (hi - lo))] = Math.floor(rand() * 256);
      writeFileSync(path, buf);
      const full = await outcome(true);
      if (full.startsWith('error')) failures++;
      const compact = await outcome('undefined');
      if (/corrupt DT_GNU_HASH/.test(full)) {
        chainOnly++;
        // The compact read does not check chain words (ld.so does not): it fails, if at all, for another reason.
        expect(compact).not.toMatch(/corrupt DT_GNU_HASH/);
      } else {
        expect(compact).toBe(full);
      }
    }
    // The corruption must really break files, or the comparison above proves little.
    expect(failures).toBeGreaterThan(10);
    expect(chainOnly).toBeLessThan(failures);
  }, 30_000);

  /**
   * libgnu.so copied and linked by a program calling bar, which runs and binds bar; `corrupt` edits
   * the copy's bytes (given .gnu.hash's offset, from readelf's own view of the file); `check` gets the
   * copy and what the real loader printed running the program after the edit.
   */
  async function corrupted(tag: string, corrupt: (bytes: Buffer, hashOff: number, lib: string) => void, check: (lib: string, loaderSaid: string) => Promise<void>): Promise<void> {
    const {dir: d, cleanup: done} = makeTempDir(`cudaenv-elf-${tag}-`);
    try {
      const lib = join(d, 'libgnu.so');
      writeFileSync(lib, readFileSync(join(dir, 'libgnu.so')));
      gcc(d, 'app', 'extern int bar(void);\nint main(void) { return bar() == 3 ? 0 : 1; }\n', ['-L.', '-lgnu', '-Wl,-rpath,$ORIGIN', '-Wl,--allow-shlib-undefined']);
      expect(execFileSync(join(d, 'app'), {encoding: 'utf8'})).toBe('bar\n');
      expect((await readElf(lib, {symbols: 'undefined'})).lookup!.find('bar').length).toBe(1);
      const sections = execFileSync('readelf', ['-SW', lib], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}});
      const hashOff = parseInt(/\]\s+\.gnu\.hash\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)/.exec(sections)![1], 16);
      const bytes = readFileSync(lib);
      corrupt(bytes, hashOff, lib);
      writeFileSync(lib, bytes);
      let said = '';
      try {
        execFileSync(join(d, 'app'), {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']});
      } catch (error) {
        said = String((error as {stderr?: string}).stderr);
      }
      await check(lib, said);
    } finally {
      done();
    }
  }

  test('a Bloom filter without the name\'s bits: ld.so cannot find the symbol, and neither can the lookup', async () => {
    // Every filter word zeroed (its size from the table's header).
    await corrupted('bloom', (bytes, hashOff) => bytes.fill(0, hashOff + 16, hashOff + 16 + bytes.readUInt32LE(hashOff + 8) * 8), async (lib, said) => {
      expect(said).toMatch(/symbol lookup error: .*undefined symbol: bar, version VERS_2/);
      const compact = await readElf(lib, {symbols: 'undefined'});
      expect(compact.lookup!.find('bar')).toEqual([]);
      expect(compact.lookup!.find('foo')).toEqual([]);
    });
  });

  test('a chain word that does not match its name: ld.so cannot find the symbol, and neither can the lookup', async () => {
    // The chain word of bar: bar's index in .dynsym from readelf, the table's header from the file.
    await corrupted('chain', (bytes, hashOff, lib) => {
      const syms = execFileSync('readelf', ['--dyn-syms', '-W', lib], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}});
      const index = Number(/^\s*(\d+):.*\sbar@@VERS_2$/m.exec(syms)![1]);
      const [nbuckets, symoffset, bloomWords] = [bytes.readUInt32LE(hashOff), bytes.readUInt32LE(hashOff + 4), bytes.readUInt32LE(hashOff + 8)];
      const word = hashOff + 16 + bloomWords * 8 + nbuckets * 4 + (index - symoffset) * 4;
      bytes.writeUInt32LE(bytes.readUInt32LE(word) ^ 0x40, word); // a hash bit, not the chain's end bit
    }, async (lib, said) => {
      expect(said).toMatch(/symbol lookup error: .*undefined symbol: bar, version VERS_2/);
      // The full read refuses the file (its index would find bar); the compact read takes it and
      // its lookup finds no bar, as ld.so: the loader model's verdict is the loader's.
      await expect(readElf(lib, {symbols: true})).rejects.toThrow(/corrupt DT_GNU_HASH/);
      const compact = await readElf(lib, {symbols: 'undefined'});
      expect(compact.lookup!.find('bar')).toEqual([]);
      expect(compact.lookup!.find('foo').length).toBeGreaterThan(0);
    });
  });
});

/** Real libraries: glibc, libstdc++, and the downloaded CUDA libraries the differential tests use. */
const REAL = [
  '/lib/x86_64-linux-gnu/libc.so.6',
  '/usr/lib/x86_64-linux-gnu/libstdc++.so.6',
  join(process.cwd(), 'test/fixtures/downloaded/trixie/usr/lib/x86_64-linux-gnu/libnvJitLink.so.12.4.127'),
  join(process.cwd(), 'test/fixtures/downloaded/trixie/usr/lib/x86_64-linux-gnu/libcusparse.so.12.3.1.170'),
  join(process.cwd(), 'test/fixtures/downloaded/bookworm/usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89'),
];

describe('readElf {symbols: \'undefined\'} on real libraries', () => {
  for (const lib of REAL) testIf(existsSync(lib), lib.includes('/downloaded/') ? NEEDS.realCudaLibs : `needs ${lib}`).each([lib])('%s', async (path) => {
    const {full} = await expectSameAsFull(path);
    expect(full.symbols.length).toBeGreaterThan(50);
  }, 60_000);
});
