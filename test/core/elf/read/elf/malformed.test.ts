import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync} from 'node:child_process';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {ElfError, readElf, readElfHeader} from '../../../../../src/core/elf/read/elf/index.js';
import {makeTempDir} from '../../../../helpers/tmp.js';
import {gcc, have} from './oracle.js';
import {describeIf} from '../../../../helpers/skip.js';

const tools = have('gcc') && have('readelf');
const describeTools = describeIf(tools, 'needs gcc and readelf (apt-get install gcc binutils)');

/** Every outcome must be a parse or an ElfError naming the file; anything else is a reader bug. */
async function outcome(path: string, symbols = true): Promise<'ok' | ElfError> {
  try {
    await readElf(path, {symbols});
    return 'ok';
  } catch (error) {
    if (!(error instanceof ElfError)) throw new Error(`${path}: threw ${String(error)} instead of an ElfError`);
    expect(error.path).toBe(path);
    expect(error.message).toContain(path);
    return error;
  }
}

async function expectElfError(path: string, reason: string, pattern?: RegExp, symbols = true): Promise<ElfError> {
  const result = await outcome(path, symbols);
  if (result === 'ok') throw new Error(`${path}: parsed although it is broken`);
  expect(result.reason).toBe(reason);
  if (pattern) expect(result.message).toMatch(pattern);
  return result;
}

interface Section {name: string; offset: number; size: number}
function sections(file: string): Map<string, Section> {
  const out = new Map<string, Section>();
  const text = execFileSync('readelf', ['-SW', file], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}});
  for (const line of text.split('\n')) {
    const m = /\]\s+(\.\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(line);
    if (m) out.set(m[1], {name: m[1], offset: parseInt(m[2], 16), size: parseInt(m[3], 16)});
  }
  return out;
}

