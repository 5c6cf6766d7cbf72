import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync, spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {
  formatLdconfigLine, hostX86IsaLevel, isaLevelFromFlags, loadLdCache, lookupCache, lookupCacheEntry,
  normalizeCacheKey, parseCacheBuffer, parseLdconfigOutput, CacheFormatError, type LdCache,
} from '../../../../../src/core/elf/read/ldcache/index.js';
import {makeTempDir} from '../../../../helpers/tmp.js';
import {gcc, have} from '../elf/oracle.js';
import {describeIf, testIf} from '../../../../helpers/skip.js';
import {CAN_MOUNT_NAMESPACE, NEEDS} from '../../../../helpers/capabilities.js';

const LDCONFIG = ['/usr/sbin/ldconfig', '/sbin/ldconfig'].find((p) => existsSync(p)) ?? (have('ldconfig') ? 'ldconfig' : null);
const tools = LDCONFIG !== null && have('gcc');
const describeTools = describeIf(tools, 'needs ldconfig and gcc (apt-get install libc-bin gcc)');
const HAVE_I686 = have('i686-linux-gnu-as') && have('i686-linux-gnu-ld');
const NEEDS_I686 = 'needs i686-linux-gnu-as and -ld (apt-get install binutils-i686-linux-gnu)';

function ldconfigLines(cacheFile: string): string[] {
  const out = execFileSync(LDCONFIG!, ['-p', '-C', cacheFile], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}, maxBuffer: 64 << 20});
  return out.split('\n').filter((l) => l.startsWith('\t'));
}

const X64 = {elfClass: 64, machine: 62} as const;

