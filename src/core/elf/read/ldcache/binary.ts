/**
 * The binary ld.so.cache layouts (elf-loader-spec §2.1-2.5; glibc elf/dl-cache.c, elf/cache.c):
 * new (`glibc-ld.so.cache1.1`), old (`ld.so-1.7.0`), and compat (old table, then a new one).
 * All integers are in the host's byte order: the cache is only ever used by the machine that wrote it.
 */
import {flagsArch, flagsElfClass} from './flags.js';
import type {LdCache, LdCacheEntry} from './types.js';

const NEW_MAGIC = 'glibc-ld.so.cache1.1';
const OLD_MAGIC = 'ld.so-1.7.0';
const NEW_HEADER = 48;
const NEW_ENTRY = 24;
const OLD_ENTRY = 12;
const EXTENSION_MAGIC = 0xeaa42174;
const TAG_GENERATOR = 0;
const TAG_GLIBC_HWCAPS = 1;
const HOST_LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class CacheFormatError extends Error {
  override name = 'CacheFormatError';
}

export function parseCacheBuffer(file: string, buf: Buffer): LdCache {
  try {
    return parseLayouts(file, buf);
  } catch (error) {
    // Every bounds slip on a hostile file is a format error of that file, never a crash.
    if (error instanceof CacheFormatError) throw error;
    throw new CacheFormatError(`unreadable cache structure (${error instanceof Error ? error.message : String(error)})`);
  }
}

function parseLayouts(file: string, buf: Buffer): LdCache {
  if (startsWith(buf, 0, NEW_MAGIC)) return parseNew(file, buf, 0, 'new');
  if (!startsWith(buf, 0, OLD_MAGIC)) throw new CacheFormatError('no ld.so.cache magic at the start of the file');
  if (buf.length < 16) throw new CacheFormatError('the old-format header is cut off');
  const nlibs = u32(buf, 12);
  const oldEnd = 16 + OLD_ENTRY * nlibs;
  if (oldEnd > buf.length) throw new CacheFormatError(`the old-format header says ${nlibs} entries, more than the file holds`);
  // In the compat layout the new table follows the old one, 8-byte aligned; ld.so prefers it.
  const newStart = (oldEnd + 7) & ~7;
  if (startsWith(buf, newStart, NEW_MAGIC)) return parseNew(file, buf, newStart, 'compat');
  const entries: LdCacheEntry[] = [];
  for (let i = 0; i < nlibs; i++) {
    const at = 16 + i * OLD_ENTRY;
    const flags = i32(buf, at);
    entries.push(entry(flags, cstr(buf, oldEnd, u32(buf, at + 4)), cstr(buf, oldEnd, u32(buf, at + 8)), 0n, 0, null));
  }
  return {file, format: 'old', entries, generator: null, warnings: []};
}

function parseNew(file: string, buf: Buffer, base: number, format: 'new' | 'compat'): LdCache {
  if (buf.length < base + NEW_HEADER) throw new CacheFormatError('the new-format header is cut off');
  const nlibs = u32(buf, base + 20);
  const endian = buf[base + 28] & 3;
  if (endian === 1) throw new CacheFormatError('the header marks the byte order as invalid');
  if ((endian === 2 && !HOST_LITTLE) || (endian === 3 && HOST_LITTLE)) {
    throw new CacheFormatError('the cache was written for the other byte order');
  }
  if (Math.floor((buf.length - base - NEW_HEADER) / NEW_ENTRY) < nlibs) {
    throw new CacheFormatError(`the header says ${nlibs} entries, more than the file holds`);
  }
  const extOffset = u32(buf, base + 32);
  const {generator, subdirs} = extensions(buf, base, extOffset);
  const entries: LdCacheEntry[] = [];
  for (let i = 0; i < nlibs; i++) {
    const at = base + NEW_HEADER + i * NEW_ENTRY;
    const flags = i32(buf, at);
    const hwcap = HOST_LITTLE ? buf.readBigUInt64LE(at + 16) : buf.readBigUInt64BE(at + 16);
    entries.push(entry(flags, cstr(buf, base, u32(buf, at + 4)), cstr(buf, base, u32(buf, at + 8)), hwcap, u32(buf, at + 12), subdirs));
  }
  return {file, format, entries, generator, warnings: []};
}

/** The extension directory: the generator string and the glibc-hwcaps subdirectory names. */
function extensions(buf: Buffer, base: number, offset: number): {generator: string | null; subdirs: string[] | null} {
  if (offset === 0 || offset + 8 > buf.length || u32(buf, offset) !== EXTENSION_MAGIC) return {generator: null, subdirs: null};
  const count = u32(buf, offset + 4);
  if (offset + 8 + count * 16 > buf.length) throw new CacheFormatError('the extension directory is cut off');
  let generator: string | null = null;
  let subdirs: string[] | null = null;
  for (let i = 0; i < count; i++) {
    const at = offset + 8 + i * 16;
    const tag = u32(buf, at);
    const secOff = u32(buf, at + 8);
    const size = u32(buf, at + 12);
    if (secOff + size > buf.length) throw new CacheFormatError(`extension section ${tag} lies past the end of the file`);
    if (tag === TAG_GENERATOR) generator = buf.toString('utf8', secOff, secOff + size).replace(/\0.*$/s, '');
    if (tag === TAG_GLIBC_HWCAPS) {
      // ldconfig writes these string offsets relative to the new header, but ld.so (and `ldconfig -p`)
      // read them relative to the file start. In compat caches the names ld.so sees are therefore
      // garbage that matches no active subdirectory, and it never picks those entries [verified with
      // dlopen]. Model what ld.so reads; an offset outside the file gives a name that matches nothing.
      subdirs = [];
      for (let k = 0; k + 4 <= size; k += 4) {
        const off = u32(buf, secOff + k);
        subdirs.push(off < buf.length && buf.indexOf(0, off) >= 0 ? cstr(buf, 0, off) : '');
      }
    }
  }
  return {generator, subdirs};
}

function entry(flags: number, key: string, path: string, hwcap: bigint, osVersion: number, subdirs: string[] | null): LdCacheEntry {
  const extension = ((hwcap >> 32n) & ~0x3ffn) === 0x40000000n;
  let hwcapsSubdir: string | null = null;
  if (extension) {
    const index = Number(hwcap & 0xffffffffn);
    // An index the cache does not list: ld.so cannot match it to an active subdirectory either.
    hwcapsSubdir = subdirs?.[index] ?? '';
  }
  return {
    key, path, flags,
    elfClass: flagsElfClass(flags),
    arch: flagsArch(flags),
    hwcap: `0x${hwcap.toString(16)}`,
    hwcapsSubdir,
    isaLevel: extension ? Number((hwcap >> 32n) & 0x3ffn) : 0,
    legacyHwcap: !extension && hwcap !== 0n,
    osVersion,
  };
}

function startsWith(buf: Buffer, at: number, magic: string): boolean {
  return buf.length >= at + magic.length && buf.toString('latin1', at, at + magic.length) === magic;
}

const u32 = (buf: Buffer, at: number): number => (HOST_LITTLE ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
const i32 = (buf: Buffer, at: number): number => (HOST_LITTLE ? buf.readInt32LE(at) : buf.readInt32BE(at));

function cstr(buf: Buffer, base: number, offset: number): string {
  const start = base + offset;
  if (start >= buf.length) throw new CacheFormatError(`a string offset (${offset}) points past the end of the file`);
  const nul = buf.indexOf(0, start);
  if (nul < 0) throw new CacheFormatError(`the string at offset ${offset} is not NUL-terminated`);
  return buf.toString('utf8', start, nul);
}