describeTools('readElf on malformed input', () => {
  let dir: string;
  let cleanup: () => void;
  let lib: string;
  let sysv: string;
  let good: Buffer;
  let secs: Map<string, Section>;
  let n = 0;
  const variant = (mutate: (b: Buffer) => void, base?: Buffer): string => {
    const buf = Buffer.from(base ?? good);
    mutate(buf);
    const path = join(dir, `bad${n++}.so`);
    writeFileSync(path, buf);
    return path;
  };
  // The test library is x86_64: ELF64, little-endian.
  const phdr = (b: Buffer, type: number): number => {
    const phoff = Number(b.readBigUInt64LE(32));
    for (let i = 0; i < b.readUInt16LE(56); i++) if (b.readUInt32LE(phoff + i * 56) === type) return phoff + i * 56;
    throw new Error(`no program header of type ${type}`);
  };
  /** File offset of the dynamic entry with `tag`. */
  const dynEntry = (b: Buffer, tag: number): number => {
    const d = secs.get('.dynamic')!;
    for (let o = d.offset; o < d.offset + d.size; o += 16) if (Number(b.readBigInt64LE(o)) === tag) return o;
    throw new Error(`no dynamic tag ${tag}`);
  };

  beforeAll(() => {
    ({dir, cleanup} = makeTempDir('cudaenv-elfbad-'));
    writeFileSync(join(dir, 'v.map'), 'V_1 { global: *; };\n');
    const src = 'int foo(void) { return 1; }\nint bar(void) { return 2; }\nextern int puts(const char *);\nint baz(void) { return puts("x"); }\n';
    lib = gcc(dir, 'libgood.so', src, ['-shared', '-fPIC', '-Wl,-soname,libgood.so', '-Wl,--version-script,v.map']);
    sysv = gcc(dir, 'libsysv.so', src, ['-shared', '-fPIC', '-Wl,--hash-style=sysv']);
    good = readFileSync(lib);
    secs = sections(lib);
  });
  afterAll(() => cleanup());

  test('the unmodified library parses (the mutations below start from a good file)', async () => {
    expect(await outcome(lib)).toBe('ok');
  });

  test('an empty file, a text file, linker scripts, a directory, a FIFO, a device, a missing path', async () => {
    const empty = join(dir, 'libempty.so');
    writeFileSync(empty, '');
    await expectElfError(empty, 'truncated', /too short/);
    const text = join(dir, 'libtext.so');
    writeFileSync(text, 'hello, I am not a library\n');
    await expectElfError(text, 'not-elf', /not an ELF file/);
    for (const [name, body] of [
      ['libc.so', '/* GNU ld script\n   Use the shared library, but some functions are only in\n   the static library.  */\nOUTPUT_FORMAT(elf64-x86-64)\nGROUP ( /lib/x86_64-linux-gnu/libc.so.6 )\n'],
      ['libfoo.so', 'INPUT(-lbar)\n'],
      ['libgrp.so', '  GROUP ( libx.so.1 AS_NEEDED ( liby.so.2 ) )\n'],
    ]) {
      const script = join(dir, name);
      writeFileSync(script, body);
      await expectElfError(script, 'not-elf', /linker script/);
      await expect(readElfHeader(script)).rejects.toMatchObject({reason: 'not-elf'});
    }
    const sub = join(dir, 'libdir.so');
    mkdirSync(sub);
    const dirError = await expectElfError(sub, 'io', /directory/);
    expect(dirError.errno).toBe('EISDIR');
    const fifo = join(dir, 'libfifo.so');
    execFileSync('mkfifo', [fifo]);
    await expectElfError(fifo, 'io', /not a regular file/);
    await expectElfError('/dev/null', 'io', /not a regular file/);
    const missing = await expectElfError(join(dir, 'libmissing.so'), 'io', /no such file/);
    expect(missing.errno).toBe('ENOENT');
    await expect(readElfHeader(join(dir, 'libmissing.so'))).rejects.toBeInstanceOf(ElfError);
  });

  test('truncated at many offsets: an ElfError whenever the cut removes something the reader needs', async () => {
    const needed = ['.dynamic', '.dynsym', '.dynstr', '.gnu.hash', '.gnu.version', '.gnu.version_d', '.gnu.version_r']
      .map((s) => secs.get(s)).filter((s): s is Section => s !== undefined);
    const needEnd = Math.max(...needed.map((s) => s.offset + s.size));
    const cuts = new Set([1, 3, 4, 10, 16, 40, 63, 64, 100, needEnd - 1]);
    for (const s of needed) cuts.add(s.offset + Math.floor(s.size / 2));
    for (let i = 1; i < 24; i++) cuts.add(Math.floor((good.length * i) / 24));
    for (const cut of [...cuts].sort((a, b) => a - b)) {
      const path = join(dir, `libcut${cut}.so`);
      writeFileSync(path, good.subarray(0, cut));
      const result = await outcome(path);
      if (cut < needEnd) {
        if (result === 'ok') throw new Error(`cut at ${cut} (< ${needEnd}) parsed`);
        expect(['truncated', 'malformed']).toContain(result.reason);
      }
    }
  });

  test('header fields pointing outside the file or with impossible values', async () => {
    await expectElfError(variant((b) => b.writeBigUInt64LE(0x7fffffff0000n, 32)), 'truncated', /program header table/);
    await expectElfError(variant((b) => b.writeBigUInt64LE(0xffffffffffffffffn, 32)), 'malformed', /impossible offset/);
    await expectElfError(variant((b) => b.writeUInt16LE(40, 54)), 'malformed', /e_phentsize/);
    await expectElfError(variant((b) => { b[4] = 7; }), 'malformed', /ELF class/);
    await expectElfError(variant((b) => { b[5] = 9; }), 'malformed', /byte order/);
    await expectElfError(variant((b) => { b[6] = 2; }), 'unsupported', /ELF version/);
    await expect(readElfHeader(variant((b) => { b[4] = 0; }))).rejects.toMatchObject({reason: 'malformed'});
  });

  test('PT_DYNAMIC past the end, oversized, without DT_NULL', async () => {
    // ld.so locates the dynamic array by address; a wrong p_offset alone changes nothing.
    const offsetOnly = variant((b) => b.writeBigUInt64LE(BigInt(good.length + 4096), phdr(b, 2) + 8));
    expect((await readElf(offsetOnly)).soname).toBe('libgood.so');
    await expectElfError(variant((b) => {
      b.writeBigUInt64LE(0x7ff00000000n, phdr(b, 2) + 16);
      b.writeBigUInt64LE(BigInt(good.length + 4096), phdr(b, 2) + 8);
    }), 'truncated', /dynamic section/);
    await expectElfError(variant((b) => b.writeBigUInt64LE(0x40000000n, phdr(b, 2) + 32)), 'malformed', /PT_DYNAMIC/);
    await expectElfError(variant((b) => {
      const d = secs.get('.dynamic')!;
      // Replace every DT_NULL with DT_DEBUG (21): the array no longer ends.
      for (let o = d.offset; o < d.offset + d.size; o += 16) if (b.readBigInt64LE(o) === 0n) b.writeBigInt64LE(21n, o);
    }), 'malformed', /DT_NULL/);
  });

  test('string table problems: DT_STRSZ past the end, a DT_NEEDED offset outside the table, DT_STRTAB outside every segment', async () => {
    await expectElfError(variant((b) => b.writeBigUInt64LE(BigInt(good.length * 2), dynEntry(b, 10) + 8)), 'malformed', /DT_STRTAB|segment/);
    await expectElfError(variant((b) => b.writeBigUInt64LE(0x7ffffffn, dynEntry(b, 1) + 8)), 'malformed', /DT_NEEDED.*outside the string table/);
    await expectElfError(variant((b) => b.writeBigUInt64LE(0x7ff00000000n, dynEntry(b, 5) + 8)), 'malformed', /not inside any loadable segment/);
    await expectElfError(variant((b) => {
      // Overwrite the NUL bytes at the end of .dynstr so the last string never ends.
      const s = secs.get('.dynstr')!;
      b.fill(0x41, s.offset + s.size - 8, s.offset + s.size);
    }), 'malformed', /not NUL-terminated/);
  });

  test('GNU hash: a chain without end markers, a bucket past the end, with a time limit', async () => {
    const h = secs.get('.gnu.hash')!;
    const nbuckets = good.readUInt32LE(h.offset);
    const bloom = good.readUInt32LE(h.offset + 8);
    const chain = h.offset + 16 + bloom * 8 + nbuckets * 4;
    // Clearing every chain word's end bit turns the last chain into a walk through whatever follows.
    const noEnd = variant((b) => { for (let o = chain; o < h.offset + h.size; o += 4) b.writeUInt32LE(b.readUInt32LE(o) & ~1, o); });
    await expectElfError(noEnd, 'malformed', /hash/);
    await outcome(noEnd, false); // without symbols: a bounded count or an ElfError, never a hang
    const far = variant((b) => b.writeUInt32LE(0x3fffffff, h.offset + 16 + bloom * 8));
    await expectElfError(far, 'malformed', /GNU hash chain/, false);
    const hugeBuckets = variant((b) => b.writeUInt32LE(0x7fffffff, h.offset));
    await expectElfError(hugeBuckets, 'malformed', /GNU hash buckets/, false);
  }, 10_000);

  test('SysV hash: an absurd nchain is rejected before anything is allocated', async () => {
    const sysvBuf = readFileSync(sysv);
    const hash = sections(sysv).get('.hash')!;
    const path = variant((b) => b.writeUInt32LE(0x0fffffff, hash.offset + 4), sysvBuf);
    await expectElfError(path, 'malformed', /SysV hash/, false);
  });

  test('version sections: bad record version, chains past the end, undefined version index', async () => {
    const vd = secs.get('.gnu.version_d')!;
    await expectElfError(variant((b) => b.writeUInt16LE(2, vd.offset)), 'unsupported', /Verdef/);
    await expectElfError(variant((b) => b.writeUInt32LE(0x7ffffff0, vd.offset + 16)), 'truncated', /verdef/);
    const vr = secs.get('.gnu.version_r')!;
    await expectElfError(variant((b) => b.writeUInt32LE(0x7ffffff0, vr.offset + 8)), 'truncated', /vernaux/);
    const vs = secs.get('.gnu.version')!;
    // Give symbol 1 a version index nothing defines.
    await expectElfError(variant((b) => b.writeUInt16LE(0x1234, vs.offset + 2)), 'malformed', /version index/);
  });

  test('random byte corruption never escapes as anything but an ElfError', async () => {
    let seed = 12345;
    const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const end = Math.max(...['.dynamic', '.dynsym', '.dynstr', '.gnu.hash'].map((s) => secs.get(s)!.offset + secs.get(s)!.size));
    const regions = [[0, 64 + 56 * good.readUInt16LE(56)], ...['.dynamic', '.dynsym', '.gnu.hash', '.gnu.version_d', '.gnu.version_r']
      .map((s) => [secs.get(s)!.offset, secs.get(s)!.offset + secs.get(s)!.size])];
    expect(end).toBeLessThan(good.length);
    const path = join(dir, 'libfuzz.so');
    for (let i = 0; i < 150; i++) {
      const buf = Buffer.from(good);
      const [lo, hi] = regions[i % regions.length];
      for (let k = 0; k < 4; k++) buf[lo + Math.floor(rand() * (hi - lo))] = Math.floor(rand() * 256);
      writeFileSync(path, buf);
      await outcome(path, i % 2 === 0);
    }
  }, 30_000);
});