describeTools('ld.so.cache reader against ldconfig -p', () => {
  let dir: string;
  let cleanup: () => void;
  const caches: Record<string, string> = {};

  beforeAll(() => {
    ({dir, cleanup} = makeTempDir('cudaenv-ldcache-'));
    for (const d of ['D1', 'D2', 'D1/glibc-hwcaps/x86-64-v2', 'D1/glibc-hwcaps/x86-64-v3', 'D32']) mkdirSync(join(dir, d), {recursive: true});
    const lib = (sub: string, file: string, soname: string | null, value: number): void => {
      gcc(join(dir, sub), file, `int which(void) { return ${value}; }\n`,
        ['-shared', '-fPIC', ...(soname ? [`-Wl,-soname,${soname}`] : [])]);
    };
    lib('D1', 'libfoo.so.1', 'libfoo.so.1', 1);
    lib('D2', 'libfoo.so.1', 'libfoo.so.1', 2);
    lib('D1', 'libbar.so.2', 'libbar.so.2', 3);
    lib('D1', 'libhw.so.1', 'libhw.so.1', 10);
    lib('D1/glibc-hwcaps/x86-64-v2', 'libhw.so.1', 'libhw.so.1', 12);
    lib('D1/glibc-hwcaps/x86-64-v3', 'libhw.so.1', 'libhw.so.1', 13);
    lib('D1', 'libnosoname.so', null, 4);
    lib('D1', 'libzero.so.01', 'libzero.so.01', 5);
    // A 32-bit i386 library, assembled and linked by hand when cross binutils exist (no gcc-multilib needed).
    if (HAVE_I686) {
      writeFileSync(join(dir, 'D32/t.s'), '.text\n.globl which\nwhich: ret\n');
      execFileSync('i686-linux-gnu-as', ['-o', join(dir, 'D32/t.o'), join(dir, 'D32/t.s')]);
      execFileSync('i686-linux-gnu-ld', ['-shared', '-soname', 'libthirty.so.1', '-o', join(dir, 'D32/libthirty.so.1'), join(dir, 'D32/t.o')]);
    }
    // D2 is listed before D1: its libfoo.so.1 must come first in the cache and win.
    writeFileSync(join(dir, 'ld.so.conf'), [join(dir, 'D2'), join(dir, 'D1'), join(dir, 'D32'), ''].join('\n'));
    for (const format of ['new', 'compat', 'old']) {
      caches[format] = join(dir, `cache.${format}`);
      execFileSync(LDCONFIG!, ['-C', caches[format], '-f', join(dir, 'ld.so.conf'), '-c', format, '-X'], {stdio: 'ignore'});
    }
  });
  afterAll(() => cleanup());

  for (const format of ['new', 'compat', 'old'] as const) {
    test(`${format} layout: every entry as ldconfig -p prints it, in the same order`, () => {
      const cache = loadLdCache(caches[format]);
      expect(cache.format).toBe(format);
      expect(cache.warnings).toEqual([]);
      expect(cache.entries.map(formatLdconfigLine)).toEqual(ldconfigLines(caches[format]));
      expect(cache.entries.some((e) => e.path === join(dir, 'D1', 'libbar.so.2'))).toBe(true);
      if (format !== 'old') expect(cache.generator).toMatch(/ldconfig/);
    });
  }

  test('compat layout: ld.so reads the hwcaps names at the wrong base, so those entries are never chosen', () => {
    const cache = loadLdCache(caches.compat);
    const hw = cache.entries.filter((e) => e.key === 'libhw.so.1');
    expect(hw).toHaveLength(3);
    expect(hw.slice(0, 2).every((e) => e.hwcapsSubdir !== null && !/^x86-64-v\d$/.test(e.hwcapsSubdir))).toBe(true);
    expect(lookupCache(cache, 'libhw.so.1', {...X64, isaLevel: 4})).toBe(join(dir, 'D1/libhw.so.1'));
  });

  test('glibc-hwcaps entries carry their subdirectory; the 32-bit entry its class', () => {
    const cache = loadLdCache(caches.new);
    const hw = cache.entries.filter((e) => e.key === 'libhw.so.1');
    expect(hw.map((e) => e.hwcapsSubdir)).toEqual(['x86-64-v2', 'x86-64-v3', null]);
    expect(hw.every((e) => e.flags === 0x0303 && e.elfClass === 64 && e.arch === 'x86-64')).toBe(true);
  });

  testIf(HAVE_I686, NEEDS_I686)('the 32-bit i386 entry: its class, and lookups by class', () => {
    const cache = loadLdCache(caches.new);
    const e32 = cache.entries.find((e) => e.key === 'libthirty.so.1');
    expect(e32).toMatchObject({elfClass: null, arch: '', path: join(dir, 'D32', 'libthirty.so.1')});
    expect(e32!.flags & 0xff00).toBe(0);
    expect(lookupCache(cache, 'libthirty.so.1', {elfClass: 32, machine: 3})).toBe(join(dir, 'D32', 'libthirty.so.1'));
    expect(lookupCache(cache, 'libthirty.so.1', X64)).toBeNull();
  });

  test('lookup: ld.so.conf order, hwcaps priority by ISA level, class filtering, numeric digit runs', () => {
    for (const format of ['new'] as const) {
      const cache = loadLdCache(caches[format]);
      expect(lookupCache(cache, 'libfoo.so.1', X64)).toBe(join(dir, 'D2', 'libfoo.so.1'));
      expect(lookupCache(cache, 'libhw.so.1', {...X64, isaLevel: 4})).toBe(join(dir, 'D1/glibc-hwcaps/x86-64-v3/libhw.so.1'));
      expect(lookupCache(cache, 'libhw.so.1', {...X64, isaLevel: 3})).toBe(join(dir, 'D1/glibc-hwcaps/x86-64-v3/libhw.so.1'));
      expect(lookupCache(cache, 'libhw.so.1', {...X64, isaLevel: 2})).toBe(join(dir, 'D1/glibc-hwcaps/x86-64-v2/libhw.so.1'));
      expect(lookupCache(cache, 'libhw.so.1', {...X64, isaLevel: 1})).toBe(join(dir, 'D1/libhw.so.1'));
      expect(lookupCache(cache, 'libhw.so.1', {...X64, hwcapsSubdirs: []})).toBe(join(dir, 'D1/libhw.so.1'));
      expect(lookupCache(cache, 'libnosoname.so', X64)).toBe(join(dir, 'D1', 'libnosoname.so'));
      expect(lookupCache(cache, 'libzero.so.1', X64)).toBe(join(dir, 'D1', 'libzero.so.01'));
      expect(lookupCache(cache, 'libnothere.so.1', X64)).toBeNull();
      // aarch64 and i386 processes do not take x86-64 entries.
      expect(lookupCache(cache, 'libfoo.so.1', {elfClass: 64, machine: 183})).toBeNull();
      expect(lookupCache(cache, 'libfoo.so.1', {elfClass: 32, machine: 3})).toBeNull();
      expect(lookupCacheEntry(cache, 'libhw.so.1', {...X64, isaLevel: 2})?.hwcapsSubdir).toBe('x86-64-v2');
    }
    // The old layout has no hwcaps information: the first plain entry of the right flags wins.
    expect(lookupCache(loadLdCache(caches.old), 'libfoo.so.1', X64)).toBe(join(dir, 'D2', 'libfoo.so.1'));
  });

  test('the ldconfig -p parser recovers the same entries as the binary reader', () => {
    for (const format of ['new', 'compat'] as const) {
      const binary = loadLdCache(caches[format]);
      const text = execFileSync(LDCONFIG!, ['-p', '-C', caches[format]], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}});
      const parsed = parseLdconfigOutput(text);
      const strip = (c: LdCache['entries']) => c.map(({key, path, flags, hwcapsSubdir, elfClass, arch}) => ({key, path, flags, hwcapsSubdir, elfClass, arch}));
      expect(strip(parsed.entries)).toEqual(strip(binary.entries));
      expect(parsed.generator).toBe(binary.generator);
      const fromText: LdCache = {file: caches[format], format: 'ldconfig-p', entries: parsed.entries, generator: parsed.generator, warnings: []};
      for (const name of ['libfoo.so.1', 'libhw.so.1', 'libc.so.6', 'libzero.so.1']) {
        expect(lookupCache(fromText, name, {...X64, isaLevel: 3})).toBe(lookupCache(binary, name, {...X64, isaLevel: 3}));
      }
    }
  });

  testIf(CAN_MOUNT_NAMESPACE, NEEDS.mountNamespace)('lookups agree with the real loader (dlopen with the test cache bind-mounted over /etc/ld.so.cache)', () => {
    const probe = gcc(dir, 'probe', `
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    void *h = dlopen(argv[i], RTLD_NOW);
    struct link_map *m = 0;
    if (h && dlinfo(h, RTLD_DI_LINKMAP, &m) == 0) printf("%s %s\\n", argv[i], m->l_name);
    else printf("%s -\\n", argv[i]);
  }
  return 0;
}
`, ['-ldl']);
    const names = ['libfoo.so.1', 'libhw.so.1', 'libbar.so.2', 'libnosoname.so', 'libzero.so.1', 'libnothere.so.1', 'libthirty.so.1'];
    for (const format of ['new', 'compat'] as const) {
      const run = spawnSync('unshare', ['-m', 'sh', '-c', 'mount --bind "$1" /etc/ld.so.cache && shift && exec "$@"', 'sh', caches[format], probe, ...names],
        {encoding: 'utf8', env: {PATH: process.env.PATH}});
      expect({status: run.status, stderr: run.stderr, error: run.error}).toEqual({status: 0, stderr: '', error: undefined});
      const real = Object.fromEntries(run.stdout.trim().split('\n').map((l) => l.split(' ')));
      const cache = loadLdCache(caches[format]);
      for (const name of names) expect([name, lookupCache(cache, name, X64) ?? '-']).toEqual([name, real[name]]);
    }
  });

  testIf(existsSync('/etc/ld.so.cache'), 'needs /etc/ld.so.cache (run ldconfig)')('the system cache reads like ldconfig -p prints it', () => {
    const cache = loadLdCache();
    expect(['new', 'compat']).toContain(cache.format);
    expect(cache.entries.map(formatLdconfigLine)).toEqual(ldconfigLines('/etc/ld.so.cache'));
    expect(lookupCache(cache, 'libc.so.6', X64)).toMatch(/\/libc\.so\.6$/);
  });

  test('a missing cache is empty; an unreadable one falls back and then warns, never throws', () => {
    const missing = loadLdCache(join(dir, 'no-such-cache'));
    expect(missing).toMatchObject({format: 'missing', entries: [], warnings: []});
    const garbage = join(dir, 'garbage.cache');
    writeFileSync(garbage, 'this is not a cache at all');
    const g = loadLdCache(garbage);
    expect(g.entries).toEqual([]);
    expect(g.warnings.join('\n')).toMatch(/garbage\.cache: no ld\.so\.cache magic/);
    const full = readFileSync(caches.new);
    const truncated = join(dir, 'truncated.cache');
    writeFileSync(truncated, full.subarray(0, 200));
    const t = loadLdCache(truncated);
    expect(t.entries).toEqual([]);
    expect(t.warnings.join('\n')).toMatch(/more than the file holds/);
    // An entry whose string offset points outside the file.
    const bad = Buffer.from(full);
    bad.writeUInt32LE(0x7fffffff, 48 + 8);
    expect(() => parseCacheBuffer('x', bad)).toThrow(/past the end/);
    // Other byte order: ld.so rejects it, so does the reader.
    const be = Buffer.from(full);
    be[28] = (be[28] & ~3) | 3;
    expect(() => parseCacheBuffer('x', be)).toThrow(/other byte order/);
    // Random corruption of real caches: parsed, or a CacheFormatError, nothing else.
    let seed = 7;
    const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (const format of ['new', 'compat', 'old']) {
      const original = readFileSync(caches[format]);
      for (let i = 0; i < 200; i++) {
        const b = Buffer.from(original);
        // Mostly the headers and the first entries, where offsets and counts live.
        for (let k = 0; k < 3; k++) b[Math.floor(rand() * Math.min(b.length, i % 2 ? 400 : b.length))] = Math.floor(rand() * 256);
        try {
          parseCacheBuffer('fuzz', b);
        } catch (error) {
          expect(error).toBeInstanceOf(CacheFormatError);
        }
      }
    }
    // Fallback through a named ldconfig that does not exist.
    expect(loadLdCache(garbage, {ldconfig: join(dir, 'no-ldconfig')}).warnings.join('\n')).toMatch(/could not read it either/);
  });
});

describe('cache key comparison and ISA levels', () => {
  test('_dl_cache_libcmp equality: digit runs compare numerically', () => {
    expect(normalizeCacheKey('libfoo.so.01')).toBe(normalizeCacheKey('libfoo.so.1'));
    expect(normalizeCacheKey('libfoo.so.10')).not.toBe(normalizeCacheKey('libfoo.so.1'));
    expect(normalizeCacheKey('libcudart.so.12.0')).toBe('libcudart.so.12.0');
    // Leading zeros go wherever a run of digits starts, and only there.
    expect(normalizeCacheKey('libx.so.007.0')).toBe('libx.so.7.0');
    expect(normalizeCacheKey('0lib00x.so.100')).toBe('0lib0x.so.100');
    expect(normalizeCacheKey('lib0.so.0')).toBe('lib0.so.0');
  });

  test('ldconfig -p lines of older glibc (OS ABI) and of other ABIs parse', () => {
    // As glibc 2.17-2.31 print them (print_entry with osversion), e.g. on CentOS 7 and Ubuntu 20.04.
    const text = [
      '1042 libs found in cache `/etc/ld.so.cache\'',
      '\tlibz.so.1 (libc6,x86-64) => /lib64/libz.so.1',
      '\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 2.6.32) => /lib64/libc.so.6',
      '\tlibc.so.6 (libc6, OS ABI: Linux 2.6.32) => /lib/libc.so.6',
      '\tlibm.so.6 (libc6,x86-64, hwcap: 0x0000000000000002, OS ABI: Linux 2.6.32) => /lib64/tls/libm.so.6',
      '\tlibfoo.so.1 (libc6,AArch64) => /usr/lib/aarch64-linux-gnu/libfoo.so.1',
      '\tlibhw.so.1 (libc6,x86-64, hwcap: "x86-64-v3") => /opt/glibc-hwcaps/x86-64-v3/libhw.so.1',
    ].join('\n');
    const {entries} = parseLdconfigOutput(text);
    expect(entries.map((e) => [e.key, e.flags, e.osVersion, e.hwcapsSubdir, e.legacyHwcap])).toEqual([
      ['libz.so.1', 0x0303, 0, null, false],
      ['libc.so.6', 0x0303, 0x020620, null, false],
      ['libc.so.6', 0x0003, 0x020620, null, false],
      ['libm.so.6', 0x0303, 0x020620, null, true],
      ['libfoo.so.1', 0x0a03, 0, null, false],
      ['libhw.so.1', 0x0303, 0, 'x86-64-v3', false],
    ]);
    const cache: LdCache = {file: 'x', format: 'ldconfig-p', entries, generator: null, warnings: []};
    expect(lookupCache(cache, 'libc.so.6', X64)).toBe('/lib64/libc.so.6');
    expect(lookupCache(cache, 'libc.so.6', {elfClass: 32, machine: 3})).toBe('/lib/libc.so.6');
    expect(lookupCache(cache, 'libm.so.6', X64)).toBeNull(); // legacy hwcap entries are skipped (glibc >= 2.37)
    expect(lookupCache(cache, 'libfoo.so.1', {elfClass: 64, machine: 183})).toBe('/usr/lib/aarch64-linux-gnu/libfoo.so.1');
  });

  test('ISA level from CPU flags', () => {
    expect(isaLevelFromFlags(new Set(['sse2']))).toBe(1);
    const v2 = ['cx16', 'lahf_lm', 'popcnt', 'pni', 'sse4_1', 'sse4_2', 'ssse3'];
    const v3 = ['avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave'];
    expect(isaLevelFromFlags(new Set(v2))).toBe(2);
    expect(isaLevelFromFlags(new Set([...v2, ...v3]))).toBe(3);
    expect(isaLevelFromFlags(new Set([...v2, ...v3, 'avx512f', 'avx512bw', 'avx512cd', 'avx512dq', 'avx512vl']))).toBe(4);
    expect(isaLevelFromFlags(new Set([...v3, 'avx512f']))).toBe(1);
    const host = hostX86IsaLevel();
    if (process.arch === 'x64') expect(host).toBeGreaterThanOrEqual(1);
  });
});
